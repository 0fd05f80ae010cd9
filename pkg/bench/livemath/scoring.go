package livemath

import "github.com/skillfleet/skillfleet/pkg/bench/score"

// Evaluate scores a reply as SkillOpt's LiveMath evaluator does: the
// answer is extracted as in SearchQA and mapped to a choice label
// ([score.ChoiceLabel]); hard is 1 when that label equals the correct
// label, both normalised the same way ([score.NormalizeLabel]), so a
// decorated label such as "B)" on either side still matches.
func Evaluate(reply string, choices []score.Choice, correctLabel string) (answer, label string, valid bool, hard float64) {
	answer = score.ExtractAnswer(reply)
	label, valid = score.ChoiceLabel(answer, choices)
	if valid && label == score.NormalizeLabel(correctLabel) {
		hard = 1
	}
	return answer, label, valid, hard
}
