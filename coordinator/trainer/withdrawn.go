package trainer

import (
	"cmp"
	"context"
	"sync"
	"time"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// withdrawals are the run's withdrawn tasks — hedge losers, the rest of
// an early-stopped gate, a speculation's other branch, a discarded
// prefetch — that a worker may still be running. A worker ends such a
// task's call and reports it (its calls are billed whether or not anyone
// takes the reply), so the run waits for those reports before it writes
// its accounts ([Trainer.settleWithdrawn]). The zero value is ready.
type withdrawals struct {
	mu sync.Mutex
	// m holds the withdrawn tasks not yet reported, by id.
	m map[string]*withdrawn
	// longest is the longest time observed for a task (by the hedger).
	longest time.Duration
	// firstWord is the longest time from a withdrawal to the first word
	// of the task's worker (a linger note or its report) seen in the run;
	// heardAny is set once there was one.
	firstWord time.Duration
	heardAny  bool
}

// withdrawn is a withdrawn task not yet reported.
type withdrawn struct {
	at time.Time
	// timeout bounds the task's run at its worker (0: unknown).
	timeout time.Duration
	// lingerUntil is set when its worker said it is finishing a call: the
	// run waits for its report until then.
	lingerUntil time.Time
	// abandoned is when the run, ending, asked its worker to end that
	// call (zero: not asked).
	abandoned time.Time
	// heard is set by its worker's first word.
	heard bool
}

// abandoner is a Dispatcher that can ask workers to end the calls of
// cancelled tasks still in flight (see [Trainer.settleWithdrawn]).
type abandoner interface {
	Abandon(ids ...string)
}

// settleGrace bounds how long after its withdrawal a task still finishing
// its call is left to end by itself once the run is over (within
// settleBound): then its worker is asked to end the call, and reports at
// once. A call that answers in that time is billed and accounted; one
// still out is most likely stalled, which would end only at its worker's
// stall deadline — up to minutes when that worker has seen few calls or
// its latencies were stretched by load.
const settleGrace = 5 * time.Second

// noteWait bounds how long after its withdrawal the run's end waits for
// a task that neither reported nor said it lingers: a worker running a
// task the coordinator cancels says so at once, so one silent this long
// was not running — withdrawn while queued, or dropped unrun by the
// worker that took it after the notice. Without it the wait is the
// longest task time observed, which under a latency tail includes a
// large wave's queueing: tens of seconds at the end of a run for a task
// that will never report.
const noteWait = 5 * time.Second

// Once the run has heard workers answer withdrawals, the wait for a
// silent one is firstWordMargin times the slowest first word seen, within
// [minNoteWait, noteWait]: a run whose last gate stopped early would
// otherwise wait seconds at its end for tasks still queued.
const (
	firstWordMargin = 4
	minNoteWait     = 250 * time.Millisecond
)

// abandonWait is how long a withdrawn task's report is waited for after
// its worker was asked to end its call: the notice and the report are
// one round trip, and a worker that is gone, or of a build that does not
// know the notice, never sends it.
const abandonWait = 10 * time.Second

// maxLinger bounds the wait for a lingering task: its call ends by the
// worker's stall deadline or the task's timeout, whichever is first, and
// a worker that died after its note never reports at all.
const maxLinger = 90 * time.Second

// withdraw cancels the tasks ids (byID holds each one's task, for its
// timeout); late accounts the result of one that a worker finishes
// anyway. Those the dispatcher says may still be running are waited for
// at the run's end until they report. A task withdrawn before keeps its
// first record (a second cancel of it changes nothing in the dispatcher).
func (t *Trainer) withdraw(ctx context.Context, late func(*pb.Result), byID map[string]*pb.Task, ids ...string) {
	g := &t.gone
	g.mu.Lock()
	if g.m == nil {
		g.m = map[string]*withdrawn{}
	}
	at := t.now()
	added := make(map[string]bool, len(ids))
	for _, id := range ids {
		if _, ok := g.m[id]; !ok {
			g.m[id] = &withdrawn{at: at, timeout: time.Duration(byID[id].GetTimeoutMs()) * time.Millisecond}
			added[id] = true
		}
	}
	g.mu.Unlock()
	// Registered before the cancel: a report may come before it returns.
	running := t.d.CancelWith(ctx, func(res *pb.Result) {
		g.done(res.GetTaskId(), t.now())
		if late != nil {
			late(res)
		}
	}, ids...)
	mayRun := make(map[string]bool, len(running))
	for _, id := range running {
		mayRun[id] = true
	}
	g.mu.Lock()
	for id := range added {
		if !mayRun[id] {
			delete(g.m, id)
		}
	}
	g.mu.Unlock()
}

// observe notes one task's time (the bound of settleBound).
func (g *withdrawals) observe(d time.Duration) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.longest = max(g.longest, d)
}

// linger marks a withdrawn task as still running at its worker. A note
// for a task already reported (or never withdrawn) changes nothing.
func (g *withdrawals) linger(id string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if w, ok := g.m[id]; ok {
		g.heardLocked(w, now)
		w.lingerUntil = now.Add(min(cmp.Or(w.timeout, maxLinger), maxLinger))
	}
}

// done forgets a withdrawn task whose report came in: accounted, nothing
// to wait for.
func (g *withdrawals) done(id string, now time.Time) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if w, ok := g.m[id]; ok {
		g.heardLocked(w, now)
		delete(g.m, id)
	}
}

// heardLocked notes the first word of w's worker.
func (g *withdrawals) heardLocked(w *withdrawn, now time.Time) {
	if !w.heard {
		w.heard, g.heardAny = true, true
		g.firstWord = max(g.firstWord, now.Sub(w.at))
	}
}

// silentWait is how long after its withdrawal a task that has said
// nothing is waited for (see noteWait).
func (g *withdrawals) silentWait(bound time.Duration) time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	wait := min(bound, noteWait)
	if g.heardAny {
		wait = min(wait, max(firstWordMargin*g.firstWord, minNoteWait))
	}
	return wait
}

// settleBound is how long after its withdrawal a task may still report:
// the longest task time observed, within [2s, 1m].
func (g *withdrawals) settleBound() time.Duration {
	g.mu.Lock()
	defer g.mu.Unlock()
	return min(max(g.longest, 2*time.Second), time.Minute)
}

// settleWithdrawn waits, before the run's accounts are written, for the
// reports of tasks withdrawn recently enough to be running still; one
// that has neither reported nor said it lingers within its silentWait of
// its withdrawal was not running and is not counted. One
// whose worker said it is finishing a call is left settleGrace (within
// settleBound) to end it; then, when the dispatcher can, its worker is
// asked to end the call now and report, and the report is waited for
// abandonWait. Without that notice the wait lasts until the task's linger
// bound.
func (t *Trainer) settleWithdrawn(ctx context.Context) {
	g := &t.gone
	bound := g.settleBound()
	silent := g.silentWait(bound)
	grace := min(bound, settleGrace)
	ab, canAbandon := t.d.(abandoner)
	for {
		g.mu.Lock()
		now := t.now()
		var wait time.Duration
		var abandon, gaveUp []string
		for id, w := range g.m {
			until := w.at.Add(silent)
			if !w.lingerUntil.IsZero() {
				until = w.lingerUntil
				switch {
				case !w.abandoned.IsZero():
					until = earliest(until, w.abandoned.Add(abandonWait))
				case canAbandon && !now.Before(w.at.Add(grace)):
					w.abandoned = now
					abandon = append(abandon, id)
					until = earliest(until, now.Add(abandonWait))
				case canAbandon && w.lingerUntil.After(now):
					wait = max(wait, w.at.Add(grace).Sub(now))
					continue
				}
			}
			if left := until.Sub(now); left > 0 {
				wait = max(wait, left)
			} else {
				delete(g.m, id)
				if !w.abandoned.IsZero() {
					gaveUp = append(gaveUp, id)
				}
			}
		}
		n := len(g.m)
		g.mu.Unlock()
		if len(abandon) > 0 {
			t.log.DebugContext(ctx, "asking workers to end the calls of withdrawn tasks still in flight", "tasks", len(abandon))
			ab.Abandon(abandon...)
		}
		if len(gaveUp) > 0 {
			t.log.WarnContext(ctx, "withdrawn tasks did not report after their workers were asked to end their calls: their spend is not in tokens.json", "tasks", len(gaveUp), "task_ids", gaveUp)
		}
		if n == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(min(wait, 50*time.Millisecond)):
		}
	}
}

// earliest is the earlier of a and b.
func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
