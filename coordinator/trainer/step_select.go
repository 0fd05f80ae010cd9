package trainer

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/skillfleet/skillfleet/coordinator/schedule"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// budget returns the step's edit budget (and advances the scheduler in fixed mode).
func (t *Trainer) budget(ctx context.Context, g int, merged []prompts.Item, rec *StepRecord) (int, *LRDecision, error) {
	if t.s.LRControl != schedule.ControlAutonomous {
		t.st.SchedulerT++
		return scheduleBudget(t.s.LRScheduler, t.s.LR, t.s.MinLR, t.st.TotalSteps, t.st.SchedulerT), nil, nil
	}
	descs := make([]string, len(merged))
	for i, it := range merged {
		descs[i] = describeItem(it)
	}
	in := prompts.LRInput{Kind: prompts.LRController, Skill: t.st.Current, MetaSkill: t.metaSkillBlock(), StepBuffer: t.stepBuffer(), Items: descs,
		N: rec.RolloutN, Hard: round6(rec.RolloutHard), Soft: round6(rec.RolloutSoft)}
	var rep prompts.LRReply
	ok, err := t.optimizeOne(ctx, optCall{Stage: "lr", Step: g, Name: prompts.LRController, Skill: t.st.Current, Payload: in}, &rep)
	if err != nil {
		return 0, nil, err
	}
	dec := &LRDecision{Fallback: true}
	if ok {
		dec.LearningRate, dec.Fallback = parseLR(rep.LearningRate, len(merged))
		dec.Reasoning, dec.Confidence = rep.Reasoning, rep.Confidence
	}
	return dec.LearningRate, dec, nil
}

func describeItem(it prompts.Item) string {
	switch {
	case it.Op != "":
		return fmt.Sprintf("%s: %s", it.Op, firstLine(it.Content+it.Target))
	case it.Title != "":
		return fmt.Sprintf("%s: %s", it.Type, it.Title)
	default:
		return firstLine(strings.Join(it.ChangeSummary, "; "))
	}
}

func (t *Trainer) rankAndSelect(ctx context.Context, g int, merged []prompts.Item, budget int) ([]prompts.Item, error) {
	if budget <= 0 {
		return nil, nil // B11: a zero budget makes no ranking call
	}
	if len(merged) <= budget {
		return merged, nil
	}
	var rep prompts.RankReply
	ok, err := t.optimizeOne(ctx, optCall{Stage: "rank", Step: g, Name: prompts.Ranking, Mode: t.s.UpdateMode, Skill: t.st.Current,
		Payload: prompts.RankInput{Kind: prompts.Ranking, Mode: t.s.UpdateMode, Skill: t.st.Current, MetaSkill: t.metaSkillBlock(), Budget: budget, Items: merged}}, &rep)
	if err != nil {
		return nil, err
	}
	var out []prompts.Item
	if ok {
		seen := map[int]bool{}
		for _, raw := range rep.SelectedIndices {
			i, valid := strictInt(raw)
			if !valid || i < 0 || i >= len(merged) || seen[i] {
				continue
			}
			seen[i] = true
			out = append(out, merged[i])
			if len(out) == budget {
				break
			}
		}
	}
	if len(out) == 0 {
		out = merged[:budget]
	}
	return out, nil
}

// strictInt accepts JSON integers (and integral floats) only.
func strictInt(raw json.RawMessage) (int, bool) {
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || f != float64(int(f)) {
		return 0, false
	}
	return int(f), true
}
