package coordinator

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
)

// TestQueueDepthIsAskedOncePerProcess: however many runs of a process
// sample the queue depth for their meters, the endpoint asks the stream
// at most once per sampling interval, and asks again once it has passed.
func TestQueueDepthIsAskedOncePerProcess(t *testing.T) {
	ctx := context.Background()
	ns := queuetest.Start(t)
	nc, err := nats.Connect(ns.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := queue.EnsureStream(ctx, js, queue.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var e Endpoint
	const runs, every = 50, time.Hour
	before := nc.Stats().OutMsgs
	for range runs {
		if n, err := e.queueDepth(ctx, stream, every); err != nil || n != 0 {
			t.Fatalf("queue depth = %d, %v; want 0", n, err)
		}
	}
	if sent := nc.Stats().OutMsgs - before; sent != 1 {
		t.Errorf("%d runs sampling the queue depth sent %d requests, want 1", runs, sent)
	}
	if _, err := js.Publish(ctx, queue.TaskSubject(queue.Classes[0], "noop", "r"), []byte("x")); err != nil {
		t.Fatal(err)
	}
	if n, err := e.queueDepth(ctx, stream, 0); err != nil || n != 1 {
		t.Errorf("after the interval the queue depth = %d, %v; want 1", n, err)
	}
}
