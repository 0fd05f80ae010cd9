package trainer

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"go.opentelemetry.io/otel/trace"

	"github.com/skillfleet/skillfleet/pkg/catalogue"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/telemetry"
	"google.golang.org/protobuf/proto"
)

// optCall is one optimizer call to make.
type optCall struct {
	Stage   string
	Step    int
	Name    string
	Index   int
	Mode    string
	Model   *pb.ModelSpec
	Payload any
	// Skill is the skill text the payload embeds (for the hash only).
	Skill string
}

// optResult is an optimizer call's outcome: JSON when OK.
type optResult struct {
	OK    bool
	JSON  []byte
	Error string
}

// optimize runs optimizer calls concurrently and returns their outcomes in order.
func (t *Trainer) optimize(ctx context.Context, calls []optCall) ([]optResult, error) {
	w, err := t.optimizeAsync(ctx, calls)
	if err != nil {
		return nil, err
	}
	out := make([]optResult, len(calls))
	for i := range calls {
		if out[i], err = w.wait(ctx, i); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// optWave is a wave of optimizer calls in flight; each call's outcome is
// taken with wait, in any order (streaming stages act on each as it lands).
type optWave struct {
	t     *Trainer
	calls []optCall
	tasks []*pb.Task
	futs  []Future
	span  trace.Span
	start time.Time

	mu   sync.Mutex
	out  []*optResult
	left int
	ran  int
}

// optimizeAsync submits optimizer calls and returns at once.
func (t *Trainer) optimizeAsync(ctx context.Context, calls []optCall) (_ *optWave, err error) {
	ctx, span := t.stageSpan(ctx, calls[0].Stage, len(calls))
	defer func() {
		if err != nil {
			telemetry.End(span, &err)
		}
	}()
	tasks := make([]*pb.Task, len(calls))
	for i, c := range calls {
		payload, err := json.Marshal(c.Payload)
		if err != nil {
			return nil, fmt.Errorf("encode %s payload: %w", c.Name, err)
		}
		model := c.Model
		if model == nil {
			model = t.s.Optimizer
		}
		mb, _ := proto.Marshal(model)
		id := hashHex([]byte(c.Name), []byte(c.Mode), []byte(t.s.Bench), payload, mb)
		ot := &pb.OptimizerTask{Model: model, Prompt: c.Name, Mode: c.Mode, Bench: t.s.Bench, Payload: payload, SkillHash: skillHash(c.Skill)}
		task, err := catalogue.PromptTask(ot)
		if err != nil {
			return nil, err
		}
		task.Id = fmt.Sprintf("%s/%s/s%04d/%s-%03d-%s", t.s.RunID, c.Stage, c.Step, c.Name, c.Index, id[:12])
		task.RunId, task.Step, task.Stage = t.s.RunID, int32(c.Step), c.Stage
		task.TimeoutMs = t.s.TaskTimeout.Milliseconds()
		tasks[i] = task
	}
	futs, err := t.submit(ctx, tasks)
	if err != nil {
		return nil, err
	}
	// The wave's stragglers are hedged: the loop waits for every result.
	model := calls[0].Model
	if model == nil {
		model = t.s.Optimizer
	}
	futs = t.hedge.wave(ctx, calls[0].Stage, "optimizer", model.GetModel(), len(tasks), 0).track(tasks, futs)
	t.fill.optimizerWave(ctx)
	t.prog.StartWave(calls[0].Stage, len(tasks))
	return &optWave{t: t, calls: calls, tasks: tasks, futs: futs, span: span, start: t.now(), out: make([]*optResult, len(calls)), left: len(calls)}, nil
}

// wait returns call i's outcome once it is in (accounted once, however
// often it is asked for).
func (w *optWave) wait(ctx context.Context, i int) (optResult, error) {
	res, err := w.futs[i].Wait(ctx)
	if err != nil {
		return optResult{}, err
	}
	t, c, task := w.t, w.calls[i], w.tasks[i]
	w.mu.Lock()
	defer w.mu.Unlock()
	if r := w.out[i]; r != nil {
		return *r, nil
	}
	t.account(c.Stage, "optimizer", task, res)
	if !t.replayed(task.GetId()) {
		w.ran++
	}
	ok := res.GetOutcome() == pb.Outcome_OUTCOME_OK
	t.prog.TaskDone(c.Stage, ok)
	r := optResult{OK: ok, JSON: res.GetOptimizer().GetJson(), Error: res.GetError()}
	w.out[i] = &r
	if !ok {
		t.log.WarnContext(ctx, "optimizer call failed", "stage", c.Stage, "step", c.Step, "task_id", task.GetId(), "outcome", res.GetOutcome().String(), "err", res.GetError())
	}
	if w.left--; w.left == 0 {
		t.waves.Record(w.calls[0].Stage, "optimizer", len(w.tasks), w.ran, w.start)
		w.span.End()
	}
	return r, nil
}

// optimizeOne runs one call and decodes its reply into out.
func (t *Trainer) optimizeOne(ctx context.Context, c optCall, out any) (bool, error) {
	rs, err := t.optimize(ctx, []optCall{c})
	if err != nil {
		return false, err
	}
	if !rs[0].OK {
		return false, nil
	}
	if err := json.Unmarshal(rs[0].JSON, out); err != nil {
		t.log.WarnContext(ctx, "optimizer reply has the wrong shape", "stage", c.Stage, "step", c.Step, "prompt", c.Name, "err", err)
		t.acct.CountInvalid(c.Stage)
		return false, nil
	}
	return true, nil
}

// accountHedged counts the losing attempt of a hedged task.
func (t *Trainer) accountHedged(role string, task *pb.Task, res *pb.Result) {
	t.acct.AddHedged(role, taskModel(t, task), res)
}

// taskModel is the model a task's calls are accounted to by default.
func taskModel(t *Trainer, task *pb.Task) string {
	if k, ok := task.GetKind().(*pb.Task_Rollout); ok {
		return k.Rollout.GetTarget().GetModel()
	}
	return t.s.Optimizer.GetModel()
}

func (t *Trainer) account(stage, role string, task *pb.Task, res *pb.Result) {
	model := taskModel(t, task)
	if first := t.acct.Add(stage, role, model, res); first && res.GetCached() && t.meters != nil {
		u := res.GetUsage()
		t.meters.RecordCacheHit(context.Background(), queue.KindOf(task), u.GetInputTokens()+u.GetOutputTokens())
	}
}
