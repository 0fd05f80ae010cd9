package trainer

import (
	"encoding/json"

	"github.com/skillfleet/skillfleet/coordinator/plan"
	"github.com/skillfleet/skillfleet/coordinator/schedule"
	"github.com/skillfleet/skillfleet/internal/jsonx"
	"github.com/skillfleet/skillfleet/pkg/skill"
)

// This file binds the trainer to the pure decision packages.

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

func scheduleBudget(kind schedule.Kind, maxLR, minLR, total, t int) int {
	b, err := schedule.Budget(kind, maxLR, minLR, total, t)
	if err != nil {
		panic(err) // validated with the config
	}
	return b
}

func parseLR(raw json.RawMessage, available int) (int, bool) {
	return schedule.ParseLearningRate(raw, available)
}

// The protected regions live in SKILL.md: for a package they are read and
// written there (package.go).
func injectSlowPlaceholder(s string) string { return onEntry(s, skill.InjectSlowPlaceholder) }
func slowContent(s string) string           { return skill.SlowContent(entryOf(s)) }
func replaceSlowBlock(s, c string) string {
	return onEntry(s, func(e string) string { return skill.ReplaceSlowBlock(e, c) })
}
func injectAppendix(s string) string  { return onEntry(s, skill.InjectAppendix) }
func appendixNotes(s string) []string { return skill.AppendixNotes(entryOf(s)) }
func dedupNotes(n []string) []string  { return skill.DedupNotes(n) }
func writeAppendix(s string, n []string) string {
	return onEntry(s, func(e string) string { return skill.FlushAppendix(e, n) })
}

func restoreProtected(candidate, current string) string {
	out, _ := skill.RestoreProtected(candidate, current)
	return out
}

func intField(raw json.RawMessage) (int, bool) {
	return jsonx.Int(raw)
}
