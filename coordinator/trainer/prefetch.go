package trainer

import (
	"context"
	"maps"
	"slices"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/skillfleet/skillfleet/pkg/telemetry"

	"github.com/skillfleet/skillfleet/pkg/rundir"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Prefetch modes (config runtime.prefetch).
const (
	PrefetchAuto = "auto"
	PrefetchOn   = "on"
	PrefetchOff  = "off"
)

// PrefetchStage is the tokens.json stage of prefetched rollouts that no
// step used: the gate accepted a candidate, so the next step rolled out
// another skill.
const PrefetchStage = "prefetch"

// Heavy-tail test of runtime.prefetch=auto: at least tailSamples task
// times of the target model observed, their 90th percentile at least
// tailRatio times their median and tailSpread beyond it. A steady latency
// sits near a ratio of 1, a log-normal tail of sigma 1 near 3.6. The
// spread keeps fast calls out: at 100 ms a call, queueing on a busy
// machine can double the 90th percentile, but a wave's slowest call then
// costs a fraction of a second, less than a batch of thrown-away
// rollouts is worth.
const (
	tailSamples = 32
	tailRatio   = 2.0
	tailSpread  = 500 * time.Millisecond
)

// prefetch is step g+1's rollouts for the skill step g starts with, run in
// the target slots step g's optimizer waves leave idle. Most gates reject
// (the skill stays), and then step g+1 submits the same task ids and finds
// its rollouts done or under way: its rollout wave, whose slowest call sets
// its length under a latency tail, is off the chain. When step g accepts,
// what was released is withdrawn and what ran is accounted under
// [PrefetchStage]: the price is at most one batch of rollouts per accepted
// step. Rollouts are content-addressed, so no decision changes.
type prefetch struct {
	// ctx carries span, the prefetch's own stage span: under the run, not
	// under the step that releases the tasks, whose spans belong to step
	// g+1.
	ctx   context.Context
	span  trace.Span
	skill string // hash of the skill the tasks roll out
	queue []*pb.Task
	// held stops releasing once the step's gate starts: the gate needs
	// the slots, and its verdict is near.
	held bool
	// released are the tasks submitted; landed their results.
	released  []*pb.Task
	landed    map[*pb.Task]*pb.Result
	discarded bool
}

// heavyTail reports whether model's observed task times have a long tail
// (see tailRatio); false while hedging, which keeps the times, is off.
func (h *hedger) heavyTail(model string) bool {
	if h == nil || !h.p.Enabled {
		return false
	}
	h.mu.Lock()
	times := slices.Clone(h.times[latKey{model, ""}])
	h.mu.Unlock()
	if len(times) < tailSamples {
		return false
	}
	slices.Sort(times)
	med := times[(len(times)-1)/2]
	p90 := times[(len(times)*9-1)/10]
	return med > 0 && float64(p90) >= tailRatio*float64(med) && p90-med >= tailSpread
}

// prefetchNext queues step g+1's rollouts for skill (the step's current
// one) when the run prefetches and step g+1 is in this epoch.
func (t *Trainer) prefetchNext(g int, skill string) {
	f := t.fill
	if f == nil || t.nextBatches == nil {
		return
	}
	switch t.s.Prefetch {
	case PrefetchOn:
	case PrefetchAuto:
		if !t.hedge.heavyTail(t.s.Target.GetModel()) {
			return
		}
	default:
		return
	}
	var queue []*pb.Task
	for _, b := range t.nextBatches {
		rq := t.batchRollout(g+1, skill, b)
		tasks := t.rolloutTasks(rq)
		// The real wave's queue order: its longest prompts first.
		for _, i := range queueOrder(rq.Order, rq.Items) {
			if _, ok := t.d.Lookup(tasks[i].GetId()); !ok {
				queue = append(queue, tasks[i])
			}
		}
	}
	ctx, span := t.stageSpan(telemetry.WithAttrs(f.ctx, telemetry.Attrs{Step: g + 1}), PrefetchStage, len(queue))
	span.SetAttributes(attribute.Bool("skillfleet.background", true))
	f.mu.Lock()
	f.pf = &prefetch{ctx: ctx, span: span, skill: skillHash(skill), queue: queue, landed: map[*pb.Task]*pb.Result{}}
	f.prefetched.Steps++
	f.mu.Unlock()
}

// takePrefetch removes up to n tasks from the prefetch queue and marks
// them released. f.mu is held.
func (f *idleFill) takePrefetch(n int) (*prefetch, []*pb.Task) {
	pf := f.pf
	if pf == nil || pf.held || pf.discarded || n <= 0 || len(pf.queue) == 0 {
		return nil, nil
	}
	n = min(n, len(pf.queue))
	batch := pf.queue[:n:n]
	pf.queue = pf.queue[n:]
	pf.released = append(pf.released, batch...)
	f.pfInflight += n
	f.prefetched.Released += n
	return pf, batch
}

// releasePrefetch submits a batch taken by takePrefetch. As each lands,
// its slot goes to the next prefetched rollout, or the test evaluation,
// while no foreground target work is out (see [idleFill.release]).
func (f *idleFill) releasePrefetch(pf *prefetch, batch []*pb.Task) {
	if len(batch) == 0 {
		return
	}
	ctx := pf.ctx
	at := f.t.now()
	futs, err := f.t.submit(ctx, batch)
	if err != nil {
		f.t.log.WarnContext(ctx, "prefetching the next step's rollouts: submit failed; the step will run them", "err", err)
		f.mu.Lock()
		f.pfInflight -= len(batch)
		pf.released = slices.DeleteFunc(pf.released, func(t *pb.Task) bool { return slices.Contains(batch, t) })
		f.mu.Unlock()
		return
	}
	f.mu.Lock()
	if f.early == nil {
		f.early = map[string]time.Time{}
	}
	for _, task := range batch {
		f.early[task.GetId()] = at
	}
	f.mu.Unlock()
	for i, fut := range futs {
		go func() {
			if !landed(ctx, fut) {
				return
			}
			res := fut.Result()
			f.mu.Lock()
			f.pfInflight--
			pf.landed[batch[i]] = res
			discarded := pf.discarded
			f.mu.Unlock()
			if discarded && res.GetOutcome() != pb.Outcome_OUTCOME_CANCELLED {
				f.t.account(PrefetchStage, "target", batch[i], res)
			}
			f.release(f.ctx, false, pf)
		}()
	}
}

// releasedAt is when a prefetched rollout the step now submits was
// released, and forgets it: a wave's hedger counts the task's age from
// then.
func (f *idleFill) releasedAt(id string) (time.Time, bool) {
	if f == nil {
		return time.Time{}, false
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	at, ok := f.early[id]
	delete(f.early, id)
	return at, ok
}

// holdPrefetch releases no more prefetched rollouts: the step's gate is
// about to start.
func (t *Trainer) holdPrefetch() {
	f := t.fill
	if f == nil {
		return
	}
	f.mu.Lock()
	if f.pf != nil {
		f.pf.held = true
	}
	f.mu.Unlock()
}

// settlePrefetch ends the step's prefetch once its verdict is applied:
// kept when the next step rolls out the skill it was made for (the step
// submits the same ids), else withdrawn and its spend accounted.
func (t *Trainer) settlePrefetch(ctx context.Context) {
	f := t.fill
	if f == nil {
		return
	}
	f.mu.Lock()
	pf := f.pf
	f.pf = nil
	if pf != nil {
		pf.span.End()
	}
	if pf == nil || pf.skill == t.st.CurrentHash {
		if pf != nil {
			f.prefetched.Kept += len(pf.released)
		}
		f.mu.Unlock()
		return
	}
	pf.discarded = true
	for _, task := range pf.released {
		delete(f.early, task.GetId())
	}
	ran := map[*pb.Task]*pb.Result{}
	out := map[string]*pb.Task{}
	for _, task := range pf.released {
		if res, ok := pf.landed[task]; ok {
			if res.GetOutcome() != pb.Outcome_OUTCOME_CANCELLED {
				ran[task] = res
			}
			continue
		}
		out[task.GetId()] = task
	}
	f.prefetched.Discarded += len(pf.released)
	f.mu.Unlock()
	for task, res := range ran {
		t.account(PrefetchStage, "target", task, res)
	}
	if len(out) > 0 {
		ids := slices.Sorted(maps.Keys(out))
		t.withdraw(ctx, func(res *pb.Result) {
			if task := out[res.GetTaskId()]; task != nil {
				t.account(PrefetchStage, "target", task, res)
			}
		}, out, ids...)
	}
}

// prefetchCounts is summary.json's account of prefetching (nil when the
// run prefetched nothing).
func (t *Trainer) prefetchCounts() *rundir.PrefetchCounts {
	f := t.fill
	if f == nil {
		return nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.prefetched.Steps == 0 {
		return nil
	}
	c := f.prefetched
	return &c
}
