package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/skillfleet/skillfleet/internal/loadtest"
	"github.com/skillfleet/skillfleet/pkg/queue"
)

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
	rep, err := loadtest.Run(ctx, loadtest.Config{NATSURL: *natsURL, Replicas: *replicas, GRPCAddr: *grpcAddr, Tasks: *tasks, TaskMS: *taskMS,
		Dir: *out, RunID: *runID, AckWait: *ackWait, Logger: log}, stdout)
	if err != nil {
		return err
	}
	b, err := json.Marshal(rep)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, string(b))
	return nil
}
