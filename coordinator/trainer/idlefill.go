package trainer

import (
	"context"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/rundir"
	"github.com/skillfleet/skillfleet/pkg/telemetry"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// idleFill runs target work nothing waits on yet — the seed skill's test
// evaluation, which only the final report needs — in the target pool's
// idle time. A step's optimizer waves (reflection, merges, ranking) leave
// every target slot idle for a model latency or more; whenever such a wave
// starts while no foreground target task is outstanding, idleFill releases
// as many background tasks as the workers have free target slots. They
// finish while the optimizer works, so they never queue ahead of a
// foreground wave. The final evaluation submits the same task ids and so
// finds their results (or shares their futures).
type idleFill struct {
	t *Trainer
	// ctx is the run's: background work released outside an optimizer
	// wave's call runs under it.
	ctx   context.Context
	stage string
	// span is the background stage's span: its tasks are traced under it,
	// not under the step whose optimizer wave released them.
	span trace.Span

	mu       sync.Mutex
	fg       int        // foreground target tasks outstanding
	queue    []*pb.Task // background tasks not yet released
	inflight int
	stopped  bool

	// pf is the next step's prefetched rollouts (prefetch.go), released
	// into idle slots before the test evaluation's tasks; pfInflight
	// counts those out.
	pf         *prefetch
	pfInflight int
	// early holds when each prefetched rollout still to be taken over
	// was released, by task id (see [idleFill.releasedAt]).
	early      map[string]time.Time
	prefetched rundir.PrefetchCounts
}

// startIdleFill prepares the idle-time work: the next steps' prefetched
// rollouts when the run may prefetch, and the seed skill's test
// evaluation when the run evaluates on test and asks for it.
func (t *Trainer) startIdleFill(ctx context.Context) {
	if t.s.Prefetch == PrefetchOn || t.s.Prefetch == PrefetchAuto {
		t.fill = &idleFill{t: t, ctx: ctx, stopped: true}
	}
	if !t.s.EvalTest || !t.s.IdleFill || len(t.testItems()) == 0 {
		return
	}
	tasks := t.rolloutTasks(rolloutReq{Stage: "test_baseline", Step: t.st.TotalSteps, Skill: t.s.SkillInit, Items: t.testItems(), Split: bench.SplitTest})
	var todo []*pb.Task
	for _, task := range tasks {
		if _, ok := t.d.Lookup(task.GetId()); !ok {
			todo = append(todo, task)
		}
	}
	_, span := t.stageSpan(telemetry.WithAttrs(ctx, telemetry.Attrs{Step: t.st.TotalSteps}), "test_baseline", len(todo))
	span.SetAttributes(attribute.Bool("skillfleet.background", true))
	pf := t.fill
	t.fill = &idleFill{t: t, ctx: ctx, stage: "test_baseline", queue: todo, span: span}
	if pf != nil {
		t.fill.prefetched = pf.prefetched
	}
}

// foreground counts n foreground target tasks submitted (n > 0) or
// resolved (n < 0).
func (f *idleFill) foreground(n int) {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.fg += n
	idle := n < 0 && f.fg == 0 && f.pf != nil
	f.mu.Unlock()
	if idle {
		// A wave just ended: the step's optimizer work follows (or the
		// next step), so prefetching may start now.
		f.release(f.ctx, false, nil)
	}
}

// optimizerWave is called when an optimizer wave has been submitted.
func (f *idleFill) optimizerWave(ctx context.Context) {
	if f == nil {
		return
	}
	f.release(ctx, true, nil)
}

// release hands the target slots free while no foreground target task is
// out to background work: the next step's prefetched rollouts first, then,
// when test is set, the seed skill's test evaluation. A prefetched rollout
// landing (from) passes its slot on to the test evaluation only while its
// step's prefetch is still the one queued and not held by a gate.
func (f *idleFill) release(ctx context.Context, test bool, from *prefetch) {
	f.mu.Lock()
	if f.fg > 0 {
		f.mu.Unlock()
		return
	}
	free := f.capacity() - f.inflight - f.pfInflight
	pf, next := f.takePrefetch(free)
	free -= len(next)
	if from != nil {
		test = f.pf == from && !from.held
	}
	var batch []*pb.Task
	if test && !f.stopped && free > 0 && len(f.queue) > 0 {
		n := min(free, len(f.queue))
		batch = f.queue[:n:n]
		f.queue = f.queue[n:]
		f.inflight += n
	}
	f.mu.Unlock()
	f.releasePrefetch(pf, next)
	f.releaseTest(ctx, batch)
}

// releaseTest submits test-evaluation tasks taken by release.
func (f *idleFill) releaseTest(ctx context.Context, batch []*pb.Task) {
	n := len(batch)
	if n == 0 {
		return
	}
	futs, err := f.t.submit(trace.ContextWithSpan(ctx, f.span), batch)
	if err != nil {
		f.t.log.WarnContext(ctx, "background test evaluation: submit failed; the final evaluation will run it", "err", err)
		f.mu.Lock()
		f.inflight -= n
		f.mu.Unlock()
		return
	}
	for i, fut := range futs {
		go func() {
			if !landed(ctx, fut) {
				return
			}
			if res := fut.Result(); res.GetOutcome() != pb.Outcome_OUTCOME_CANCELLED {
				f.t.account(f.stage, "target", batch[i], res)
			}
			f.mu.Lock()
			f.inflight--
			f.mu.Unlock()
		}()
	}
}

// landed waits for fut and reports whether it resolved before ctx
// ended (background work's accounting stops with the run).
func landed(ctx context.Context, fut Future) bool {
	select {
	case <-fut.Done():
		return true
	case <-ctx.Done():
		return false
	}
}

// capacity is the target concurrency of the executors; zero (nothing is
// released) when none is known.
func (f *idleFill) capacity() int { return f.t.d.TargetSlots() }

// stop releases nothing more: the final evaluation takes over.
func (f *idleFill) stop() {
	if f == nil {
		return
	}
	f.mu.Lock()
	if !f.stopped {
		f.span.End()
	}
	f.stopped = true
	f.mu.Unlock()
}
