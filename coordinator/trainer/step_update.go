package trainer

import (
	"context"
	"fmt"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// update builds the candidate skill.
func (t *Trainer) update(ctx context.Context, g int, current string, ranked []prompts.Item, rec *StepRecord) (string, bool, error) {
	switch t.s.UpdateMode {
	case prompts.ModeRewrite:
		var rep prompts.RewriteReply
		model := t.s.Rewriter
		ok, err := t.optimizeOne(ctx, optCall{Stage: "rewrite", Step: g, Name: prompts.Rewrite, Model: model, Skill: current,
			Payload: prompts.RewriteInput{Kind: prompts.Rewrite, Skill: entryOf(current), Suggestions: ranked, StepBuffer: t.stepBuffer()}}, &rep)
		if err != nil || !ok || strings.TrimSpace(rep.NewSkill) == "" {
			return "", false, err
		}
		rec.RewriteSummary = rep.ChangeSummary
		cand, ok := rewritten(rep.NewSkill, current)
		return cand, ok, nil
	case prompts.ModeFullRewrite:
		for _, it := range ranked {
			if strings.TrimSpace(it.NewSkill) != "" {
				rec.RewriteSummary = it.ChangeSummary
				cand, ok := rewritten(it.NewSkill, current)
				return cand, ok, nil
			}
		}
		return "", false, nil
	default:
		cand, reports, err := applyEdits(current, ranked, t.s.NormalizeOps, t.s.TrainDescription)
		if err != nil {
			return "", false, fmt.Errorf("step %d: applying edits to the skill package: %w", g, err)
		}
		rec.EditApply = map[string]int{}
		for _, r := range reports {
			rec.EditApply[string(r.Status)]++
		}
		t.rd.WriteJSON(StepFile(g, "edit_apply_report.json"), editReports(current, cand, reports))
		return cand, true, nil
	}
}
