package trainer

import (
	"context"
	"encoding/json"
	"fmt"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"

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
func (t *Trainer) optimize(ctx context.Context, calls []optCall) (_ []optResult, err error) {
	ctx, span := t.stageSpan(ctx, calls[0].Stage, len(calls))
	defer telemetry.End(span, &err)
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
	t.fill.optimizerWave(ctx)
	t.prog.StartWave(calls[0].Stage, len(tasks))
	waveStart := t.now()
	ran := 0
	defer func() { t.waves.Record(calls[0].Stage, "optimizer", len(tasks), ran, waveStart) }()
	out := make([]optResult, len(calls))
	for i, f := range futs {
		res, err := f.Wait(ctx)
		if err != nil {
			return nil, err
		}
		t.account(calls[i].Stage, "optimizer", tasks[i], res)
		if !t.replayed(tasks[i].GetId()) {
			ran++
		}
		ok := res.GetOutcome() == pb.Outcome_OUTCOME_OK
		t.prog.TaskDone(calls[i].Stage, ok)
		out[i] = optResult{OK: ok, JSON: res.GetOptimizer().GetJson(), Error: res.GetError()}
		if !ok {
			t.log.WarnContext(ctx, "optimizer call failed", "stage", calls[i].Stage, "step", calls[i].Step, "task_id", tasks[i].GetId(), "outcome", res.GetOutcome().String(), "err", res.GetError())
		}
	}
	return out, nil
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

func (t *Trainer) account(stage, role string, task *pb.Task, res *pb.Result) {
	model := ""
	switch k := task.GetKind().(type) {
	case *pb.Task_Rollout:
		model = k.Rollout.GetTarget().GetModel()
	default:
		model = t.s.Optimizer.GetModel()
	}
	if first := t.acct.Add(stage, role, model, res); first && res.GetCached() && t.meters != nil {
		u := res.GetUsage()
		t.meters.RecordCacheHit(context.Background(), queue.KindOf(task), u.GetInputTokens()+u.GetOutputTokens())
	}
}
