// Package fleettest starts an in-process fleet for tests: a real embedded
// nats-server, the coordinator's hub (NATS JetStream out, gRPC reports in)
// and workers running a handler — the path production takes, with every
// part real. [Runner] trains a preset on the sim model either that way or,
// for tests of the training loop's decisions that do not need that path,
// on [memdispatch] (the worker's executor in-process, no NATS or gRPC).
//
// [memdispatch]: github.com/skillfleet/skillfleet/internal/memdispatch
package fleettest

import (
	"context"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/registry"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/worker"
)

// NATS starts an embedded nats-server with JetStream that stops when the
// test ends.
func NATS(t testing.TB) *queue.Embedded { return queuetest.Start(t) }

// Hub is a running hub; Stop ends it (also at test cleanup).
type Hub struct {
	*coordinator.Hub
	cancel context.CancelFunc
	done   chan error
	once   sync.Once
}

// Stop stops the hub and waits for it (idempotent).
func (h *Hub) Stop() {
	h.once.Do(func() {
		h.cancel()
		<-h.done //nolint:errcheck // after cancel, Run returns the cancellation
	})
}

// StartHub runs a hub on ns. o.NC and o.GRPCListener are filled in when
// unset (a loopback listener on a free port); o.NoSync is set.
func StartHub(t testing.TB, ns *queue.Embedded, o coordinator.HubOptions) *Hub {
	t.Helper()
	if o.NC == nil {
		nc, err := nats.Connect(ns.URL())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(nc.Close)
		o.NC = nc
	}
	if o.GRPCListener == nil {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		o.GRPCListener = ln
	}
	o.NoSync = true
	ctx, cancel := context.WithCancel(context.Background())
	hub, err := coordinator.NewHub(ctx, o)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	h := &Hub{Hub: hub, cancel: cancel, done: make(chan error, 1)}
	go func() { h.done <- hub.Run(ctx) }()
	t.Cleanup(h.Stop)
	return h
}

// StartWorker runs a worker on ns that reports to the coordinator at addr
// and runs tasks with h. It returns a stop function (also run at cleanup).
// cfg.DrainTimeout defaults to one second.
func StartWorker(t testing.TB, ns *queue.Embedded, addr string, cfg worker.Config, h worker.Handler) (stop func()) {
	t.Helper()
	nc, err := nats.Connect(ns.URL())
	if err != nil {
		t.Fatal(err)
	}
	cc, err := worker.Dial(addr)
	if err != nil {
		nc.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cons, err := worker.Consumers(ctx, nc)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if cfg.DrainTimeout == 0 {
		cfg.DrainTimeout = time.Second
	}
	w := worker.New(cfg, worker.Deps{NC: nc, Consumers: cons, Client: pb.NewCoordinatorClient(cc), Handler: h})
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-done
			_ = cc.Close()
			nc.Close()
		})
	}
	t.Cleanup(stop)
	return stop
}

// Executor is the worker's real task handler with model m for every role,
// the registry's benchmarks and the built-in prompts; skills are fetched
// from the coordinator the task came from.
func Executor(m llm.Model) worker.Handler {
	return worker.NewExecutor(worker.ExecutorDeps{Prompts: prompts.New(nil),
		NewModel: func(context.Context, *pb.ModelSpec) (llm.Model, error) { return m, nil },
		NewEnv:   func(name string, c []byte) (bench.Env, error) { return registry.New(name, c) }})
}
