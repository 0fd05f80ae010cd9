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

// A withdrawn attempt whose worker said it is finishing a call (a stalled
// one ends only at its stall deadline) is waited for past the usual
// bound, until its report accounts it; one that never said so is not.
func TestSettleWaitsForALingeringLoser(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := newHedger(&Trainer{now: time.Now}, HedgePolicy{}, nil)
		h.losers["quiet"] = &loser{at: time.Now(), timeout: time.Hour}
		h.losers["stalled"] = &loser{at: time.Now(), timeout: time.Hour}
		h.linger("stalled")
		h.linger("never-withdrawn") // a note for no loser changes nothing
		done := make(chan struct{})
		go func() {
			h.settle(context.Background())
			close(done)
		}()
		time.Sleep(h.settleBound() + 10*time.Second)
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("settle returned while a withdrawn attempt was still finishing its call")
		default:
		}
		h.mu.Lock()
		_, quiet := h.losers["quiet"]
		delete(h.losers, "stalled") // its report came: accountLoser
		h.mu.Unlock()
		if quiet {
			t.Error("an attempt that never reported is still waited for past the bound")
		}
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("settle did not return once the lingering attempt was accounted")
		}
	})
}

// cancelRecorder is a Dispatcher that records CancelWith calls.
type cancelRecorder struct {
	Dispatcher
	mu        sync.Mutex
	cancelled []string
}

func (c *cancelRecorder) CancelWith(_ context.Context, _ func(*pb.Result), ids ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cancelled = append(c.cancelled, ids...)
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
		h.mu.Lock()
		_, waiting := h.losers["run/rollout/a~hedge"]
		h.mu.Unlock()
		if waiting == waveTook {
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
	h         *hedger
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
			a.h.reported(id)
		}
	}
}

// A withdrawn attempt still finishing its call when the run ends (a
// stalled call: it would end only at its worker's stall deadline, up to
// the 90 s linger bound) costs the run's end seconds: after settleGrace
// its worker is asked to end the call, and its report ends the wait. A
// worker that never reports is waited for abandonWait after the notice,
// not for the linger bound.
func TestSettleAbandonsAStalledLoser(t *testing.T) {
	for _, report := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			d := &abandonRecorder{report: report, start: time.Now()}
			h := newHedger(&Trainer{now: time.Now, d: d, log: slog.New(slog.DiscardHandler)}, HedgePolicy{}, nil)
			d.h = h
			h.observe(latKey{"m", "gate"}, 20*time.Second) // a long settleBound: the grace is what counts
			h.losers["stalled"] = &loser{at: time.Now(), timeout: time.Hour}
			h.linger("stalled")
			start := time.Now()
			h.settle(context.Background())
			took := time.Since(start)
			if len(d.abandoned) != 1 || d.abandoned[0] != "stalled" {
				t.Fatalf("abandoned %v, want [stalled]", d.abandoned)
			}
			if d.at != settleGrace {
				t.Errorf("asked to end the call %v after its withdrawal, want %v", d.at, settleGrace)
			}
			want := settleGrace + abandonWait // no report: waited for abandonWait
			if report {
				want = settleGrace
			}
			if took < want || took > want+100*time.Millisecond { // settle looks again every 50 ms
				t.Errorf("report %v: settle took %v, want %v (the linger bound is %v)", report, took, want, maxLinger)
			}
		})
	}
}
