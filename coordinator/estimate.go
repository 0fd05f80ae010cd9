package coordinator

import (
	"cmp"
	"fmt"

	"github.com/skillfleet/skillfleet/coordinator/plan"
	"github.com/skillfleet/skillfleet/coordinator/schedule"
	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/pkg/bench"
)

// StageEstimate is the expected work of one stage of a run, from the
// loop's structure and the data's sizes, before any call is made.
type StageEstimate struct {
	Stage string
	Role  string // target or optimizer
	// Calls: the fewest the loop can make, the expected number under the
	// assumptions in Note, and the most.
	Lo, Exp, Hi int64
	// InPerCall and OutPerCall bound the tokens of one call.
	InPerCall, OutLo, OutHi int64
	Note                    string
}

// Estimate computes the stages' call counts for settings s on splits,
// with per-call token sizes measured on the items and the seed skill
// (about four characters a token).
func Estimate(s trainer.Settings, splits *bench.Splits) []StageEstimate {
	trainN := len(splits.Train)
	sel := len(splits.Val)
	if s.SelEnvNum > 0 && s.SelEnvNum < sel {
		sel = s.SelEnvNum
	}
	test := len(splits.Test)
	if s.TestEnvNum > 0 && s.TestEnvNum < test {
		test = s.TestEnvNum
	}
	acc := max(s.Accumulation, 1)
	spe := plan.StepsPerEpoch(trainN, s.BatchSize, acc)
	steps := int64(spe * s.NumEpochs)
	perBatch := int64(min(s.BatchSize, trainN))
	m := int64(max(s.MinibatchSize, 1))
	ceil := func(a, b int64) int64 { return (a + b - 1) / b }

	skillTok := int64(len(s.SkillInit)/4 + 1)
	itemTok := int64(0)
	for _, it := range splits.Train {
		itemTok += int64(len(it.Raw))
	}
	itemTok = itemTok/int64(max(trainN, 1))/4 + 1
	rolloutIn := skillTok + itemTok + 150
	maxOut := int64(cmp.Or(int(s.Target.GetMaxTokens()), 4096))
	optOut := int64(cmp.Or(int(s.Optimizer.GetMaxTokens()), 16384))
	// An analyst reads a minibatch of trajectories and the skill; a merge
	// reads patches; both write edits.
	analystIn := skillTok + m*(rolloutIn+200) + 1500
	mergeIn := skillTok + 2000

	var out []StageEstimate
	add := func(e StageEstimate) { out = append(out, e) }
	add(StageEstimate{Stage: "baseline", Role: "target", Lo: int64(sel), Exp: int64(sel), Hi: int64(sel), InPerCall: rolloutIn, OutLo: 5, OutHi: maxOut})
	add(StageEstimate{Stage: "rollout", Role: "target", Lo: steps * perBatch * int64(acc), Exp: steps * perBatch * int64(acc), Hi: steps * perBatch * int64(acc),
		InPerCall: rolloutIn, OutLo: 5, OutHi: maxOut})
	// Analysts: ceil(F/M) + ceil(S/M) per batch with F + S = B: ceil(B/M)
	// when one side is empty or F is a multiple of M, one more otherwise.
	lo, hi := ceil(perBatch, m), ceil(perBatch, m)+1
	exp := float64(hi) - 1/float64(m)
	note := "F+S=B: one call more unless failures are a multiple of the minibatch"
	if s.FailureOnly {
		lo, hi, exp = 0, ceil(perBatch, m), float64(ceil(perBatch, m))/2
		note = "failure-only: failures unknown before the run (half assumed)"
	}
	nb := steps * int64(acc)
	add(StageEstimate{Stage: "reflect", Role: "optimizer", Lo: nb * lo, Exp: int64(float64(nb)*exp + 0.5), Hi: nb * hi,
		InPerCall: analystIn, OutLo: 50, OutHi: optOut, Note: note})
	k := int64(max(s.MergeBatchSize, 2))
	mergeCalls := func(n int64) int64 { // calls of a merge tree over n patches
		c := int64(0)
		for n > 1 {
			groups := ceil(n, k)
			full := n / k
			c += full
			if rem := n % k; rem > 1 {
				c++
			}
			n = groups
		}
		return c
	}
	a := int64(acc)
	mhi := 2*mergeCalls(a*hi) + 1
	add(StageEstimate{Stage: "merge", Role: "optimizer", Lo: 0, Exp: steps * max(mergeCalls(a*(hi-1)), 1), Hi: steps * mhi,
		InPerCall: mergeIn, OutLo: 50, OutHi: optOut, Note: "expected: one side's patches merged per step; the final merge only when both sides have patches"})
	add(StageEstimate{Stage: "rank", Role: "optimizer", Lo: 0, Exp: steps / 2, Hi: steps, InPerCall: mergeIn, OutLo: 20, OutHi: optOut,
		Note: "only when more edits are merged than the step's budget"})
	if s.LRControl == schedule.ControlAutonomous {
		add(StageEstimate{Stage: "lr", Role: "optimizer", Lo: 0, Exp: steps, Hi: steps, InPerCall: mergeIn, OutLo: 20, OutHi: optOut})
	}
	if s.UpdateMode == "rewrite_from_suggestions" || s.UpdateMode == "full_rewrite_minibatch" {
		add(StageEstimate{Stage: "rewrite", Role: "optimizer", Lo: 0, Exp: steps, Hi: steps, InPerCall: mergeIn + skillTok, OutLo: skillTok, OutHi: optOut})
	}
	if s.UseGate {
		n := "every step gated on the whole selection split"
		if s.EarlyStop {
			n += "; early stop ends a gate once its verdict is certain (fewer calls)"
		}
		add(StageEstimate{Stage: "gate", Role: "target", Lo: 0, Exp: steps * int64(sel), Hi: steps * int64(sel), InPerCall: rolloutIn, OutLo: 5, OutHi: maxOut,
			Note: n + "; steps without patches are not gated; an unchanged candidate reuses its results"})
	}
	boundaries := int64(max(s.NumEpochs-1, 0)) // the first epoch's slow update is a placeholder
	if s.UseSlowUpdate {
		per := int64(2*max(s.SlowUpdateSamples, 0) + 1)
		add(StageEstimate{Stage: "slow_update", Role: "both", Lo: boundaries, Exp: boundaries * per, Hi: boundaries * per,
			InPerCall: rolloutIn, OutLo: 5, OutHi: maxOut, Note: fmt.Sprintf("per epoch after the first: 2×%d rollouts (some reused) + 1 call", s.SlowUpdateSamples)})
	}
	if s.UseMetaSkill {
		add(StageEstimate{Stage: "meta_skill", Role: "optimizer", Lo: boundaries, Exp: boundaries, Hi: boundaries, InPerCall: analystIn, OutLo: 50, OutHi: optOut})
	}
	add(StageEstimate{Stage: "final_selection", Role: "target", Lo: 0, Exp: 0, Hi: int64(sel), InPerCall: rolloutIn, OutLo: 5, OutHi: maxOut,
		Note: "only when the last skill is not the best one"})
	if s.EvalTest {
		add(StageEstimate{Stage: "test", Role: "target", Lo: int64(test), Exp: 2 * int64(test), Hi: 3 * int64(test), InPerCall: rolloutIn, OutLo: 5, OutHi: maxOut,
			Note: "seed, best and final skills; the same skill is measured once"})
	}
	return out
}
