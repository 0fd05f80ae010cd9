package sim

import (
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// TestMiniTraining runs a bare training loop in-process: roll out a train
// batch with the current skill, send the failures to analyst_failure in
// minibatches (the real prompt texts), apply the edits naively (append the
// content, delete the target), repeat. The test score must rise from the
// seed skill's to a high one: the optimizer's edits really fix pitfalls.
func TestMiniTraining(t *testing.T) {
	t.Parallel()
	const preset, worldSeed = simbench.PresetDemo, 0
	p, _ := simbench.LookupPreset(preset)
	w, _ := simbench.Generate(preset, worldSeed)
	skill, _ := simbench.SeedSkill(preset, worldSeed)
	m := New(Options{})
	before := score(t, m, w.Test, skill)

	for step := range 6 {
		at := step * p.BatchSize % len(w.Train)
		var fails []prompts.Trajectory
		for _, it := range w.Train[at : at+p.BatchSize] {
			if ep := rollout(t, m, it, skill); ep.Hard < 1 {
				fails = append(fails, trajectory(it.ID, ep))
			}
		}
		for i := 0; i < len(fails); i += p.MinibatchSize {
			mb := fails[i:min(i+p.MinibatchSize, len(fails))]
			var out prompts.AnalystReply
			ask(t, m, prompts.AnalystFailure, prompts.ModePatch, prompts.AnalystInput{
				Mode: prompts.ModePatch, Skill: skill, Budget: p.LR, BatchSize: len(mb), Trajectories: mb,
			}, &out)
			for _, e := range out.Patch.Edits {
				if e.Op == "delete" {
					skill = strings.Replace(skill, e.Target, "", 1)
				} else {
					skill += "\n" + e.Content
				}
			}
		}
	}
	after := score(t, m, w.Test, skill)
	t.Logf("test score %.3f -> %.3f; final skill:\n%s", before, after, skill)
	if before >= 0.4 || after <= 0.8 {
		t.Errorf("test score %.3f -> %.3f, want from under 0.4 to over 0.8", before, after)
	}
}
