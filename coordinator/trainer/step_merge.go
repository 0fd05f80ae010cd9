package trainer

import (
	"context"

	"github.com/skillfleet/skillfleet/pkg/prompts"
)

func (t *Trainer) mergeFinal(ctx context.Context, g int, fail, succ []prompts.Item) ([]prompts.Item, error) {
	switch {
	case len(fail) == 0 && len(succ) == 0:
		return nil, nil
	case len(succ) == 0:
		return fail, nil
	case len(fail) == 0:
		return succ, nil
	}
	var rep prompts.MergeReply
	ok, err := t.optimizeOne(ctx, optCall{Stage: "merge", Step: g, Name: prompts.MergeFinal, Mode: t.s.UpdateMode, Skill: t.st.Current,
		Payload: prompts.MergeFinalInput{Kind: prompts.MergeFinal, Mode: t.s.UpdateMode, Skill: t.st.Current, MetaSkill: t.metaSkillBlock(), Failure: fail, Success: succ}}, &rep)
	if err != nil {
		return nil, err
	}
	if ok {
		if items := rep.Items(t.s.UpdateMode); items != nil {
			return items, nil
		}
	}
	return append(append([]prompts.Item{}, fail...), succ...), nil
}
