package synth

import (
	"fmt"

	"github.com/skillfleet/skillfleet/pkg/bench/livemath"
	"github.com/skillfleet/skillfleet/pkg/bench/score"
)

// LiveMath's world: a multiple-choice question about a constant a paper
// proves; the distractors are the constant as an agent lacking a rule
// would state it (one too many, doubled, reversed, ...). Its rules are
// numeric reading and rounding rules.
var livemathRules = []string{
	"off_by_one", "doubled", "times_ten", "rounding_tens", "rounding_hundreds", "digits_reversed",
	"swapped_digits", "truncated", "negative_sign",
}

// LiveMath phrasing, shared with the simulated model.
const (
	LiveMathAsk     = "A recent paper on the %s lattice proves that its extremal constant equals %s. Which statement about the constant is correct?"
	LiveMathConcern = " The statement concerns %s."
	LiveMathChoice  = "The extremal constant is %s."
)

// livemathFillers are distractor transformations no rule of the world
// produces, used to give every question five choices.
var livemathFillers = []func(string) string{
	func(g string) string { return g[1:] + g[:1] },
	func(g string) string { return g[len(g)-1:] + g[:len(g)-1] },
	func(g string) string { return g[:2] + g[3:] + g[2:3] },
	func(g string) string { return g + g[:1] },
}

func writeLiveMath(dir string, size Size, seed int64) (*Manifest, error) {
	active := pickRules(newRNG("livemath", size, seed, "rules"), livemathRules, size.Rules)
	months := []string{"2025-01", "2025-02", "2025-03", "2025-04", "2025-05", "2025-06"}
	items := splits(size, func(split string, i int) livemath.Item {
		r := newRNG("livemath", size, seed, fmt.Sprintf("%s/%d", split, i))
		rules := itemRules(r, active)
		gold := Value(r)
		q := fmt.Sprintf(LiveMathAsk, pick(r, entityNames), gold)
		texts := []string{fmt.Sprintf(LiveMathChoice, gold)}
		seen := map[string]bool{gold: true}
		add := func(v string) {
			if !seen[v] && len(texts) < 5 {
				seen[v] = true
				texts = append(texts, fmt.Sprintf(LiveMathChoice, v))
			}
		}
		for _, id := range rules {
			ru, _ := LookupRule(id)
			q += fmt.Sprintf(LiveMathConcern, ru.Cue)
			add(ru.Wrong(gold))
		}
		for _, f := range livemathFillers {
			add(f(gold))
		}
		r.Shuffle(len(texts), func(a, b int) { texts[a], texts[b] = texts[b], texts[a] })
		var choices []score.Choice
		var correct score.Choice
		for k, t := range texts {
			c := score.Choice{Label: string(rune('A' + k)), Text: t}
			choices = append(choices, c)
			if t == fmt.Sprintf(LiveMathChoice, gold) {
				correct = c
			}
		}
		month := months[(i+len(split))%len(months)]
		return livemath.Item{ID: fmt.Sprintf("%s:synth-%s-%04d", month, split, i+1), Month: month, No: i + 1,
			PaperLink:   fmt.Sprintf("https://example.org/synthetic/%s/%d", month, i+1),
			Theorem:     fmt.Sprintf("The extremal constant of the lattice equals %s.", gold),
			Sketch:      "A counting argument over the lattice's fundamental domain (synthetic).",
			TheoremType: []string{taskType(rules)}, Question: q, Choices: choices, CorrectChoice: correct}
	})
	counts, err := writeItems(dir, items)
	if err != nil {
		return nil, err
	}
	seedFile, err := writeSeedSkill(dir, SeedSkill("Answering questions about recent theorems", livemathGeneral, active, newRNG("livemath", size, seed, "seed-skill")))
	if err != nil {
		return nil, err
	}
	return &Manifest{Counts: counts, ItemFields: []string{"id", "month", "no", "paper_link", "theorem", "sketch",
		"theorem_type", "question", "choices", "correct_choice"}, Rules: active, SeedSkill: seedFile}, nil
}

const livemathGeneral = "Pick the choice that states the paper's constant exactly.\n\n## General\n- Compare every choice with the question before you answer.\n- Answer with the letter of one choice."
