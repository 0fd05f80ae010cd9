package trainer

import (
	"context"
	"fmt"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/rundir"
	"github.com/skillfleet/skillfleet/pkg/telemetry"
)

// EvalResult is one skill's score on a split, per task type.
type EvalResult struct {
	Name      string               `json:"name"`
	SkillHash string               `json:"skill_hash"`
	Split     string               `json:"split"`
	ByType    map[string]TypeScore `json:"by_task_type"`
}

// Evaluate scores named skills on a split concurrently (the same rollout
// path training uses, so results are cached and resumable in the run dir).
func (t *Trainer) Evaluate(ctx context.Context, split string, names []string, skills []string) (_ []EvalResult, err error) {
	ctx, span := telemetry.StartSpan(ctx, t.tracer, telemetry.SpanEval, telemetry.Attrs{Run: t.s.RunID})
	defer telemetry.End(span, &err)
	items, err := t.splits.Get(split)
	if err != nil {
		return nil, err
	}
	switch split {
	case bench.SplitTest:
		items = t.testItems()
	case bench.SplitVal:
		items = t.selItems()
	}
	if len(items) == 0 {
		return nil, fmt.Errorf("split %s has no items", split)
	}
	out := make([]EvalResult, len(names))
	fns := make([]func() error, len(names))
	for i := range names {
		fns[i] = func() error {
			rs, _, err := t.rollout(ctx, rolloutReq{Stage: "eval_" + names[i], Skill: skills[i], Items: items, Split: split})
			if err != nil {
				return err
			}
			out[i] = EvalResult{Name: names[i], SkillHash: skillHash(skills[i]), Split: split, ByType: byTaskType(rs)}
			return nil
		}
	}
	if err := parallel(fns...); err != nil {
		return nil, err
	}
	// The spend of an evaluation is accounted like a run's: a campaign's
	// eval-only cells and no-skill columns read it from tokens.json.
	if err := t.rd.WriteJSON(rundir.TokensFile, t.acct.Report()); err != nil {
		return nil, err
	}
	if err := t.rd.WriteJSON("eval_summary.json", out); err != nil {
		return nil, err
	}
	return out, nil
}
