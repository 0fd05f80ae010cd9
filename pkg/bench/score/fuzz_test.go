package score_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/skillfleet/skillfleet/internal/pystr"
	"github.com/skillfleet/skillfleet/pkg/bench/score"
	"github.com/skillfleet/skillfleet/pkg/bench/score/scorecorpus"
)

// fuzzSeedsPerScorer bounds the corpus seeds taken from each scorer, so
// that fuzzing starts quickly.
const fuzzSeedsPerScorer = 300

// seeds adds the corpus inputs of the given scorers to a fuzz target.
func seeds(f *testing.F, field string, scorers ...string) {
	f.Helper()
	cases, _ := loadCorpus(f)
	in := scorecorpus.Inputs(cases, field, fuzzSeedsPerScorer, scorers...)
	if len(in) == 0 {
		f.Fatalf("no %s seeds for %v", field, scorers)
	}
	for _, s := range in {
		f.Add(s)
	}
}

// checkExtracted: the answer is valid UTF-8, a piece of the reply, and
// stripped.
func checkExtracted(t *testing.T, name, text, got string) {
	t.Helper()
	if !utf8.ValidString(got) {
		t.Fatalf("%s(%q) = %q: invalid UTF-8", name, text, got)
	}
	if !strings.Contains(text, got) {
		t.Fatalf("%s(%q) = %q: not a piece of the reply", name, text, got)
	}
	if pystr.Strip(got) != got {
		t.Fatalf("%s(%q) = %q: not stripped", name, text, got)
	}
}

func FuzzExtractAnswer(f *testing.F) {
	seeds(f, "text", "sq_extract", "lm_extract", "sq_e2e", "lm_choice")
	f.Fuzz(func(t *testing.T, text string) {
		got := score.ExtractAnswer(text)
		if utf8.ValidString(text) {
			checkExtracted(t, "ExtractAnswer", text, got)
		}
	})
}

func FuzzExtractFirstAnswer(f *testing.F) {
	seeds(f, "text", "oq_extract", "oq_e2e")
	f.Fuzz(func(t *testing.T, text string) {
		got := score.ExtractFirstAnswer(text)
		if utf8.ValidString(text) {
			checkExtracted(t, "ExtractFirstAnswer", text, got)
		}
	})
}

func FuzzExtractAnswerRfind(f *testing.F) {
	seeds(f, "text", "dv_extract", "dv_e2e", "dv_goldanls")
	f.Fuzz(func(t *testing.T, text string) {
		got := score.ExtractAnswerRfind(text)
		if utf8.ValidString(text) {
			checkExtracted(t, "ExtractAnswerRfind", text, got)
		}
	})
}

// checkNormalised: valid UTF-8, idempotent, single spaces only.
func checkNormalised(t *testing.T, name string, norm func(string) string, in string) string {
	t.Helper()
	got := norm(in)
	if !utf8.ValidString(in) {
		return got
	}
	if !utf8.ValidString(got) {
		t.Fatalf("%s(%q) = %q: invalid UTF-8", name, in, got)
	}
	if again := norm(got); again != got {
		t.Fatalf("%s is not idempotent: %q → %q → %q", name, in, got, again)
	}
	if got != pystr.JoinFields(got) {
		t.Fatalf("%s(%q) = %q: whitespace not collapsed", name, in, got)
	}
	return got
}

func FuzzNormalizeSQuAD(f *testing.F) {
	seeds(f, "s", "sq_norm")
	f.Fuzz(func(t *testing.T, s string) {
		got := checkNormalised(t, "NormalizeSQuAD", score.NormalizeSQuAD, s)
		if utf8.ValidString(s) && strings.ContainsFunc(got, score.IsASCIIPunct) {
			t.Fatalf("NormalizeSQuAD(%q) = %q keeps ASCII punctuation", s, got)
		}
		for _, w := range pystr.Fields(got) {
			if w == "a" || w == "an" || w == "the" {
				t.Fatalf("NormalizeSQuAD(%q) = %q keeps an article", s, got)
			}
		}
	})
}

func FuzzNormalizeANLS(f *testing.F) {
	seeds(f, "pred", "dv_anls")
	f.Fuzz(func(t *testing.T, s string) {
		checkNormalised(t, "NormalizeANLS", score.NormalizeANLS, s)
	})
}

// FuzzScores: every score is in [0, 1], an exact match has F1 1, and ANLS
// of a text against itself is 1.
func FuzzScores(f *testing.F) {
	seeds(f, "pred", "sq_em", "sq_f1", "dv_anls")
	f.Fuzz(func(t *testing.T, pred string) {
		golds := []string{pred, "the answer", ""}
		for name, v := range map[string]float64{
			"ExactMatch": score.ExactMatch(pred, golds[1:]), "F1": score.F1(pred, golds[1:]),
			"SubEM": score.SubEM(pred, golds[1:]), "ANLS": score.ANLS(pred, golds[1:]),
		} {
			if !(v >= 0 && v <= 1) {
				t.Fatalf("%s(%q) = %v", name, pred, v)
			}
		}
		if score.ExactMatch(pred, golds) != 1 || score.F1(pred, golds) != 1 || score.ANLS(pred, golds) != 1 {
			t.Fatalf("%q against itself: em %v f1 %v anls %v", pred, score.ExactMatch(pred, golds), score.F1(pred, golds), score.ANLS(pred, golds))
		}
	})
}

// FuzzChoiceLabel: a label found is one of the choices' labels.
func FuzzChoiceLabel(f *testing.F) {
	seeds(f, "text", "lm_choice")
	choices := []score.Choice{{Label: "A", Text: "finite"}, {Label: "B)", Text: "ΟΔΟΣ"}, {Label: "c.", Text: "İ"}}
	f.Fuzz(func(t *testing.T, text string) {
		answer := score.ExtractAnswer(text)
		label, ok := score.ChoiceLabel(answer, choices)
		if !utf8.ValidString(text) {
			return
		}
		if !utf8.ValidString(label) {
			t.Fatalf("label %q: invalid UTF-8", label)
		}
		if ok && label != "A" && label != "B" && label != "C" {
			t.Fatalf("ChoiceLabel(%q) = %q, not a choice's label", answer, label)
		}
		if !ok && label != "" {
			t.Fatalf("ChoiceLabel(%q) = %q but not ok", answer, label)
		}
	})
}
