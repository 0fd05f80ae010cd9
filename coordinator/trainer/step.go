package trainer

import (
	"context"
	"fmt"

	"github.com/skillfleet/skillfleet/coordinator/gate"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// Step actions, as SkillOpt names them.
const (
	ActAcceptNewBest = string(gate.AcceptNewBest)
	ActAccept        = string(gate.Accept)
	ActReject        = string(gate.Reject)
	ActForceAccept   = string(gate.ForceAccept)
	ActSkipNoPatches = "skip_no_patches"
	ActSkipNoRewrite = "skip_no_rewrite"
)

// plannedBatch is one accumulation batch of a step.
type plannedBatch struct {
	Index   int
	Seed    int64
	Indices []int // into the train split
}

// batchOut is what one accumulation batch's rollout and reflection produced.
type batchOut struct {
	Batch     plannedBatch
	Results   []rollResult
	NFail     int
	NSucc     int
	NInfra    int
	FailPatch [][]prompts.Item
	SuccPatch [][]prompts.Item
	// Summaries are the failure analysts' failure types, with the ids of the
	// failures each analyst saw (for the step buffer).
	Summaries []failureSummary
	Notes     []string
	Hard      float64
	Soft      float64
	Failed    []rollResult
}

type failureSummary struct {
	Types []prompts.FailureType
	IDs   []string
}

func (t *Trainer) runStep(ctx context.Context, epoch, inEpoch, g int, batches []plannedBatch) error {
	start := t.now()
	rec := &StepRecord{Step: g, Epoch: epoch, StepInEpoch: inEpoch + 1, Timing: map[string]float64{}, GateMetric: string(t.s.GateMetric), LRControl: string(t.s.LRControl)}
	cpuStart := processCPU()
	tokBefore := t.acct.Snapshot()
	t.prog.Step(epoch, t.s.NumEpochs, g, t.st.TotalSteps, t.st.CurrentScore, t.st.BestScore)
	current := t.st.Current
	t.prefetchNext(g, current)
	defer t.settlePrefetch(ctx)

	// ① rollout, ② reflect and ③'s merge trees as one stream: each
	// batch's analysts start when its rollouts are in, each merge when its
	// patches exist (see step_stream.go).
	ts := t.now()
	outs, failMerged, succMerged, reflected, err := t.reflectAndMerge(ctx, g, current, batches)
	if err != nil {
		return err
	}
	rec.Timing["rollout_reflect"] = reflected.Sub(ts).Seconds()
	var failPatches, succPatches [][]prompts.Item
	var notes []string
	var nScored int
	var hard, soft float64
	for _, o := range outs {
		failPatches = append(failPatches, o.FailPatch...)
		succPatches = append(succPatches, o.SuccPatch...)
		notes = append(notes, o.Notes...)
		n := o.NFail + o.NSucc
		nScored += n
		hard += o.Hard * float64(n)
		soft += o.Soft * float64(n)
		rec.RolloutN += len(o.Results)
		rec.RolloutInfraFails += o.NInfra
		rec.Batches = append(rec.Batches, BatchRecord{Index: o.Batch.Index, Seed: o.Batch.Seed, N: len(o.Results), Hard: o.Hard, Soft: o.Soft, NFailure: len(o.FailPatch), NSuccess: len(o.SuccPatch)})
	}
	if nScored > 0 {
		rec.RolloutHard, rec.RolloutSoft = hard/float64(nScored), soft/float64(nScored)
	}
	rec.NFailurePatches, rec.NSuccessPatches = len(failPatches), len(succPatches)
	if err := t.checkStop(); err != nil {
		return err
	}

	if len(failPatches) == 0 && len(succPatches) == 0 {
		t.flushAppendix(ctx, g, notes, rec)
		return t.finishStep(rec, ActSkipNoPatches, nil, start, cpuStart, tokBefore, outs, nil)
	}

	// ③ aggregate: the final merge of the two trees.
	ts = reflected
	merged, err := t.mergeFinal(ctx, g, failMerged, succMerged)
	if err != nil {
		return err
	}
	rec.NMerged = len(merged)
	rec.Timing["aggregate"] = t.now().Sub(ts).Seconds()
	t.rd.WriteJSON(StepFile(g, "merged_patch.json"), map[string]any{prompts.PayloadKey(t.s.UpdateMode): merged})
	if err := t.checkStop(); err != nil {
		return err
	}

	// ④ select: budget, then rank and clip.
	ts = t.now()
	ranked := merged
	if t.s.UpdateMode != prompts.ModeFullRewrite {
		budget, dec, err := t.budget(ctx, g, merged, rec)
		if err != nil {
			return err
		}
		rec.EditBudget, rec.LRDecision = &budget, dec
		ranked, err = t.rankAndSelect(ctx, g, merged, budget)
		if err != nil {
			return err
		}
	}
	rec.NRanked = len(ranked)
	rec.Timing["select"] = t.now().Sub(ts).Seconds()
	t.rd.WriteJSON(StepFile(g, "ranked_edits.json"), map[string]any{prompts.PayloadKey(t.s.UpdateMode): ranked})
	if err := t.checkStop(); err != nil {
		return err
	}

	// ⑤ update.
	ts = t.now()
	candidate, ok, err := t.update(ctx, g, current, ranked, rec)
	if err != nil {
		return err
	}
	rec.Timing["update"] = t.now().Sub(ts).Seconds()
	if !ok {
		t.flushAppendix(ctx, g, notes, rec)
		return t.finishStep(rec, ActSkipNoRewrite, nil, start, cpuStart, tokBefore, outs, ranked)
	}
	rec.CandidateHash, rec.CandidateLen = skillHash(candidate), len(candidate)
	t.rd.WriteFile(StepFile(g, "candidate_skill.md"), candidate)
	if err := t.checkStop(); err != nil {
		return err
	}

	// ⑥ gate (with the next step's rollouts started for both outcomes
	// when speculating).
	t.holdPrefetch()
	spec, err := t.speculate(ctx, g+1, candidate, current)
	if err != nil {
		return err
	}
	ts = t.now()
	action, m, err := t.gate(ctx, "gate", g, candidate, rec)
	if err != nil {
		return err
	}
	rec.Timing["evaluate"] = t.now().Sub(ts).Seconds()
	t.applyVerdict(action, candidate, m, fmt.Sprintf("step_%04d", g), g)
	t.flushAppendix(ctx, g, notes, rec)
	spec.settle(ctx, t.st.Current)
	return t.finishStep(rec, action, &m, start, cpuStart, tokBefore, outs, ranked)
}
