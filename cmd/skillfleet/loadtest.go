package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/pkg/queue"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// loadtestReport is what `skillfleet loadtest` prints as JSON.
type loadtestReport struct {
	Tasks          int     `json:"tasks"`
	Recorded       int     `json:"recorded"`
	MaxRecordCount int     `json:"max_record_count"`
	Failed         int     `json:"failed"`
	Seconds        float64 `json:"seconds"`
	TasksPerSecond float64 `json:"tasks_per_second"`
}

func runLoadtest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("loadtest", "loadtest --nats URL [--tasks N] [flags]", stderr)
	natsURL := fs.String("nats", "", "NATS URL (required)")
	grpcAddr := fs.String("grpc-addr", "127.0.0.1:0", "address the coordinator's gRPC service listens on")
	tasks := fs.Int("tasks", 2000, "no-op tasks to dispatch")
	taskMS := fs.Int("task-ms", 0, "how long each task sleeps on the worker")
	out := fs.String("out", "", "run directory for the result journal (default: a temp dir)")
	runID := fs.String("run-id", "loadtest", "run id (task id prefix)")
	ackWait := fs.Duration("ack-wait", 5*time.Second, "consumer AckWait: how soon a dead worker's task is redelivered")
	logLevel := fs.String("log-level", "warn", "log level")
	replicas := fs.Int("nats-replicas", 0, "servers of a NATS cluster that keep the task stream and run directory (0 = keep the current count, 1 for new ones)")
	if help, err := parse(fs, args); help || err != nil {
		return err
	}
	if *natsURL == "" {
		return usageError{errors.New("loadtest: --nats is required")}
	}
	if err := queue.CheckReplicas(*replicas, "--nats-replicas"); err != nil {
		return usageError{err}
	}
	log, err := newLogger(stderr, "text", *logLevel)
	if err != nil {
		return err
	}
	dir := *out
	if dir == "" {
		d, err := os.MkdirTemp("", "skillfleet-loadtest-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	nc, err := queue.Connect(ctx, *natsURL, queue.ConnectOptions{Name: "skillfleet-loadtest", Logger: log})
	if err != nil {
		return err
	}
	defer nc.Close()
	ln, err := net.Listen("tcp", *grpcAddr)
	if err != nil {
		return fmt.Errorf("listen %s: %w", *grpcAddr, err)
	}
	var mu sync.Mutex
	counts := map[string]int{}
	hub, err := coordinator.NewHub(ctx, coordinator.HubOptions{
		Logger: log, NC: nc, RunDir: dir, RunID: *runID, GRPCListener: ln,
		Consumer: queue.ConsumerOptions{AckWait: *ackWait, MaxDeliver: 10}, Replicas: *replicas,
		OnResult: func(r *pb.Result) {
			mu.Lock()
			counts[r.GetTaskId()]++
			mu.Unlock()
		},
	})
	if err != nil {
		return err
	}
	hctx, hstop := context.WithCancel(context.WithoutCancel(ctx))
	hdone := make(chan error, 1)
	go func() { hdone <- hub.Run(hctx) }()
	defer func() { hstop(); <-hdone }()
	fmt.Fprintf(stdout, "coordinator listening on %s\n", hub.Addr())
	_ = filepath.Join

	ts := make([]*pb.Task, *tasks)
	for i := range ts {
		ts[i] = &pb.Task{Id: fmt.Sprintf("%s/noop/%06d", *runID, i), RunId: *runID, Stage: "loadtest",
			Kind: &pb.Task_Noop{Noop: &pb.NoopTask{SleepMs: int64(*taskMS)}}}
	}
	start := time.Now()
	futs, err := hub.D.Submit(ctx, ts...)
	if err != nil {
		return err
	}
	rep := loadtestReport{Tasks: *tasks}
	for _, f := range futs {
		r, err := f.Wait(ctx)
		if err != nil {
			return err
		}
		if r.GetOutcome() != pb.Outcome_OUTCOME_OK {
			rep.Failed++
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	rep.TasksPerSecond = float64(*tasks) / rep.Seconds
	mu.Lock()
	rep.Recorded = len(counts)
	for _, c := range counts {
		rep.MaxRecordCount = max(rep.MaxRecordCount, c)
	}
	mu.Unlock()
	b, _ := json.Marshal(rep)
	fmt.Fprintln(stdout, string(b))
	return nil
}
