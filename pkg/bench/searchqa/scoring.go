package searchqa

import "github.com/skillfleet/skillfleet/pkg/bench/score"

// Evaluate scores a reply as SkillOpt's SearchQA evaluator does: the
// answer is the last <answer>…</answer> pair's text (else the last
// non-empty line), em its SQuAD exact match against the golds (the hard
// score) and f1 its best token F1 (the soft score).
func Evaluate(reply string, golds []string) (answer string, em, f1 float64) {
	answer = score.ExtractAnswer(reply)
	return answer, score.ExactMatch(answer, golds), score.F1(answer, golds)
}
