package coordinator_test

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.uber.org/goleak"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/fleettest"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/worker"
)

// TestComponentsStartNothingUntilRun: the endpoint (with its announcer,
// directory watch and sweeper) and a worker's run watch start no
// goroutine when they are made; their Run serves (the endpoint accepts
// a gRPC connection, the watch fills its table) and, once its context
// ends, returns only after every goroutine it started has ended.
func TestComponentsStartNothingUntilRun(t *testing.T) {
	ns := fleettest.NATS(t)
	nc, err := nats.Connect(ns.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if _, err := queue.RunsKV(ctx, js, 0); err != nil {
		t.Fatal(err)
	}
	before := goleak.IgnoreCurrent()

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ep, err := coordinator.NewEndpoint(ctx, coordinator.EndpointOptions{NC: nc, Listener: ln})
	if err != nil {
		t.Fatal(err)
	}
	watch, err := worker.WatchRuns(ctx, nc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := goleak.Find(before); err != nil {
		t.Fatalf("NewEndpoint and WatchRuns started goroutines: %v", err)
	}

	rctx, stop := context.WithCancel(ctx)
	epDone, watchDone := make(chan error, 1), make(chan error, 1)
	go func() { epDone <- ep.Run(rctx) }()
	go func() { watchDone <- watch.Run(rctx) }()
	select {
	case <-watch.Table.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("the run watch did not load the directory in 30 s")
	}
	conn, err := net.DialTimeout("tcp", ep.Addr(), 5*time.Second)
	if err != nil {
		t.Fatalf("dial the running endpoint: %v", err)
	}
	_ = conn.Close()
	if err := ep.Run(rctx); err == nil {
		t.Error("a second Run of a running endpoint was accepted")
	}

	stop()
	for name, ch := range map[string]chan error{"endpoint": epDone, "run watch": watchDone} {
		select {
		case err := <-ch:
			if err != nil {
				t.Errorf("%s Run: %v", name, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s Run still running 30 s after its context ended", name)
		}
	}
	// Run has returned: nothing it started may still run. The embedded
	// server's own loops for a consumer a component used end when the
	// server reaps that consumer, on the server's schedule: they are the
	// server's goroutines, not the component's.
	serverConsumer := "github.com/nats-io/nats-server/v2/server.(*consumer).setLeader."
	if err := goleak.Find(before,
		goleak.IgnoreAnyFunction(serverConsumer+"func2"),
		goleak.IgnoreAnyFunction(serverConsumer+"func3"),
		goleak.IgnoreAnyFunction(serverConsumer+"func4")); err != nil {
		t.Fatalf("goroutines left after Run returned: %v", err)
	}
	if err := ep.Close(); err != nil {
		t.Errorf("Close after Run: %v", err)
	}
}

// TestEndpointClosedWithoutRunning: an endpoint that never ran releases
// its listener on Close, and Run after Close is refused.
func TestEndpointClosedWithoutRunning(t *testing.T) {
	ns := fleettest.NATS(t)
	nc, err := nats.Connect(ns.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ep, err := coordinator.NewEndpoint(t.Context(), coordinator.EndpointOptions{NC: nc, Listener: ln})
	if err != nil {
		t.Fatal(err)
	}
	if err := ep.Close(); err != nil {
		t.Fatal(err)
	}
	if again, err := net.Listen("tcp", ep.Addr()); err != nil {
		t.Errorf("the listener of a closed endpoint is still held: %v", err)
	} else {
		_ = again.Close()
	}
	if err := ep.Run(t.Context()); err == nil {
		t.Error("Run after Close was accepted")
	}
}
