package trainer

import (
	"context"
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
			Payload: prompts.RewriteInput{Kind: prompts.Rewrite, Skill: current, Suggestions: ranked, StepBuffer: t.stepBuffer()}}, &rep)
		if err != nil || !ok || strings.TrimSpace(rep.NewSkill) == "" {
			return "", false, err
		}
		rec.RewriteSummary = rep.ChangeSummary
		return restoreProtected(strings.TrimRight(rep.NewSkill, " \t\r\n")+"\n", current), true, nil
	case prompts.ModeFullRewrite:
		for _, it := range ranked {
			if strings.TrimSpace(it.NewSkill) != "" {
				rec.RewriteSummary = it.ChangeSummary
				return restoreProtected(strings.TrimRight(it.NewSkill, " \t\r\n")+"\n", current), true, nil
			}
		}
		return "", false, nil
	default:
		cand, reports := applyEdits(current, ranked, t.s.NormalizeOps)
		rec.EditApply = map[string]int{}
		for _, r := range reports {
			rec.EditApply[string(r.Status)]++
		}
		t.rd.WriteJSON(StepFile(g, "edit_apply_report.json"), reports)
		return cand, true, nil
	}
}
