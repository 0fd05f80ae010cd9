package memdispatch

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// gated runs a task only when its id's channel is closed, counting runs.
type gated struct {
	mu      sync.Mutex
	gates   map[string]chan struct{}
	runs    atomic.Int32
	started []string
}

func (g *gated) gate(id string) chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.gates[id] == nil {
		g.gates[id] = make(chan struct{})
	}
	return g.gates[id]
}

func (g *gated) Handle(ctx context.Context, t *pb.Task) *pb.Result {
	g.mu.Lock()
	g.started = append(g.started, t.GetId())
	g.mu.Unlock()
	g.runs.Add(1)
	<-g.gate(t.GetId()) // runs to its end even when cancelled, like a call in flight
	return &pb.Result{Outcome: pb.Outcome_OUTCOME_OK, Usage: &pb.Usage{Calls: 1}}
}

func task(id string) *pb.Task { return &pb.Task{Id: id} }

func wait(t *testing.T, f interface {
	Wait(context.Context) (*pb.Result, error)
}) *pb.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	r, err := f.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// A task id in flight shares its future; a recorded one resolves at once;
// neither runs again.
func TestSubmitRunsEachIDOnce(t *testing.T) {
	h := &gated{gates: map[string]chan struct{}{}}
	d := New(h, 4)
	a, err := d.Submit(t.Context(), task("r/a"), task("r/a"))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := d.Submit(t.Context(), task("r/a"))
	if a[0] != a[1] || a[0] != b[0] {
		t.Fatal("the same id in flight got different futures")
	}
	close(h.gate("r/a"))
	if r := wait(t, b[0]); r.GetOutcome() != pb.Outcome_OUTCOME_OK || r.GetTaskId() != "r/a" {
		t.Fatalf("result %v", r)
	}
	c, _ := d.Submit(t.Context(), task("r/a"))
	select {
	case <-c[0].Done():
	default:
		t.Fatal("a recorded task did not resolve at once")
	}
	if n := h.runs.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1", n)
	}
	if r, ok := d.Lookup("r/a"); !ok || r.GetOutcome() != pb.Outcome_OUTCOME_OK {
		t.Errorf("Lookup = %v %v", r, ok)
	}
}

// A cancelled queued task never runs; a cancelled running task resolves
// as cancelled at once, and its result (its calls were made) is recorded
// and handed to late when it finishes.
func TestCancelQueuedAndRunning(t *testing.T) {
	h := &gated{gates: map[string]chan struct{}{}}
	d := New(h, 1)
	futs, _ := d.Submit(t.Context(), task("r/a"), task("r/b"))
	deadline := time.Now().Add(5 * time.Second)
	for h.runs.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond) // bounded wait for one task to take the slot
	}
	// Either task may take the only slot first; the other stays queued.
	h.mu.Lock()
	if len(h.started) != 1 {
		h.mu.Unlock()
		t.Fatalf("started %v, want one task running", h.started)
	}
	running := h.started[0]
	h.mu.Unlock()
	queued := "r/a"
	if running == "r/a" {
		queued = "r/b"
	}
	lateC := make(chan *pb.Result, 2)
	d.CancelWith(t.Context(), func(r *pb.Result) { lateC <- r }, "r/a", "r/b")
	for _, f := range futs {
		if r := wait(t, f); r.GetOutcome() != pb.Outcome_OUTCOME_CANCELLED {
			t.Fatalf("%s: outcome %v, want cancelled", r.GetTaskId(), r.GetOutcome())
		}
	}
	close(h.gate(running))
	select {
	case r := <-lateC:
		if r.GetTaskId() != running || r.GetUsage().GetCalls() != 1 {
			t.Errorf("late result %v", r)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the running task's result never reached late")
	}
	if _, ok := d.Lookup(running); !ok {
		t.Error("the finished cancelled task's result was not recorded")
	}
	close(h.gate(queued))
	time.Sleep(20 * time.Millisecond) // give a wrongly started task time to show
	if n := h.runs.Load(); n != 1 {
		t.Errorf("handler ran %d times, want 1 (the queued task was cancelled)", n)
	}
	if _, ok := d.Lookup(queued); ok {
		t.Error("a task cancelled in the queue has a result")
	}
}
