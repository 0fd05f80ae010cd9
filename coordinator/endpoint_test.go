package coordinator_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/grpc"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/coordinator/dispatch"
	"github.com/skillfleet/skillfleet/internal/fleettest"
	"github.com/skillfleet/skillfleet/pkg/queue"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/worker"
)

// countingListener counts the connections it accepted.
type countingListener struct {
	net.Listener
	accepted atomic.Int32
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
	}
	return c, err
}

// startDirectoryWorker runs a worker that finds each task's coordinator
// in the run directory, as `skillfleet worker --nats` does.
func startDirectoryWorker(t *testing.T, ns *queue.Embedded, h worker.Handler) {
	t.Helper()
	nc, err := nats.Connect(ns.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	ctx, cancel := context.WithCancel(context.Background())
	cons, err := worker.Consumers(ctx, nc)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	runs, err := worker.WatchRuns(ctx, nc, 0)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	watched := make(chan struct{})
	go func() { _ = runs.Run(ctx); close(watched) }()
	w := worker.New(worker.Config{Concurrency: 8, Heartbeat: 500 * time.Millisecond, DrainTimeout: time.Second}, worker.Deps{
		NC: nc, Consumers: cons, Handler: h,
		Coordinators: worker.CoordinatorsConfig{Runs: runs.Table, Dial: func(addr string) (*grpc.ClientConn, error) { return worker.Dial(addr) }},
	})
	done := make(chan struct{})
	go func() { _ = w.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done; <-watched })
}

// TestOneEndpointServesEveryRunOfAProcess: the runs of one coordinator
// process share one gRPC endpoint and one run directory entry. A worker
// serving all of them holds one connection to the process, each result
// reaches its own run's hub, and the directory carries one refresh per
// interval for the process, not one per run.
func TestOneEndpointServesEveryRunOfAProcess(t *testing.T) {
	const runs, tasks = 8, 40
	ns := fleettest.NATS(t)
	nc, err := nats.Connect(ns.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &countingListener{Listener: raw}
	ep, err := coordinator.NewEndpoint(t.Context(), coordinator.EndpointOptions{NC: nc, Listener: ln})
	if err != nil {
		t.Fatal(err)
	}
	// Stopped after the hubs (cleanups run last in, first out): Close
	// ends Run and waits for it.
	go func() { _ = ep.Run(context.Background()) }()
	t.Cleanup(func() { _ = ep.Close() })
	hubs := make([]*fleettest.Hub, runs)
	foreign := make([]atomic.Int32, runs)
	for i := range hubs {
		run := fmt.Sprintf("run%d", i)
		hubs[i] = fleettest.StartHub(t, ns, coordinator.HubOptions{
			RunDir: t.TempDir(), RunID: run, Endpoint: ep,
			Consumer: queue.ConsumerOptions{AckWait: 2 * time.Second, MaxDeliver: 5},
			OnResult: func(r *pb.Result) {
				if !strings.HasPrefix(r.GetTaskId(), run+"/") {
					foreign[i].Add(1)
				}
			},
		})
	}
	if ep.Runs() != runs {
		t.Fatalf("endpoint serves %d runs, want %d", ep.Runs(), runs)
	}

	// The directory's traffic while every run is live: what each of its
	// watchers receives.
	var kvMsgs atomic.Int32
	sub, err := nc.Subscribe("$KV."+queue.RunsBucket+".>", func(*nats.Msg) { kvMsgs.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	window := 3 * queue.AnnounceEvery
	time.Sleep(window)
	_ = sub.Unsubscribe()
	if n := kvMsgs.Load(); n > 5 {
		t.Errorf("run directory carried %d messages in %s for one process of %d runs; want at most 5 (one refresh per %s)", n, window, runs, queue.AnnounceEvery)
	}

	startDirectoryWorker(t, ns, noop)
	var futs []*dispatch.Future
	for i, h := range hubs {
		ts := make([]*pb.Task, tasks)
		for j := range ts {
			run := fmt.Sprintf("run%d", i)
			ts[j] = &pb.Task{Id: fmt.Sprintf("%s/noop/%05d", run, j), RunId: run, Kind: &pb.Task_Noop{Noop: &pb.NoopTask{}}}
		}
		f, err := h.D.Submit(t.Context(), ts...)
		if err != nil {
			t.Fatal(err)
		}
		futs = append(futs, f...)
	}
	waitAll(t, futs)
	for i := range foreign {
		if n := foreign[i].Load(); n > 0 {
			t.Errorf("run%d's hub recorded %d results of other runs", i, n)
		}
	}
	if n := ln.accepted.Load(); n != 1 {
		t.Errorf("the worker opened %d connections to a process serving %d runs; want 1", n, runs)
	}
}
