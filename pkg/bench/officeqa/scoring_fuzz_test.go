package officeqa_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/skillfleet/skillfleet/internal/pystr"
	"github.com/skillfleet/skillfleet/pkg/bench/officeqa"
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

// FuzzNormalise: valid UTF-8 out, idempotent, no commas or removed
// punctuation left, whitespace collapsed.
func FuzzNormalise(f *testing.F) {
	corpusSeeds(f, "s", "oq_norm")
	f.Fuzz(func(t *testing.T, s string) {
		got := officeqa.Normalise(s)
		if !utf8.ValidString(s) {
			return
		}
		if !utf8.ValidString(got) {
			t.Fatalf("Normalise(%q) = %q: invalid UTF-8", s, got)
		}
		if again := officeqa.Normalise(got); again != got {
			t.Fatalf("not idempotent: %q → %q → %q", s, got, again)
		}
		if strings.ContainsAny(got, "!\"#$&'()*+,/:;<=>?@[\\]^_`{|}~") {
			t.Fatalf("Normalise(%q) = %q keeps punctuation", s, got)
		}
		if got != pystr.JoinFields(got) {
			t.Fatalf("Normalise(%q) = %q: whitespace not collapsed", s, got)
		}
	})
}

// FuzzEvaluate: the answer is a piece of the reply, scores are in [0, 1],
// an exact match has F1 1, and require_answer_tag never raises a score.
func FuzzEvaluate(f *testing.F) {
	corpusSeeds(f, "text", "oq_extract", "oq_e2e")
	f.Fuzz(func(t *testing.T, reply string) {
		for _, gold := range []string{"5.2", "$", reply} {
			answer, hard, soft := officeqa.Evaluate(reply, gold, officeqa.ScoreOptions{})
			_, hard2, soft2 := officeqa.Evaluate(reply, gold, officeqa.ScoreOptions{RequireAnswerTag: true})
			if !utf8.ValidString(reply) {
				continue
			}
			if !utf8.ValidString(answer) || !strings.Contains(reply, answer) {
				t.Fatalf("Evaluate(%q): answer %q", reply, answer)
			}
			if !(soft >= 0 && soft <= 1) || (hard != 0 && hard != 1) || (hard == 1 && soft != 1) {
				t.Fatalf("Evaluate(%q, %q) = %v, %v", reply, gold, hard, soft)
			}
			if hard2 > hard || soft2 > soft {
				t.Fatalf("require_answer_tag raised %q: %v %v → %v %v", reply, hard, soft, hard2, soft2)
			}
		}
	})
}
