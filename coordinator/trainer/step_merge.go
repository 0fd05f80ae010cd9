package trainer

import (
	"context"
	"encoding/json"

	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// mergeTree merges one side's patches level by level in groups of
// merge_batch_size until one patch remains.
func (t *Trainer) mergeTree(ctx context.Context, g int, side string, patches [][]prompts.Item) ([]prompts.Item, error) {
	switch len(patches) {
	case 0:
		return nil, nil
	case 1:
		return patches[0], nil
	}
	name := prompts.MergeFailure
	if side == "success" {
		name = prompts.MergeSuccess
	}
	cur := patches
	for level := 1; len(cur) > 1; level++ {
		var groups [][][]prompts.Item
		for i := 0; i < len(cur); i += t.s.MergeBatchSize {
			groups = append(groups, cur[i:min(i+t.s.MergeBatchSize, len(cur))])
		}
		var calls []optCall
		var callGroup []int
		for gi, grp := range groups {
			if len(grp) == 1 {
				continue
			}
			calls = append(calls, optCall{Stage: "merge", Step: g, Name: name, Index: level*100 + gi, Mode: t.s.UpdateMode, Skill: t.st.Current,
				Payload: prompts.MergeInput{Kind: name, Mode: t.s.UpdateMode, Skill: t.st.Current, MetaSkill: t.metaSkillBlock(), Level: level, Patches: grp}})
			callGroup = append(callGroup, gi)
		}
		merged := make([][]prompts.Item, len(groups))
		for gi, grp := range groups {
			if len(grp) == 1 {
				merged[gi] = grp[0]
			}
		}
		if len(calls) > 0 {
			res, err := t.optimize(ctx, calls)
			if err != nil {
				return nil, err
			}
			for ci, r := range res {
				gi := callGroup[ci]
				var rep prompts.MergeReply
				var items []prompts.Item
				if r.OK && json.Unmarshal(r.JSON, &rep) == nil {
					items = rep.Items(t.s.UpdateMode)
				}
				if items == nil {
					// Fallback: the group's items concatenated.
					for _, p := range groups[gi] {
						for _, it := range p {
							if it.MergeLevel == 0 {
								it.MergeLevel = level
							}
							items = append(items, it)
						}
					}
				} else {
					for k := range items {
						items[k].MergeLevel = level
					}
				}
				merged[gi] = items
			}
		}
		cur = merged
	}
	return cur[0], nil
}

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
