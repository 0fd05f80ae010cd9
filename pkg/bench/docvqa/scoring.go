package docvqa

import (
	"github.com/skillfleet/skillfleet/internal/pystr"
	"github.com/skillfleet/skillfleet/pkg/bench/score"
)

// GoldOptions are the named deviations from SkillOpt's reading of an
// answer cell; the zero value reads cells exactly as SkillOpt does.
type GoldOptions struct {
	// CellsAsText keeps a cell that is neither a Python list nor a
	// string literal as written (".5", "3.50", "10,000" stay so) where
	// SkillOpt evaluates it (0.5, 3.5 and the tuple (10, 0)).
	CellsAsText bool
}

// ParseAnswers reads a DocVQA answer cell as SkillOpt's _parse_answers
// does: the cell goes through ast.literal_eval ([pystr.LiteralEval]); a
// list gives str() of each item, stripped, empty ones dropped; any other
// value gives its str(), stripped; a cell that is no literal is taken as
// its stripped text. An empty result is no answers (and scores against
// the empty string, see [Evaluate]).
func ParseAnswers(raw string, opt GoldOptions) []string {
	var out []string
	add := func(s string) {
		if s = pystr.Strip(s); s != "" {
			out = append(out, s)
		}
	}
	v, err := pystr.LiteralEval(raw)
	switch {
	case err != nil:
		add(raw)
	case v.Kind == pystr.KindList:
		for _, it := range v.Items {
			add(it.String())
		}
	case opt.CellsAsText && v.Kind != pystr.KindStr:
		add(raw)
	default:
		add(v.String())
	}
	return out
}

// Evaluate scores a reply as SkillOpt's DocVQA evaluator does: the answer
// is cut by [score.ExtractAnswerRfind] and scored by ANLS against the
// golds; no golds score as one empty gold.
func Evaluate(reply string, golds []string) (answer string, anls float64) {
	if len(golds) == 0 {
		golds = []string{""}
	}
	answer = score.ExtractAnswerRfind(reply)
	return answer, score.ANLS(answer, golds)
}
