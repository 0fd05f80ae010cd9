package trainer

import (
	"context"
	"sync"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/skillfleet/skillfleet/pkg/bench"
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
	t     *Trainer
	stage string
	// span is the background stage's span: its tasks are traced under it,
	// not under the step whose optimizer wave released them.
	span trace.Span

	mu       sync.Mutex
	fg       int        // foreground target tasks outstanding
	queue    []*pb.Task // background tasks not yet released
	inflight int
	stopped  bool
}

// startIdleFill prepares the seed skill's test evaluation as background
// work, when the run evaluates on test and asks for it.
func (t *Trainer) startIdleFill(ctx context.Context) {
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
	t.fill = &idleFill{t: t, stage: "test_baseline", queue: todo, span: span}
}

// foreground counts n foreground target tasks submitted (n > 0) or
// resolved (n < 0).
func (f *idleFill) foreground(n int) {
	if f == nil {
		return
	}
	f.mu.Lock()
	f.fg += n
	f.mu.Unlock()
}

// optimizerWave is called when an optimizer wave has been submitted.
func (f *idleFill) optimizerWave(ctx context.Context) {
	if f == nil {
		return
	}
	f.mu.Lock()
	free := f.capacity() - f.inflight
	if f.stopped || f.fg > 0 || free <= 0 || len(f.queue) == 0 {
		f.mu.Unlock()
		return
	}
	n := min(free, len(f.queue))
	batch := f.queue[:n:n]
	f.queue = f.queue[n:]
	f.inflight += n
	f.mu.Unlock()

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
			select {
			case <-fut.Done():
			case <-ctx.Done():
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
