// Package loadtest is `skillfleet loadtest`: it dispatches no-op tasks
// through the queue to whatever workers serve it, with a real hub, and
// measures how fast they come back and how often each was recorded.
package loadtest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"time"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/pkg/queue"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Config is a load test.
type Config struct {
	// NATSURL is the fleet's NATS; Replicas keeps the task stream and run
	// directory on that many servers (0 = their current count).
	NATSURL  string
	Replicas int
	// GRPCAddr is where the test's coordinator listens.
	GRPCAddr string
	// Tasks no-op tasks, each sleeping TaskMS on its worker.
	Tasks, TaskMS int
	// Dir holds the result journal (default: a temp dir, removed after).
	Dir   string
	RunID string
	// AckWait is the consumers' AckWait: how soon a dead worker's task is
	// delivered again.
	AckWait time.Duration
	Logger  *slog.Logger
}

// Report is what a load test measured.
type Report struct {
	Tasks          int     `json:"tasks"`
	Recorded       int     `json:"recorded"`
	MaxRecordCount int     `json:"max_record_count"`
	Failed         int     `json:"failed"`
	Seconds        float64 `json:"seconds"`
	TasksPerSecond float64 `json:"tasks_per_second"`
}

// Run runs the load test, writing the coordinator's address to w once it
// listens.
func Run(ctx context.Context, c Config, w io.Writer) (Report, error) {
	log := c.Logger
	dir := c.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "skillfleet-loadtest-")
		if err != nil {
			return Report{}, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	nc, err := queue.Connect(ctx, c.NATSURL, queue.ConnectOptions{Name: "skillfleet-loadtest", Logger: log})
	if err != nil {
		return Report{}, err
	}
	defer nc.Close()
	ln, err := net.Listen("tcp", c.GRPCAddr)
	if err != nil {
		return Report{}, fmt.Errorf("listen %s: %w", c.GRPCAddr, err)
	}
	var mu sync.Mutex
	counts := map[string]int{}
	hub, err := coordinator.NewHub(ctx, coordinator.HubOptions{
		Logger: log, NC: nc, RunDir: dir, RunID: c.RunID, GRPCListener: ln,
		Consumer: queue.ConsumerOptions{AckWait: c.AckWait, MaxDeliver: 10}, Replicas: c.Replicas,
		OnResult: func(r *pb.Result) {
			mu.Lock()
			counts[r.GetTaskId()]++
			mu.Unlock()
		},
	})
	if err != nil {
		return Report{}, err
	}
	hctx, hstop := context.WithCancel(context.WithoutCancel(ctx))
	hdone := make(chan error, 1)
	go func() { hdone <- hub.Run(hctx) }()
	defer func() { hstop(); <-hdone }()
	fmt.Fprintf(w, "coordinator listening on %s\n", hub.Addr())

	ts := make([]*pb.Task, c.Tasks)
	for i := range ts {
		ts[i] = &pb.Task{Id: fmt.Sprintf("%s/noop/%06d", c.RunID, i), RunId: c.RunID, Stage: "loadtest",
			Kind: &pb.Task_Noop{Noop: &pb.NoopTask{SleepMs: int64(c.TaskMS)}}}
	}
	start := time.Now()
	futs, err := hub.D.Submit(ctx, ts...)
	if err != nil {
		return Report{}, err
	}
	rep := Report{Tasks: c.Tasks}
	for _, f := range futs {
		r, err := f.Wait(ctx)
		if err != nil {
			return Report{}, err
		}
		if r.GetOutcome() != pb.Outcome_OUTCOME_OK {
			rep.Failed++
		}
	}
	rep.Seconds = time.Since(start).Seconds()
	rep.TasksPerSecond = float64(c.Tasks) / rep.Seconds
	mu.Lock()
	rep.Recorded = len(counts)
	for _, c := range counts {
		rep.MaxRecordCount = max(rep.MaxRecordCount, c)
	}
	mu.Unlock()
	return rep, nil
}
