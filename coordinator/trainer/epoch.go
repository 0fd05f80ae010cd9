package trainer

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/skillfleet/skillfleet/coordinator/plan"
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

type pairRecord = prompts.Pair

// Longitudinal pair categories.
const (
	catImproved   = "improved"
	catRegressed  = "regressed"
	catPersistent = "persistent_fail"
	catStable     = "stable_success"
)

// epochBoundary runs the slow update, then the meta skill, after the last
// step of epoch e.
func (t *Trainer) epochBoundary(ctx context.Context, e, lastStep int) error {
	t.epochLast[e] = t.st.Current
	// The slow update's pairs (with their trajectories) go to this
	// epoch's meta skill and no further: a run keeps no epoch's pairs.
	var pairs *[]pairRecord
	if t.s.UseSlowUpdate {
		var err error
		if pairs, err = t.slowUpdate(ctx, e, lastStep); err != nil {
			return err
		}
	}
	t.epochSkill[e] = t.st.Current
	if err := t.checkStop(); err != nil {
		return err
	}
	if t.s.UseMetaSkill {
		if err := t.metaSkillUpdate(ctx, e, lastStep, pairs); err != nil {
			return err
		}
	}
	return t.checkStop()
}

// slowUpdate returns the pairs it compared (nil at epoch 1, which has no
// previous epoch to compare with).
func (t *Trainer) slowUpdate(ctx context.Context, e, lastStep int) (*[]pairRecord, error) {
	t.prog.Phase(fmt.Sprintf("epoch %d: slow update", e))
	if e == 1 {
		next := injectSlowPlaceholder(t.st.Current)
		t.setCurrent(next, t.st.CurrentScore, false, fmt.Sprintf("slow_update_placeholder_epoch_%02d", e))
		t.rd.WriteFile(SkillFile(lastStep), t.st.Current)
		t.rd.WriteJSON(fmt.Sprintf("slow_update/epoch_%02d/slow_result.json", e), map[string]any{"action": "inject_placeholder", "unscored": true})
		if err := t.rd.Emit(Event{Type: "slow_update", Epoch: e, Step: lastStep, Action: "inject_placeholder", CurrentHash: t.st.CurrentHash, BestHash: t.st.BestHash, CurrentScore: round6(t.st.CurrentScore), BestScore: round6(t.st.BestScore), Unscored: true}); err != nil {
			return nil, err
		}
		return nil, t.saveState()
	}
	prev := t.epochSkill[e-1]
	pairs, err := t.longitudinalPairs(ctx, e, "slow_update", prev, t.st.Current)
	if err != nil {
		return nil, err
	}
	in := prompts.EpochInput{Kind: prompts.SlowUpdate, PrevSkill: prev, Skill: t.st.Current, Previous: slowContent(t.st.Current), Counts: countPairs(pairs), Pairs: pairs}
	var rep prompts.SlowUpdateReply
	ok, err := t.optimizeOne(ctx, optCall{Stage: "slow_update", Step: lastStep, Name: prompts.SlowUpdate, Skill: t.st.Current, Payload: in}, &rep)
	if err != nil {
		return nil, err
	}
	content := strings.TrimSpace(rep.SlowUpdateContent)
	dir := fmt.Sprintf("slow_update/epoch_%02d/", e)
	t.rd.WriteJSON(dir+"comparison_pairs.json", stripTrajectories(pairs))
	ev := Event{Type: "slow_update", Epoch: e, Step: lastStep}
	switch {
	case !ok || content == "":
		ev.Action = "no_content"
	default:
		cand := replaceSlowBlock(t.st.Current, content)
		t.rd.WriteFile(dir+"candidate_skill.md", cand)
		ev.CandidateHash = skillHash(cand)
		origin := fmt.Sprintf("slow_update_epoch_%02d", e)
		if t.s.SlowUpdateGate {
			rec := &StepRecord{}
			action, m, err := t.gate(ctx, "slow_update_gate", lastStep, cand, rec)
			if err != nil {
				return nil, err
			}
			t.applyVerdict(action, cand, m, origin, lastStep)
			ev.Action = action
			ev.CandidateScore = rec.CandidateScore
			ev.EarlyStopped = rec.EarlyStopped
		} else {
			// B6: a forced slow update changes the text without a score; the
			// current skill is marked unscored instead of faking a cache entry.
			t.setCurrent(cand, t.st.CurrentScore, false, origin)
			ev.Action = ActForceAccept
			ev.Unscored = true
		}
	}
	t.rd.WriteJSON(dir+"slow_result.json", map[string]any{"action": ev.Action, "candidate_hash": ev.CandidateHash, "content": content})
	t.rd.WriteFile(SkillFile(lastStep), t.st.Current)
	t.writeBest()
	ev.CurrentHash, ev.BestHash, ev.CurrentScore, ev.BestScore = t.st.CurrentHash, t.st.BestHash, round6(t.st.CurrentScore), round6(t.st.BestScore)
	ev.Counts = countPairs(pairs)
	if err := t.rd.Emit(ev); err != nil {
		return nil, err
	}
	t.prog.Decision(fmt.Sprintf("epoch %d slow update: %s", e, ev.Action), t.st.CurrentScore, t.st.BestScore)
	return &pairs, t.saveState()
}

// metaSkillUpdate writes the meta skill of epoch e from the slow update's
// pairs, or, when there was no slow update, from pairs of its own.
func (t *Trainer) metaSkillUpdate(ctx context.Context, e, lastStep int, slow *[]pairRecord) error {
	t.prog.Phase(fmt.Sprintf("epoch %d: meta skill", e))
	dir := fmt.Sprintf("meta_skill/epoch_%02d/", e)
	if e == 1 {
		t.rd.WriteJSON(dir+"meta_skill_result.json", map[string]any{"action": "skip_first_epoch"})
		return t.rd.Emit(Event{Type: "meta_skill", Epoch: e, Step: lastStep, Action: "skip_first_epoch"})
	}
	var pairs []pairRecord
	if slow != nil {
		pairs = *slow
	} else {
		var err error
		pairs, err = t.longitudinalPairs(ctx, e, "meta_skill", t.epochLast[e-1], t.epochLast[e])
		if err != nil {
			return err
		}
	}
	in := prompts.EpochInput{Kind: prompts.MetaSkill, PrevSkill: t.epochLast[e-1], Skill: t.epochLast[e], Previous: t.metaSkill, Counts: countPairs(pairs), Pairs: pairs}
	var rep prompts.MetaSkillReply
	okCall, err := t.optimizeOne(ctx, optCall{Stage: "meta_skill", Step: lastStep, Name: prompts.MetaSkill, Skill: t.epochLast[e], Payload: in}, &rep)
	if err != nil {
		return err
	}
	action := "no_content"
	if c := strings.TrimSpace(rep.MetaSkillContent); okCall && c != "" {
		t.metaSkill = c
		action = "update"
	}
	t.st.MetaSkill = t.metaSkill
	t.rd.WriteJSON(dir+"meta_skill_result.json", map[string]any{"action": action, "meta_skill_content": t.metaSkill})
	if err := t.rd.Emit(Event{Type: "meta_skill", Epoch: e, Step: lastStep, Action: action, MetaHash: skillHash(t.metaSkill)}); err != nil {
		return err
	}
	return t.saveState()
}

// longitudinalPairs rolls out prev and curr on the epoch's train sample
// (concurrently) and pairs the outcomes per item, applying the pair policy.
func (t *Trainer) longitudinalPairs(ctx context.Context, e int, stage, prev, curr string) ([]pairRecord, error) {
	sample := plan.SlowUpdateSample(len(t.splits.Train), t.s.Seed, e, t.s.SlowUpdateSamples)
	n := len(sample)
	pairs, err := t.pairWave(ctx, stage, e, prev, curr, sample)
	if err != nil {
		return nil, err
	}
	var kept []pairRecord
	switch t.s.PairPolicy {
	case PairUnchanged:
		for _, p := range pairs {
			if p.Category == catPersistent || p.Category == catStable {
				kept = append(kept, p)
			}
		}
	case PairChanged:
		for _, p := range pairs {
			if p.Category == catImproved || p.Category == catRegressed {
				kept = append(kept, p)
			}
		}
		// Top up from the rest of the shuffled train split, a wave at a time
		// (SkillOpt does this one item at a time), keeping item order.
		rest := plan.TopUpOrder(len(t.splits.Train), t.s.Seed, e, sample)
		for next := 0; len(kept) < n && next < len(rest); {
			need := n - len(kept)
			var chunk []int
			for _, tu := range rest[next:min(next+need, len(rest))] {
				chunk = append(chunk, tu.Item)
			}
			next += len(chunk)
			more, err := t.pairWave(ctx, stage+"_topup", e, prev, curr, chunk)
			if err != nil {
				return nil, err
			}
			for _, p := range more {
				if (p.Category == catImproved || p.Category == catRegressed) && len(kept) < n {
					kept = append(kept, p)
				}
			}
		}
		t.rd.WriteJSON(fmt.Sprintf("%s/epoch_%02d/comparison_pairs_all.json", stage, e), stripTrajectories(pairs))
	default:
		kept = pairs
	}
	return kept, nil
}

func (t *Trainer) pairWave(ctx context.Context, stage string, e int, prev, curr string, idx []int) ([]pairRecord, error) {
	items := make([]bench.Item, len(idx))
	for i, j := range idx {
		items[i] = t.splits.Train[j]
	}
	var pr, cr []rollResult
	var err error
	if prev == curr {
		// An epoch that changed nothing pairs the skill with itself: one
		// wave serves both sides. Two waves would submit the same task ids
		// and share their futures, and a hedge copy winning in one wave
		// withdraws the original the other is still waiting for: that
		// pair would be dropped as an infrastructure failure, changing
		// the slow update's and the meta skill's prompts with the timing.
		pr, _, err = t.rollout(ctx, rolloutReq{Stage: stage, Step: -e, Skill: curr, Items: items, Split: bench.SplitTrain})
		cr = pr
	} else {
		err = parallel(
			func() (err error) {
				pr, _, err = t.rollout(ctx, rolloutReq{Stage: stage, Step: -e, Skill: prev, Items: items, Split: bench.SplitTrain})
				return
			},
			func() (err error) {
				cr, _, err = t.rollout(ctx, rolloutReq{Stage: stage, Step: -e, Skill: curr, Items: items, Split: bench.SplitTrain})
				return
			},
		)
	}
	if err != nil {
		return nil, err
	}
	var out []pairRecord
	for i := range items {
		if !pr[i].ok() || !cr[i].ok() {
			continue // an infrastructure failure is not an outcome
		}
		p := pairRecord{ID: items[i].ID, Task: cr[i].Res.GetRollout().GetTaskDescription(), Prev: outcomeOf(pr[i]), Curr: outcomeOf(cr[i])}
		po, co := pr[i].hard() != 0, cr[i].hard() != 0
		switch {
		case !po && co:
			p.Category = catImproved
		case po && !co:
			p.Category = catRegressed
		case !po && !co:
			p.Category = catPersistent
		default:
			p.Category = catStable
		}
		if p.Category != catStable {
			p.PrevTrajectory = t.trajectoryOf(pr[i]).Messages
			p.CurrTrajectory = t.trajectoryOf(cr[i]).Messages
		}
		out = append(out, p)
	}
	return out, nil
}

func outcomeOf(r rollResult) prompts.Outcome {
	ro := r.Res.GetRollout()
	return prompts.Outcome{Hard: ro.GetHard(), Soft: ro.GetSoft(), PredictedAnswer: ro.GetAnswer(), FailReason: ro.GetFailReason()}
}

func countPairs(ps []pairRecord) map[string]int {
	c := map[string]int{catImproved: 0, catRegressed: 0, catPersistent: 0, catStable: 0}
	for _, p := range ps {
		c[p.Category]++
	}
	return c
}

func stripTrajectories(ps []pairRecord) []pairRecord {
	out := make([]pairRecord, len(ps))
	for i, p := range ps {
		p.PrevTrajectory, p.CurrTrajectory = nil, nil
		out[i] = p
	}
	return out
}

var _ = json.Marshal
