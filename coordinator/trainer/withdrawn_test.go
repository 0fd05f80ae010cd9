package trainer

import (
	"context"
	"log/slog"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// sentRecorder is a Dispatcher whose CancelWith names the tasks of sent
// as may-still-report and has those of reportNow report at once, before
// CancelWith returns (a worker that ended the task as the cancel came).
// late is the hook of its last CancelWith.
type sentRecorder struct {
	cancelRecorder
	sent, reportNow []string
	late            func(*pb.Result)
}

func (s *sentRecorder) CancelWith(ctx context.Context, late func(*pb.Result), ids ...string) []string {
	s.cancelRecorder.CancelWith(ctx, late, ids...)
	s.late = late
	var out []string
	for _, id := range ids {
		if slices.Contains(s.reportNow, id) {
			late(&pb.Result{TaskId: id, Outcome: pb.Outcome_OUTCOME_CANCELLED, Usage: &pb.Usage{Calls: 1}})
		}
		if slices.Contains(s.sent, id) {
			out = append(out, id)
		}
	}
	return out
}

// pending reports whether the task id is withdrawn and not yet reported.
func (g *withdrawals) pending(id string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	_, ok := g.m[id]
	return ok
}

// quietTrainer is a trainer with only what withdrawals need.
func quietTrainer(d Dispatcher) *Trainer {
	return &Trainer{now: time.Now, d: d, log: slog.New(slog.DiscardHandler)}
}

// Any withdrawal — an early-stopped gate's rest, a speculation's other
// branch, a discarded prefetch, a hedge loser — is waited for at the
// run's end when the dispatcher says a worker may be running it: one
// never published (held) is not, nor one whose report came while it was
// being cancelled. A report accounts the task through the caller's late
// hook and ends the wait for it.
func TestWithdrawWaitsOnlyForTasksAWorkerMayRun(t *testing.T) {
	d := &sentRecorder{sent: []string{"queued", "quick"}, reportNow: []string{"quick"}}
	tr := quietTrainer(d)
	var accounted []string
	byID := map[string]*pb.Task{
		"queued": {Id: "queued", TimeoutMs: 60_000},
		"quick":  {Id: "quick"},
		"held":   {Id: "held"},
	}
	tr.withdraw(context.Background(), func(res *pb.Result) { accounted = append(accounted, res.GetTaskId()) }, byID, "queued", "quick", "held")
	if !slices.Equal(d.cancelled, []string{"queued", "quick", "held"}) {
		t.Fatalf("cancelled %v, want every task", d.cancelled)
	}
	for id, want := range map[string]bool{"queued": true, "quick": false, "held": false} {
		if got := tr.gone.pending(id); got != want {
			t.Errorf("%s waited for: %v, want %v", id, got, want)
		}
	}
	if w := tr.gone.m["queued"]; w == nil || w.timeout != time.Minute {
		t.Errorf("queued's record %+v, want its task's 1m timeout", w)
	}
	if !slices.Equal(accounted, []string{"quick"}) {
		t.Errorf("accounted %v, want quick's report", accounted)
	}
}

// The report that ends the wait comes through the hook CancelWith was
// handed, and the caller's late hook still accounts it.
func TestWithdrawnReportEndsTheWait(t *testing.T) {
	d := &sentRecorder{sent: []string{"a"}}
	tr := quietTrainer(d)
	var accounted int
	tr.withdraw(context.Background(), func(*pb.Result) { accounted++ }, map[string]*pb.Task{"a": {Id: "a"}}, "a")
	if !tr.gone.pending("a") || d.late == nil {
		t.Fatal("the withdrawn task is not waited for")
	}
	d.late(&pb.Result{TaskId: "a", Outcome: pb.Outcome_OUTCOME_OK, Usage: &pb.Usage{Calls: 2}})
	if tr.gone.pending("a") || accounted != 1 {
		t.Errorf("after its report: still waited for %v, accounted %d times", tr.gone.pending("a"), accounted)
	}
}

// A withdrawn task whose worker said it is finishing a call (a stalled
// one ends only at its stall deadline) is waited for past the usual
// bound, until its report accounts it; one that never said so is not.
// The linger note comes in as a duplicate's spend, as from a worker.
func TestSettleWaitsForALingeringWithdrawnTask(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := quietTrainer(&cancelRecorder{})
		byID := map[string]*pb.Task{"quiet": {Id: "quiet", TimeoutMs: 3_600_000}, "stalled": {Id: "stalled", TimeoutMs: 3_600_000}}
		tr.withdraw(context.Background(), nil, byID, "quiet", "stalled")
		note := func(id string) *pb.Result {
			return &pb.Result{TaskId: id, SpendOnly: true, Outcome: pb.Outcome_OUTCOME_CANCELLED}
		}
		tr.AccountDuplicate(note("stalled"), "")
		tr.AccountDuplicate(note("never-withdrawn"), "") // a note for no withdrawn task changes nothing
		done := make(chan struct{})
		go func() {
			tr.settleWithdrawn(context.Background())
			close(done)
		}()
		time.Sleep(tr.gone.settleBound() + 10*time.Second)
		synctest.Wait()
		select {
		case <-done:
			t.Fatal("settle returned while a withdrawn task was still finishing its call")
		default:
		}
		if tr.gone.pending("quiet") {
			t.Error("a task that never reported is still waited for past the bound")
		}
		tr.gone.done("stalled", time.Now()) // its report came
		time.Sleep(time.Second)
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("settle did not return once the lingering task was accounted")
		}
	})
}

// A withdrawn task still finishing its call when the run ends (a stalled
// call: it would end only at its worker's stall deadline, up to the 90 s
// linger bound) costs the run's end seconds: after settleGrace its worker
// is asked to end the call, and its report ends the wait. A worker that
// never reports is waited for abandonWait after the notice, not for the
// linger bound.
func TestSettleAbandonsAStalledWithdrawnTask(t *testing.T) {
	for _, report := range []bool{true, false} {
		synctest.Test(t, func(t *testing.T) {
			d := &abandonRecorder{report: report, start: time.Now()}
			tr := quietTrainer(d)
			d.tr = tr
			tr.gone.observe(20 * time.Second) // a long settleBound: the grace is what counts
			tr.withdraw(context.Background(), nil, map[string]*pb.Task{"stalled": {Id: "stalled", TimeoutMs: 3_600_000}}, "stalled")
			tr.gone.linger("stalled", time.Now())
			start := time.Now()
			tr.settleWithdrawn(context.Background())
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

// A withdrawn task that neither reported nor said it lingers was never
// sent (a worker running a cancelled task says so at once): the run's end
// waits noteWait for it, not the longest task time observed, which under
// a latency tail counts a large wave's queueing.
func TestSettleForgetsASilentWithdrawnTaskSoon(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tr := quietTrainer(&cancelRecorder{})
		h := newHedger(tr, HedgePolicy{}, nil)
		h.observe(latKey{"m", "test_best"}, 40*time.Second) // the hedger's times bound the wait
		tr.withdraw(context.Background(), nil, map[string]*pb.Task{"queued": {Id: "queued", TimeoutMs: 3_600_000}}, "queued")
		start := time.Now()
		tr.settleWithdrawn(context.Background())
		if took := time.Since(start); took < noteWait || took > noteWait+100*time.Millisecond {
			t.Errorf("settle took %v for a silent task, want %v (the longest task time is %v)", took, noteWait, tr.gone.settleBound())
		}
	})
}

// Once workers have answered withdrawals, a silent task is waited for
// firstWordMargin times the slowest answer (at least minNoteWait), not
// noteWait: a run whose last gate stopped early ends without seconds of
// waiting for tasks that were still queued.
func TestSettleWaitsForASilentTaskAsLongAsWorkersTakeToAnswer(t *testing.T) {
	for _, answer := range []time.Duration{30 * time.Millisecond, 400 * time.Millisecond} {
		synctest.Test(t, func(t *testing.T) {
			tr := quietTrainer(&cancelRecorder{})
			tr.gone.observe(time.Minute)
			tr.withdraw(context.Background(), nil, map[string]*pb.Task{"ran": {Id: "ran"}}, "ran")
			time.Sleep(answer)
			tr.gone.done("ran", time.Now())
			tr.withdraw(context.Background(), nil, map[string]*pb.Task{"queued": {Id: "queued"}}, "queued")
			start := time.Now()
			tr.settleWithdrawn(context.Background())
			want := max(firstWordMargin*answer, minNoteWait)
			if took := time.Since(start); took < want || took > want+100*time.Millisecond {
				t.Errorf("answers in %v: settle took %v for a silent task, want %v", answer, took, want)
			}
		})
	}
}

// A task withdrawn again (a second path cancelling it after the first)
// keeps the first withdrawal's record: the second cancel finds nothing
// live and must not drop the wait for a worker still running it.
func TestWithdrawnAgainIsStillWaitedFor(t *testing.T) {
	d := &sentRecorder{sent: []string{"a"}}
	tr := quietTrainer(d)
	byID := map[string]*pb.Task{"a": {Id: "a"}}
	tr.withdraw(context.Background(), nil, byID, "a")
	first := tr.gone.m["a"]
	d.sent = nil // no longer live: the dispatcher names nothing
	tr.withdraw(context.Background(), nil, byID, "a")
	if !tr.gone.pending("a") || tr.gone.m["a"] != first {
		t.Errorf("after a second withdrawal: waited for %v, first record kept %v", tr.gone.pending("a"), tr.gone.m["a"] == first)
	}
}
