package coordinator_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/fleettest"
	"github.com/skillfleet/skillfleet/pkg/objstore"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/worker"
)

// TestLargeTaskAndResultTravel: on a NATS server with the default
// max_payload (1 MB), a slow-update task of 5 MB reaches a worker whole
// (its body through the object store) and its 5 MB reply comes back over
// gRPC; a small task beside it goes inline; once the task is recorded its
// body leaves the object store.
func TestLargeTaskAndResultTravel(t *testing.T) {
	const size = 5 << 20
	ns := queuetest.StartWith(t, queue.EmbeddedOptions{MaxPayload: -1})
	nc, err := nats.Connect(ns.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if max := nc.MaxPayload(); max >= size {
		t.Fatalf("server max_payload is %d: the test needs one below the task's %d bytes", max, size)
	}
	h := fleettest.StartHub(t, ns, coordinator.HubOptions{
		RunDir: t.TempDir(), RunID: "big",
		Consumer: queue.ConsumerOptions{AckWait: 5 * time.Second, MaxDeliver: 5},
	})
	reply := bytes.Repeat([]byte("r"), size)
	fleettest.StartWorker(t, ns, h.Addr(), worker.Config{Concurrency: 2, OptimizerConcurrency: 2},
		worker.HandlerFunc(func(_ context.Context, task *pb.Task) *pb.Result {
			res := &pb.Result{TaskId: task.GetId(), Outcome: pb.Outcome_OUTCOME_OK}
			if su := task.GetSlowUpdate(); su != nil {
				sum := sha256.Sum256(su.GetPayload())
				res.Body = &pb.Result_Optimizer{Optimizer: &pb.OptimizerResult{Content: string(reply), Json: []byte(hex.EncodeToString(sum[:]))}}
			}
			return res
		}))

	payload := make([]byte, size)
	_, _ = rand.Read(payload)
	want := sha256.Sum256(payload)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	futs, err := h.D.Submit(ctx,
		&pb.Task{Id: "big/slow/0", RunId: "big", Kind: &pb.Task_SlowUpdate{SlowUpdate: &pb.OptimizerTask{Prompt: "slow_update", Payload: payload}}},
		&pb.Task{Id: "big/noop/0", RunId: "big", Kind: &pb.Task_Noop{Noop: &pb.NoopTask{}}},
	)
	if err != nil {
		t.Fatalf("submit a %d-byte task: %v", size, err)
	}
	for _, f := range futs {
		res, err := f.Wait(ctx)
		if err != nil {
			t.Fatalf("task %s: %v", f.ID(), err)
		}
		if res.GetOutcome() != pb.Outcome_OUTCOME_OK {
			t.Fatalf("task %s: outcome %v, error %q", f.ID(), res.GetOutcome(), res.GetError())
		}
	}
	got := futs[0].Result().GetOptimizer()
	if string(got.GetJson()) != hex.EncodeToString(want[:]) {
		t.Fatalf("the worker saw a task body with sha256 %s, want %s", got.GetJson(), hex.EncodeToString(want[:]))
	}
	if len(got.GetContent()) != size {
		t.Fatalf("the reply came back with %d bytes, want %d", len(got.GetContent()), size)
	}

	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	store := objstore.New(js, 0)
	deadline := time.Now().Add(30 * time.Second)
	for {
		names, err := store.Names(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(names) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the object store still holds %v 30 s after the task was recorded", names)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
