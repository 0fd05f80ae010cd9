package trainer

import (
	"cmp"
	"context"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/skillfleet/skillfleet/pkg/rundir"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// HedgePolicy configures wave hedging: a task of a wave the loop waits
// for that is still out well past its stage's usual time gets a copy
// under a derived id; whichever answers first stands for the task and the
// other is cancelled. Hedging never changes a decision (a task's result
// depends only on its content), so it is no part of the decision hash.
type HedgePolicy struct {
	// Enabled turns wave hedging on.
	Enabled bool
	// Budget caps the copies of one wave: at most Budget × its tasks,
	// rounded up, and at least two (one for a wave of one task): a small
	// wave's few copies cost little and it waits for its slowest call
	// like a large one.
	Budget float64
	// MaxExtra caps the copies of the run: at most MaxExtra × the
	// foreground tasks submitted so far, plus one wave's budget.
	MaxExtra float64
	// Quantile and Multiplier set the delay: a task is hedged once it has
	// been out Multiplier × the Quantile of its model and stage's observed
	// times, and at least twice their median.
	Quantile   float64
	Multiplier float64
	// MinSamples is how many times of a model and stage must be observed
	// (in this wave or earlier ones) before the delay is drawn from them.
	// Until then it is drawn from the model's times over every stage, or,
	// with fewer than MinSamples of those too, from every model's (the
	// coordinator sees the whole fleet's results), widened by Widen for
	// each step away from the stage: a stall on a stage's first calls —
	// a one-call optimizer wave early in a run — is copied within seconds
	// instead of waiting for its worker's stall deadline. The delay is
	// also at least twice the median of the stage's own times, however
	// few, so a stage slower than the model's others by nature has at
	// most its first wave copied early.
	MinSamples int
	// Widen scales a delay drawn from a wider set of times than the
	// task's own model and stage (default 2).
	Widen float64
	// MinDelay is the shortest delay. It binds only for calls faster than
	// half of it (the delay is otherwise at least two medians), where what
	// varies is not the call but the path to and from the worker and the
	// watch's tick: it is set above that path's jitter, and below what a
	// fast call's stalled wave should wait.
	MinDelay time.Duration
}

// DefaultHedge is the policy runtime.hedge turns on.
func DefaultHedge() HedgePolicy {
	return HedgePolicy{Enabled: true, Budget: 0.15, MaxExtra: 0.05, Quantile: 0.8, Multiplier: 2, MinSamples: 8, Widen: 2, MinDelay: 150 * time.Millisecond}
}

// hedgeSuffix marks a hedge copy's task id: the original's id plus this.
// A "~" keeps the copy out of the shared rollout cache (it is the same
// measurement as the original, which the cache keeps).
const hedgeSuffix = "~hedge"

// hedgeTick is how often a wave's outstanding tasks are looked at.
const hedgeTick = 20 * time.Millisecond

// hedgeHistory is how many recent times per model and stage are kept.
const hedgeHistory = 256

type latKey struct{ model, stage string }

// hedger re-issues the stragglers of the waves the loop waits for and
// remembers which copies answered for their originals.
type hedger struct {
	t *Trainer
	p HedgePolicy

	mu sync.Mutex
	// times are the observed times (submission or estimated start to
	// result) per model and stage, most recent last.
	times map[latKey][]time.Duration
	// wins maps an original task id to the copy whose result stands for it.
	wins map[string]string
	// fgTasks counts the foreground tasks tracked; extra the copies made.
	fgTasks, extra int
	// counts are the copies made and won, by stage (summary.json).
	counts map[string]rundir.HedgeCounts
}

func newHedger(t *Trainer, p HedgePolicy, recorded map[string]struct{}) *hedger {
	h := &hedger{t: t, p: p, times: map[latKey][]time.Duration{}, wins: map[string]string{}, counts: map[string]rundir.HedgeCounts{}}
	for id := range recorded {
		if orig, ok := strings.CutSuffix(id, hedgeSuffix); ok {
			h.wins[orig] = id
		}
	}
	return h
}

// observe adds one task's time to its model and stage's, to its model's
// over every stage (stage "") and to every model's (both "").
func (h *hedger) observe(k latKey, d time.Duration) {
	h.t.gone.observe(d)
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, k := range []latKey{k, {k.model, ""}, {}} {
		s := append(h.times[k], d)
		if len(s) > hedgeHistory {
			s = s[len(s)-hedgeHistory:]
		}
		h.times[k] = s
	}
}

// delay is the hedge delay of a model and stage (0: not hedged yet):
// from the times observed so far, those of the current wave included —
// the stage's own once it has MinSamples, else the model's or every
// model's, widened (see [HedgePolicy.MinSamples]).
func (h *hedger) delay(k latKey) time.Duration {
	h.mu.Lock()
	own := slices.Clone(h.times[k])
	var wide []time.Duration
	widen := 1.0
	if len(own) < h.p.MinSamples {
		for _, wk := range []latKey{{k.model, ""}, {}} {
			widen *= cmp.Or(h.p.Widen, 2)
			if s := h.times[wk]; len(s) >= h.p.MinSamples {
				wide = slices.Clone(s)
				break
			}
		}
	}
	h.mu.Unlock()
	if len(own) >= h.p.MinSamples && len(own) > 0 {
		return h.delayOf(own, 1)
	}
	if len(wide) == 0 {
		return 0
	}
	d := h.delayOf(wide, widen)
	if len(own) > 0 {
		slices.Sort(own)
		d = max(d, 2*own[(len(own)-1)/2])
	}
	return d
}

// delayOf is the delay set by times (at least one), widened: the larger
// of Multiplier × their Quantile and twice their median, at least
// MinDelay. It sorts times.
func (h *hedger) delayOf(times []time.Duration, widen float64) time.Duration {
	slices.Sort(times)
	q := times[min(len(times)-1, int(math.Ceil(h.p.Quantile*float64(len(times))))-1)]
	med := times[(len(times)-1)/2]
	return max(time.Duration(widen*max(float64(q)*h.p.Multiplier, 2*float64(med))), h.p.MinDelay)
}

// substitute points tasks whose original lost to a recorded copy at the
// copy, so that asking for the task again reuses the copy's result.
func (h *hedger) substitute(tasks []*pb.Task) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, task := range tasks {
		cp, ok := h.wins[task.GetId()]
		if !ok {
			continue
		}
		if r, ok := h.t.d.Lookup(cp); ok && r.GetOutcome() == pb.Outcome_OUTCOME_OK {
			task.Id = cp
		}
	}
}

// allow takes one copy from the run's budget.
func (h *hedger) allow(waveBudget int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if float64(h.extra) >= h.p.MaxExtra*float64(h.fgTasks)+float64(waveBudget) {
		return false
	}
	h.extra++
	return true
}

// hedgeWave watches one wave's tasks.
type hedgeWave struct {
	h     *hedger
	ctx   context.Context
	key   latKey
	stage string
	role  string
	// slots is how many of the wave's tasks run at once (0: all).
	slots  int
	budget int

	mu      sync.Mutex
	entries []*hedgeEntry // in submission order
	// arrivals are when the wave's results came in, in order.
	arrivals []time.Time
	copies   int
	watched  bool
	closed   bool
	// unsent is how many of the wave's tasks are not submitted yet (a
	// windowed wave submits as results come in).
	unsent int
}

// hedgeEntry is one task of a wave.
type hedgeEntry struct {
	task      *pb.Task
	fut       *hedgedFuture
	submitted time.Time
	// known: the result was already in when submitted (nothing to wait for).
	known    bool
	resolved bool
	hedged   bool
	// copyTaken: the wave withdrew the copy along with its task and
	// accounts what the copy spent (see copyIDs).
	copyTaken bool
}

// wave starts watching a wave of n tasks of stage run by role on model;
// nil when hedging is off.
func (h *hedger) wave(ctx context.Context, stage, role, model string, n, slots int) *hedgeWave {
	if h == nil || !h.p.Enabled {
		return nil
	}
	return &hedgeWave{h: h, ctx: ctx, key: latKey{model, stage}, stage: stage, role: role, slots: slots,
		budget: max(min(n, 2), int(math.Ceil(h.p.Budget*float64(n))))}
}

// track wraps the futures of tasks just submitted: each resolves with the
// first result of the task or its copy.
func (w *hedgeWave) track(tasks []*pb.Task, futs []Future) []Future {
	if w == nil {
		return futs
	}
	now := w.h.t.now()
	out := make([]Future, len(futs))
	w.mu.Lock()
	fresh := 0
	for i, f := range futs {
		// A prefetched rollout has been out since its release: its age
		// counts from then, so a straggler among them is copied as soon
		// as its step waits for it.
		sub := now
		if at, ok := w.h.t.fill.releasedAt(tasks[i].GetId()); ok && at.Before(now) {
			sub = at
		}
		e := &hedgeEntry{task: tasks[i], submitted: sub}
		select {
		case <-f.Done():
			e.known = true
		default:
			fresh++
		}
		e.fut = newHedgedFuture(w, e, f)
		w.entries = append(w.entries, e)
		out[i] = e.fut
	}
	start := !w.watched && fresh > 0
	w.watched = w.watched || start
	w.mu.Unlock()
	w.h.mu.Lock()
	w.h.fgTasks += fresh
	w.h.mu.Unlock()
	if start {
		go w.watch()
	}
	return out
}

// pending notes how many of the wave's tasks are still to be submitted.
func (w *hedgeWave) pending(n int) {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.unsent = n
	w.mu.Unlock()
}

// copyIDs returns the ids of the copies of the given task ids that were
// hedged, for the caller to cancel along with them and to account: the
// hedger no longer withdraws those copies itself nor waits for their
// reports at the run's end (they go to the caller's late hook, not to
// the hedger's).
func (w *hedgeWave) copyIDs(ids []string) []string {
	if w == nil {
		return nil
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var out []string
	for _, e := range w.entries {
		if e.hedged && want[e.task.GetId()] {
			e.copyTaken = true
			out = append(out, e.task.GetId()+hedgeSuffix)
		}
	}
	return out
}

// close stops watching: no copy is made after it.
func (w *hedgeWave) close() {
	if w == nil {
		return
	}
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
}

// resolved notes a task's result: its time joins the history when it was
// not known at submission.
func (w *hedgeWave) resolved(e *hedgeEntry, res *pb.Result) {
	now := w.h.t.now()
	w.mu.Lock()
	e.resolved = true
	if e.known || res.GetOutcome() == pb.Outcome_OUTCOME_CANCELLED {
		w.mu.Unlock()
		return
	}
	w.learnSlots()
	start := w.startOf(w.indexOf(e))
	w.arrivals = append(w.arrivals, now)
	var d time.Duration
	if !start.IsZero() {
		d = now.Sub(start)
	}
	w.mu.Unlock()
	if d > 0 {
		w.h.observe(w.key, d)
	}
}

// learnSlots gives a target wave begun before the fleet's slots were
// known (a run's first wave, submitted while its workers register) the
// slots seen now: without them every task of the wave counts as started
// at its submission, and those that waited for a slot add that wait to
// the stage's times, which then set a later delay for the stage and, ×4,
// for the first waves of the other model. Called with w.mu held.
func (w *hedgeWave) learnSlots() {
	if w.slots == 0 && w.role == "target" && w.h.t.d != nil {
		w.slots = w.h.t.d.TargetSlots()
	}
}

func (w *hedgeWave) indexOf(e *hedgeEntry) int {
	for i, x := range w.entries {
		if x == e {
			return i
		}
	}
	return -1
}

// startOf estimates when entry i started running: when it was submitted,
// or, when the wave has more tasks than slots, when the result came in
// that freed a slot for it (tasks start in submission order). Zero when
// it has not started yet. Called with w.mu held.
func (w *hedgeWave) startOf(i int) time.Time {
	e := w.entries[i]
	if w.slots <= 0 {
		return e.submitted
	}
	// Tasks known at submission take no slot.
	pos := 0
	for _, x := range w.entries[:i] {
		if !x.known {
			pos++
		}
	}
	if pos < w.slots {
		return e.submitted
	}
	if k := pos - w.slots; k < len(w.arrivals) {
		return later(e.submitted, w.arrivals[k])
	}
	return time.Time{}
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// watch hedges the wave's stragglers until every task is resolved.
func (w *hedgeWave) watch() {
	tick := time.NewTicker(hedgeTick)
	defer tick.Stop()
	for {
		select {
		case <-w.ctx.Done():
			return
		case <-tick.C:
		}
		if !w.step() {
			return
		}
	}
}

// step hedges what is due; false once nothing is left to watch.
func (w *hedgeWave) step() bool {
	now := w.h.t.now()
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return false
	}
	var out []int
	for i, e := range w.entries {
		if !e.resolved && !e.known {
			out = append(out, i)
		}
	}
	if len(out) == 0 {
		w.mu.Unlock()
		return false
	}
	w.learnSlots()
	// Only the wave's last round is hedged: while more tasks are out than
	// run at once, the slots are busy with the wave itself; and while a
	// windowed wave (an early-stoppable gate) has tasks still to submit,
	// it waits for no task in particular: each result lets the next task
	// in, a straggler only holds one place of the window, and the stop
	// rule counts whatever results are in.
	if w.copies >= w.budget || w.unsent > 0 || (w.slots > 0 && len(out) > w.slots) {
		w.mu.Unlock()
		return true
	}
	delay := w.h.delay(w.key)
	if delay == 0 {
		w.mu.Unlock()
		return true
	}
	// The oldest first.
	type cand struct {
		e   *hedgeEntry
		age time.Duration
	}
	var due []cand
	for _, i := range out {
		e := w.entries[i]
		if e.hedged {
			continue
		}
		s := w.startOf(i)
		if s.IsZero() {
			continue
		}
		if age := now.Sub(s); age >= delay {
			due = append(due, cand{e, age})
		}
	}
	slices.SortFunc(due, func(a, b cand) int { return int(b.age - a.age) })
	var todo []*hedgeEntry
	for _, c := range due {
		if w.copies >= w.budget || !w.h.allow(w.budget) {
			break
		}
		w.copies++
		c.e.hedged = true
		todo = append(todo, c.e)
	}
	w.mu.Unlock()
	for _, e := range todo {
		w.hedge(e, delay)
	}
	if len(todo) > 0 {
		w.h.count(w.stage, func(c *rundir.HedgeCounts) { c.Copies += len(todo) })
	}
	return true
}

// count changes the stage's counts.
func (h *hedger) count(stage string, f func(*rundir.HedgeCounts)) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c := h.counts[stage]
	f(&c)
	h.counts[stage] = c
}

// hedgeCounts is summary.json's account of wave hedging (nil when no copy
// was made).
func (h *hedger) hedgeCounts() map[string]rundir.HedgeCounts {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.counts) == 0 {
		return nil
	}
	return maps.Clone(h.counts)
}

// hedge submits a copy of e's task under a derived id.
func (w *hedgeWave) hedge(e *hedgeEntry, delay time.Duration) {
	t := w.h.t
	cp := cloneTask(e.task)
	cp.Id = e.task.GetId() + hedgeSuffix
	futs, err := t.d.Submit(w.ctx, cp)
	if err != nil {
		t.log.WarnContext(w.ctx, "hedge copy not submitted", "task_id", e.task.GetId(), "err", err)
		return
	}
	t.log.DebugContext(w.ctx, "hedging a straggling task", "stage", w.stage, "task_id", e.task.GetId(), "after", delay.String())
	e.fut.addCopy(cp, futs[0])
}

// hedgedFuture is a task's future that resolves with the first good
// result of the task or its copy.
type hedgedFuture struct {
	w    *hedgeWave
	e    *hedgeEntry
	orig Future
	done chan struct{}

	mu    sync.Mutex
	res   *pb.Result
	cp    Future
	cpID  string
	added chan struct{}
}

var _ Future = (*hedgedFuture)(nil)

func newHedgedFuture(w *hedgeWave, e *hedgeEntry, orig Future) *hedgedFuture {
	f := &hedgedFuture{w: w, e: e, orig: orig, done: make(chan struct{}), added: make(chan struct{})}
	go f.run()
	return f
}

// Done implements Future.
func (f *hedgedFuture) Done() <-chan struct{} { return f.done }

// Result implements Future.
func (f *hedgedFuture) Result() *pb.Result {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.res
}

// Wait implements Future.
func (f *hedgedFuture) Wait(ctx context.Context) (*pb.Result, error) {
	select {
	case <-f.done:
		return f.Result(), nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// addCopy attaches the copy's future; false when the task is already
// resolved (the copy is then cancelled at once).
func (f *hedgedFuture) addCopy(cp *pb.Task, fut Future) {
	f.mu.Lock()
	if f.res != nil {
		f.mu.Unlock()
		f.withdraw(cp.GetId())
		f.settleLoser(fut)
		return
	}
	f.cp, f.cpID = fut, cp.GetId()
	close(f.added)
	f.mu.Unlock()
}

func isOK(r *pb.Result) bool { return r.GetOutcome() == pb.Outcome_OUTCOME_OK }

func isCancelled(r *pb.Result) bool { return r.GetOutcome() == pb.Outcome_OUTCOME_CANCELLED }

// run waits for the original and, once hedged, the copy: the first OK
// result wins; a failure waits for the other attempt; the original
// cancelled (the wave stopped) cancels the copy.
func (f *hedgedFuture) run() {
	origDone := f.orig.Done()
	var cpDone <-chan struct{}
	added := f.added
	var origRes, cpRes *pb.Result
	for {
		select {
		case <-origDone:
			origRes, origDone = f.orig.Result(), nil
		case <-cpDone:
			cpRes, cpDone = f.cp.Result(), nil
		case <-added:
			f.mu.Lock()
			cpDone = f.cp.Done()
			f.mu.Unlock()
			added = nil
		case <-f.w.ctx.Done():
			return
		}
		hasCopy := added == nil
		switch {
		case origRes != nil && isOK(origRes):
			f.finish(origRes, f.copyID(), f.copyFut())
			return
		case cpRes != nil && isOK(cpRes):
			f.win(cpRes)
			return
		case origRes != nil && isCancelled(origRes):
			// The wave withdrew the task: its copy goes too.
			f.finish(origRes, f.copyID(), f.copyFut())
			return
		case origRes != nil && (!hasCopy || cpRes != nil):
			// Both failed (or there is no copy): the original's failure.
			f.finish(origRes, "", nil)
			return
		}
	}
}

func (f *hedgedFuture) copyID() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cpID
}

func (f *hedgedFuture) copyFut() Future {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.cp
}

// win resolves with the copy's result and withdraws the original.
func (f *hedgedFuture) win(res *pb.Result) {
	h := f.w.h
	h.mu.Lock()
	h.wins[f.e.task.GetId()] = res.GetTaskId()
	h.mu.Unlock()
	h.count(f.w.stage, func(c *rundir.HedgeCounts) { c.Won++ })
	f.finish(res, f.e.task.GetId(), f.orig)
}

// finish resolves the future with res and withdraws the losing attempt
// (loserID, "" for none), accounting what it spent.
func (f *hedgedFuture) finish(res *pb.Result, loserID string, loser Future) {
	f.mu.Lock()
	f.res = res
	f.mu.Unlock()
	f.w.resolved(f.e, res)
	close(f.done)
	if loserID == "" || loser == nil {
		return
	}
	f.withdraw(loserID)
	f.settleLoser(loser)
}

// withdraw cancels the losing attempt; until it is accounted it counts
// as possibly running. A copy its wave withdrew (copyIDs) is the wave's
// to cancel and account.
func (f *hedgedFuture) withdraw(id string) {
	h := f.w.h
	f.w.mu.Lock()
	taken := f.e.copyTaken && id == f.e.task.GetId()+hedgeSuffix
	f.w.mu.Unlock()
	if taken {
		return
	}
	h.t.withdraw(context.WithoutCancel(f.w.ctx), f.accountLoser, map[string]*pb.Task{id: f.e.task}, id)
}

// settleLoser accounts a losing attempt that finished before it could be
// withdrawn (a cancelled one reports late, if at all, to accountLoser).
func (f *hedgedFuture) settleLoser(loser Future) {
	select {
	case <-loser.Done():
	case <-f.w.ctx.Done():
		return
	}
	if r := loser.Result(); r != nil && !isCancelled(r) {
		f.accountLoser(r)
	}
}

// accountLoser counts the spend of the attempt that lost: its calls are
// hedged attempts (cause "hedged").
func (f *hedgedFuture) accountLoser(res *pb.Result) {
	f.w.h.t.accountHedged(f.w.role, f.e.task, res)
}

// cloneTask copies a task's envelope; the kind (the payload) is shared,
// as it is never changed after submission.
func cloneTask(t *pb.Task) *pb.Task {
	return &pb.Task{
		Id: t.GetId(), RunId: t.GetRunId(), Step: t.GetStep(), Stage: t.GetStage(), TimeoutMs: t.GetTimeoutMs(),
		Kind: t.Kind, Coordinator: t.GetCoordinator(), WireVersion: t.GetWireVersion(),
	}
}
