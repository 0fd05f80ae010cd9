package sim

import (
	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/bench/synth"
)

// The optimizer's view of the rules: the sim benchmark's pitfalls, then
// the rules only the synthetic worlds have ([synth.WorldRules]), so that
// an analyst recognises, proposes and deletes a world's rules as it does
// the sim benchmark's. For a skill and a trajectory of the sim benchmark
// the answers are the same as simbench's alone.

// asPitfall returns a world rule in the optimizer's pitfall shape (its
// wrong answer stays with the rule: the optimizer never computes one).
func asPitfall(r synth.Rule) simbench.Pitfall {
	return simbench.Pitfall{ID: r.ID, Category: r.Category, Cue: r.Cue, Rule: r.Text, Paraphrases: r.Paraphrases,
		Stems: r.Stems, Vague: r.Vague, Harmful: r.Harmful, HarmfulStems: r.HarmfulStems, Description: r.Description}
}

// lookupPitfall returns the pitfall or world rule with the given id.
func lookupPitfall(id string) (simbench.Pitfall, bool) {
	if p, ok := simbench.Lookup(id); ok {
		return p, true
	}
	if r, ok := synth.LookupRule(id); ok {
		return asPitfall(r), true
	}
	return simbench.Pitfall{}, false
}

// allPitfalls returns the sim benchmark's catalogue, then the world rules.
func allPitfalls() []simbench.Pitfall {
	out := simbench.Catalogue()
	for _, r := range synth.WorldRules() {
		out = append(out, asPitfall(r))
	}
	return out
}

// skillView answers coverage questions about one skill for every rule.
type skillView struct {
	sim  simbench.SkillView
	text string
}

func viewSkill(skill string) skillView { return skillView{sim: simbench.ViewSkill(skill), text: skill} }

// Covered reports whether the skill holds the rule of id.
func (v skillView) Covered(id string) bool {
	if _, ok := simbench.Lookup(id); ok {
		return v.sim.Covered(id)
	}
	r, ok := synth.LookupRule(id)
	return ok && r.Covered(v.text)
}

// Broken reports whether the skill holds the harmful rule of id.
func (v skillView) Broken(id string) bool {
	if _, ok := simbench.Lookup(id); ok {
		return v.sim.Broken(id)
	}
	r, ok := synth.LookupRule(id)
	return ok && r.Broken(v.text)
}

// BrokenIDs returns the ids whose harmful rule the skill holds.
func (v skillView) BrokenIDs() []string { return brokenRules(v.text) }

// pitfallsInTask returns the ids of the rules whose cue the task holds.
func pitfallsInTask(task string) []string { return synth.CuesIn(task, allRuleIDs()) }
