package coordinator

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"text/tabwriter"

	"github.com/skillfleet/skillfleet/coordinator/plan"
	"github.com/skillfleet/skillfleet/coordinator/schedule"
	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/config"
	"github.com/skillfleet/skillfleet/pkg/pricing"
	"github.com/skillfleet/skillfleet/pkg/usage"
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
	if s.Prefetch == trainer.PrefetchOn || s.Prefetch == trainer.PrefetchAuto {
		// A step whose gate accepts throws its prefetched rollouts (the
		// next step's, in the same epoch) away.
		most := int64(max(spe-1, 0)*s.NumEpochs) * perBatch * int64(acc)
		note := "the next step's rollouts, prefetched and thrown away when a gate accepts (runtime.prefetch=on): one batch per accepted step"
		if s.Prefetch == trainer.PrefetchAuto {
			note = "runtime.prefetch=auto: nothing at a steady latency; under a heavy tail, one batch per accepted step (the next step's rollouts, prefetched and thrown away)"
		}
		add(StageEstimate{Stage: trainer.PrefetchStage, Role: "target", Lo: 0, Exp: 0, Hi: most, InPerCall: rolloutIn, OutLo: 5, OutHi: maxOut, Note: note})
	}
	if s.EvalTest {
		add(StageEstimate{Stage: "test", Role: "target", Lo: int64(test), Exp: 2 * int64(test), Hi: 3 * int64(test), InPerCall: rolloutIn, OutLo: 5, OutHi: maxOut,
			Note: "seed, best and final skills; the same skill is measured once"})
	}
	return append(out, hedgeEstimates(s, out)...)
}

// hedgeExpected is the share of the waited-for tasks that wave hedging is
// expected to copy: measured on the paper preset under a log-normal tail
// of sigma 1 (docs/performance.md); at a steady latency it copies next
// to nothing.
const hedgeExpected = 0.02

// hedgeEstimates are the copies wave hedging may make, per role: none at
// the fewest, about hedgeExpected of the calls expected, and at most the
// run's cap (runtime.hedge_max_extra) of the most calls plus one wave's.
func hedgeEstimates(s trainer.Settings, stages []StageEstimate) []StageEstimate {
	if !s.Hedge.Enabled {
		return nil
	}
	var out []StageEstimate
	for _, role := range []string{"target", "optimizer"} {
		var exp, hi, in, oLo, oHi int64
		for _, e := range stages {
			if e.Role != role || e.Stage == trainer.PrefetchStage {
				continue // prefetched rollouts are not waited for, so never copied
			}
			exp += e.Exp
			hi += e.Hi
			in += e.Exp * e.InPerCall
			oLo += e.Exp * e.OutLo
			oHi += e.Exp * e.OutHi
		}
		if hi == 0 {
			continue
		}
		div := max(exp, 1)
		out = append(out, StageEstimate{Stage: "hedge", Role: role, Lo: 0,
			Exp: int64(float64(exp)*hedgeExpected + 0.5), Hi: int64(math.Ceil(s.Hedge.MaxExtra*float64(hi))) + 1,
			InPerCall: in / div, OutLo: oLo / div, OutHi: oHi / div,
			Note: fmt.Sprintf("copies of a wave's stragglers (runtime.hedge): about none at a steady latency, about %.0f%% of the calls under a heavy tail, at most %.0f%% (runtime.hedge_max_extra)",
				100*hedgeExpected, 100*s.Hedge.MaxExtra)})
	}
	return out
}

// WriteEstimate writes to w the expected calls, tokens and dollars (at
// prices) of each stage of a run of cfg, before any call is made. Nothing
// of the run is written: a generated world goes to a temporary directory.
func WriteEstimate(w io.Writer, cfg *config.Config, prices *pricing.Table) error {
	tmp, err := os.MkdirTemp("", "skillfleet-estimate-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	splits, err := LoadSplits(cfg, tmp)
	if err != nil {
		return err
	}
	s, err := FromConfig(cfg, "estimate", tmp)
	if err != nil {
		return configErr(err)
	}
	stages := Estimate(s, splits)
	fmt.Fprintf(w, "estimate for %s: %s on %s (%d train / %d val / %d test items), %d epochs × batch %d\n\n",
		cfg.File, cfg.Env.Name, s.Target.GetModel(), len(splits.Train), len(splits.Val), len(splits.Test), s.NumEpochs, s.BatchSize)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "stage\trole\tcalls (low)\texpected\t(high)\tinput tokens (expected)\toutput tokens (expected, range)\t")
	var calls [3]int64
	var inTok, outLo, outHi int64
	var usdLo, usdHi float64
	priced := true
	for _, e := range stages {
		model := s.Target.GetModel()
		if e.Role == "optimizer" {
			model = s.Optimizer.GetModel()
		}
		in := e.Exp * e.InPerCall
		oLo, oHi := e.Exp*e.OutLo, e.Exp*e.OutHi
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%s\t%s–%s\t\n", e.Stage, e.Role, e.Lo, e.Exp, e.Hi, usage.FormatCount(in), usage.FormatCount(oLo), usage.FormatCount(oHi))
		calls[0] += e.Lo
		calls[1] += e.Exp
		calls[2] += e.Hi
		inTok += in
		outLo += oLo
		outHi += oHi
		lo, err1 := prices.Cost(model, e.Lo*e.InPerCall, 0, e.Lo*e.OutLo)
		hi, err2 := prices.Cost(model, e.Hi*e.InPerCall, 0, e.Hi*e.OutHi)
		if err1 != nil || err2 != nil {
			priced = false
		}
		usdLo += lo
		usdHi += hi
	}
	fmt.Fprintf(tw, "total\t\t%d\t%d\t%d\t%s\t%s–%s\t\n", calls[0], calls[1], calls[2], usage.FormatCount(inTok), usage.FormatCount(outLo), usage.FormatCount(outHi))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	if priced {
		fmt.Fprintf(w, "cost: $%.2f – $%.2f (low calls and short replies to high calls and replies at the output cap; prices of %s as of %s)\n",
			usdLo, usdHi, prices.Source(), prices.AsOf())
	} else {
		fmt.Fprintf(w, "cost: not priced (%s or %s is not in the price table; give one with --prices)\n", s.Target.GetModel(), s.Optimizer.GetModel())
	}
	fmt.Fprintln(w, "\nassumptions:")
	for _, e := range stages {
		if e.Note != "" {
			fmt.Fprintf(w, "  %-15s %s\n", e.Stage, e.Note)
		}
	}
	fmt.Fprintln(w, "  tokens          about four characters a token; items and the seed skill measured on the data")
	fmt.Fprintln(w, strings.TrimSpace(`
Gate and merge counts depend on what the model does (patches found, early stop, accepted edits); the expected column
assumes every step is gated on the whole selection split, so it is an upper estimate there.`))
	return nil
}
