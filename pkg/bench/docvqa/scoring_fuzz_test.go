package docvqa_test

import (
	"testing"
	"unicode/utf8"

	"github.com/skillfleet/skillfleet/internal/pystr"
	"github.com/skillfleet/skillfleet/pkg/bench/docvqa"
	"github.com/skillfleet/skillfleet/pkg/bench/score/scorecorpus"
)

// fuzzSeedsPerScorer bounds the corpus seeds taken from each scorer, so
// that fuzzing starts quickly.
const fuzzSeedsPerScorer = 300

func corpusSeeds(f *testing.F, field string, scorers ...string) {
	f.Helper()
	cases, err := scorecorpus.Load(scorecorpus.Path("../score/testdata/skillopt-scores.jsonl.gz"))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range scorecorpus.Inputs(cases, field, fuzzSeedsPerScorer, scorers...) {
		f.Add(s)
	}
}

// FuzzParseAnswers: every answer read from a cell is valid UTF-8,
// stripped and not empty, with and without gold_cells_as_text, and a
// list cell reads the same either way.
func FuzzParseAnswers(f *testing.F) {
	corpusSeeds(f, "raw", "dv_gold", "dv_goldanls")
	f.Fuzz(func(t *testing.T, raw string) {
		plain := docvqa.ParseAnswers(raw, docvqa.GoldOptions{})
		asText := docvqa.ParseAnswers(raw, docvqa.GoldOptions{CellsAsText: true})
		if !utf8.ValidString(raw) {
			return
		}
		for _, list := range [][]string{plain, asText} {
			for _, a := range list {
				if !utf8.ValidString(a) || a == "" || pystr.Strip(a) != a {
					t.Fatalf("ParseAnswers(%q) = %q: bad answer %q", raw, list, a)
				}
			}
		}
		if v, err := pystr.LiteralEval(raw); err == nil && v.Kind == pystr.KindList && len(plain) != len(asText) {
			t.Fatalf("list cell %q reads differently as text: %q vs %q", raw, plain, asText)
		}
	})
}

// FuzzEvaluate: the ANLS of any reply is in [0, 1] and the answer is a
// piece of the reply.
func FuzzEvaluate(f *testing.F) {
	corpusSeeds(f, "text", "dv_extract", "dv_e2e")
	f.Fuzz(func(t *testing.T, reply string) {
		answer, anls := docvqa.Evaluate(reply, []string{"Total", ""})
		if !(anls >= 0 && anls <= 1) {
			t.Fatalf("Evaluate(%q) = %v", reply, anls)
		}
		if utf8.ValidString(reply) && !utf8.ValidString(answer) {
			t.Fatalf("Evaluate(%q): answer %q is invalid UTF-8", reply, answer)
		}
	})
}
