package coordinator

import (
	"encoding/json"

	"github.com/skillfleet/skillfleet/coordinator/dispatch"
	"github.com/skillfleet/skillfleet/coordinator/gate"
	"github.com/skillfleet/skillfleet/coordinator/plan"
	"github.com/skillfleet/skillfleet/coordinator/schedule"
	"github.com/skillfleet/skillfleet/pkg/jsonx"
	"github.com/skillfleet/skillfleet/pkg/prompts"
	"github.com/skillfleet/skillfleet/pkg/skill"
)

// This file binds the trainer to the pure decision packages.

type dispatchFuture = dispatch.Future

func skillHash(text string) string { return skill.Hash(text) }

func epochBatches(n, batchSize, acc int, seed int64, epoch, spe int) []plannedBatch {
	bs, err := plan.EpochBatches(n, batchSize, acc, seed, epoch)
	if err != nil {
		panic(err) // sizes were validated before the run started
	}
	out := make([]plannedBatch, len(bs))
	for i, b := range bs {
		out[i] = plannedBatch{Index: b.Index, Seed: b.Seed, Indices: b.Items}
	}
	_ = spe
	return out
}

func minibatches(fails, succs []int, batchSeed int64, m int) (f, s [][]int) {
	return plan.Minibatches(fails, succs, batchSeed, m)
}

// slowOrder is the epoch's shuffled train order for longitudinal samples
// (its prefix is the sample; the rest is the top-up order).
func slowOrder(n int, seed int64, epoch int) []int {
	return plan.SlowUpdateSample(n, seed, epoch, n)
}

func scheduleBudget(kind string, maxLR, minLR, total, t int) int {
	b, err := schedule.Budget(schedule.Kind(kind), maxLR, minLR, total, t)
	if err != nil {
		panic(err) // validated with the config
	}
	return b
}

func parseLR(raw json.RawMessage, available int) (int, bool) {
	return schedule.ParseLearningRate(raw, available)
}

func gateScore(hard, soft float64, metric string, w float64) float64 {
	return gate.Score(hard, soft, gate.Metric(metric), w)
}

func decide(cand, current, best float64, useGate bool) string {
	return string(gate.Decide(cand, current, best, useGate).Action)
}

func semanticDensity(text string, words []string) float64 {
	return gate.SemanticDensity(text, words)
}

func applyEdits(current string, items []prompts.Item, normalize bool) (string, []skill.Report) {
	return skill.Apply(current, skill.FromItems(items), skill.ApplyOptions{NormalizeOps: normalize})
}

func injectSlowPlaceholder(s string) string { return skill.InjectSlowPlaceholder(s) }
func slowContent(s string) string           { return skill.SlowContent(s) }
func replaceSlowBlock(s, c string) string   { return skill.ReplaceSlowBlock(s, c) }
func injectAppendix(s string) string        { return skill.InjectAppendix(s) }
func appendixNotes(s string) []string       { return skill.AppendixNotes(s) }
func dedupNotes(n []string) []string        { return skill.DedupNotes(n) }
func writeAppendix(s string, n []string) string {
	return skill.FlushAppendix(s, n)
}

func restoreProtected(candidate, current string) string {
	out, _ := skill.RestoreProtected(candidate, current)
	return out
}

func intField(raw json.RawMessage) (int, bool) {
	return jsonx.Int(raw)
}
