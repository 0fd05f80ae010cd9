package trainer

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// cancelRecorder is a Dispatcher that records CancelWith calls.
type cancelRecorder struct {
	Dispatcher
	mu        sync.Mutex
	cancelled []string
}

// CancelWith reports every task as sent: each may still report.
func (c *cancelRecorder) CancelWith(_ context.Context, _ func(*pb.Result), ids ...string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cancelled = append(c.cancelled, ids...)
	return ids
}

// resolved is a Future whose result is in.
type resolved struct{ res *pb.Result }

func (r resolved) Done() <-chan struct{} {
	ch := make(chan struct{})
	close(ch)
	return ch
}
func (r resolved) Result() *pb.Result                       { return r.res }
func (r resolved) Wait(context.Context) (*pb.Result, error) { return r.res, nil }

// A copy its wave withdrew along with its task (a gate's early stop) goes
// to the wave's own cancel and accounting: the hedger neither cancels it
// again nor waits for its report at the run's end (a lingering one held
// the end of a run for up to 90 s). A copy of a task withdrawn otherwise
// is still the hedger's to cancel and wait for.
func TestWaveWithdrawnCopyIsNotWaitedFor(t *testing.T) {
	for _, waveTook := range []bool{true, false} {
		d := &cancelRecorder{}
		h := newHedger(&Trainer{now: time.Now, d: d}, HedgePolicy{}, nil)
		w := &hedgeWave{h: h, ctx: context.Background()}
		e := &hedgeEntry{task: &pb.Task{Id: "run/rollout/a"}, hedged: true}
		w.entries = []*hedgeEntry{e}
		if waveTook {
			if got := w.copyIDs([]string{"run/rollout/a"}); len(got) != 1 || got[0] != "run/rollout/a~hedge" {
				t.Fatalf("copyIDs = %v, want the copy's id", got)
			}
		}
		f := &hedgedFuture{w: w, e: e, done: make(chan struct{}), added: make(chan struct{})}
		cancelled := &pb.Result{TaskId: "run/rollout/a", Outcome: pb.Outcome_OUTCOME_CANCELLED}
		f.finish(cancelled, "run/rollout/a~hedge", resolved{&pb.Result{TaskId: "run/rollout/a~hedge", Outcome: pb.Outcome_OUTCOME_CANCELLED}})
		if waiting := h.t.gone.pending("run/rollout/a~hedge"); waiting == waveTook {
			t.Errorf("wave took the copy %v: the hedger waits for it %v", waveTook, waiting)
		}
		if withdrew := len(d.cancelled) > 0; withdrew == waveTook {
			t.Errorf("wave took the copy %v: the hedger cancelled it too (%v)", waveTook, d.cancelled)
		}
	}
}

// abandonRecorder is a Dispatcher that records Abandon calls and, when
// report is set, has the abandoned attempt report at once (as a worker
// that ends the call on the notice does).
type abandonRecorder struct {
	cancelRecorder
	tr        *Trainer
	report    bool
	abandoned []string
	at        time.Duration
	start     time.Time
}

func (a *abandonRecorder) Abandon(ids ...string) {
	a.mu.Lock()
	a.abandoned = append(a.abandoned, ids...)
	a.at = time.Since(a.start)
	a.mu.Unlock()
	if a.report {
		for _, id := range ids {
			a.tr.gone.done(id, time.Now())
		}
	}
}

// pending is a Future whose result never comes: a stalled call.
type pending struct{}

func (pending) Done() <-chan struct{}                        { return nil }
func (pending) Result() *pb.Result                           { return nil }
func (pending) Wait(ctx context.Context) (*pb.Result, error) { <-ctx.Done(); return nil, ctx.Err() }

// submitRecorder is a Dispatcher that records when tasks are submitted;
// their results never come.
type submitRecorder struct {
	Dispatcher
	mu    sync.Mutex
	start time.Time
	ids   []string
	at    []time.Duration
}

// TargetSlots is 0: the test's one-task wave runs at once.
func (s *submitRecorder) TargetSlots() int { return 0 }

func (s *submitRecorder) Submit(_ context.Context, tasks ...*pb.Task) ([]Future, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	futs := make([]Future, len(tasks))
	for i, task := range tasks {
		s.ids = append(s.ids, task.GetId())
		s.at = append(s.at, time.Since(s.start))
		futs[i] = pending{}
	}
	return futs, nil
}

// With the default policy, a stalled task of a wave whose model answers
// in about 100 ms is copied once it has been out twice the stage's
// observed times, about 200 ms, and not at the 500 ms the floor used to
// impose: a stalled wave of such a model waits a few calls' time, not
// five.
func TestWaveHedgeCopiesAStalledFastCallSoon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, w := fastWave(t, "rollout", 1)
		w.track([]*pb.Task{{Id: "run/rollout/a"}}, []Future{pending{}})
		time.Sleep(time.Second)
		synctest.Wait()
		d.mu.Lock()
		defer d.mu.Unlock()
		if len(d.ids) != 1 || d.ids[0] != "run/rollout/a"+hedgeSuffix {
			t.Fatalf("submitted %v, want one copy of the stalled task", d.ids)
		}
		// Two medians (200 ms), seen at the watch's next tick.
		if d.at[0] < 200*time.Millisecond || d.at[0] > 200*time.Millisecond+hedgeTick {
			t.Errorf("copied after %v, want 200ms to %v", d.at[0], 200*time.Millisecond+hedgeTick)
		}
	})
}

// A windowed wave (an early-stoppable gate) with tasks still to submit
// waits for no task in particular: its straggler is not copied, however
// old, until the wave has submitted its last task.
func TestWindowedWaveHedgesOnlyOnceAllIsSubmitted(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		d, w := fastWave(t, "gate", 200)
		w.pending(190)
		w.track([]*pb.Task{{Id: "run/rollout/a"}}, []Future{pending{}})
		time.Sleep(5 * time.Second)
		synctest.Wait()
		d.mu.Lock()
		early := len(d.ids)
		d.mu.Unlock()
		if early != 0 {
			t.Fatalf("copied %d tasks while the wave still had tasks to submit", early)
		}
		w.pending(0)
		time.Sleep(time.Second)
		synctest.Wait()
		d.mu.Lock()
		defer d.mu.Unlock()
		if len(d.ids) != 1 || d.ids[0] != "run/rollout/a"+hedgeSuffix {
			t.Fatalf("submitted %v once every task was in, want one copy of the straggler", d.ids)
		}
	})
}

// fastWave is a target wave of n tasks of stage under the default policy,
// its model's stage seen answering in 100 ms 40 times, and the recorder
// of the copies it submits; both end with the test.
func fastWave(t *testing.T, stage string, n int) (*submitRecorder, *hedgeWave) {
	d := &submitRecorder{start: time.Now()}
	h := newHedger(&Trainer{now: time.Now, d: d, log: slog.New(slog.DiscardHandler)}, DefaultHedge(), nil)
	for range 40 {
		h.observe(latKey{"m", stage}, 100*time.Millisecond)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	w := h.wave(ctx, stage, "target", "m", n, 0)
	t.Cleanup(w.close)
	return d, w
}
