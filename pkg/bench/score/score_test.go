package score

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestExtractAnswer(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"thinking\n<answer> Paris </answer>", "Paris"},
		// The last complete pair wins.
		{"<answer>a</answer> then <answer>b</answer>", "b"},
		// Case-insensitive tags, answer across lines.
		{"<ANSWER>New\nYork</Answer>", "New\nYork"},
		// An unclosed tag is no pair: the last non-empty line is taken.
		{"<answer>oops\nfinal line\n\n", "final line"},
		// A nested opening tag belongs to the first pair's text (non-greedy from the first opener).
		{"<answer>x <answer>y</answer>", "x <answer>y"},
		{"   \n  ", ""},
		{"", ""},
		// A closing tag before any opener is no pair.
		{"</answer>late<answer>", "</answer>late<answer>"},
	} {
		if got := ExtractAnswer(tc.in); got != tc.want {
			t.Errorf("ExtractAnswer(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestExtractFirstAndRfind(t *testing.T) {
	in := "<answer>one</answer> text <answer>two</answer>"
	if got := ExtractFirstAnswer(in); got != "one" {
		t.Errorf("first = %q", got)
	}
	// rfind: from the last opener to the last closer.
	if got := ExtractAnswerRfind(in); got != "two" {
		t.Errorf("rfind = %q", got)
	}
	// A stray closer after the last pair extends the rfind answer to it.
	if got := ExtractAnswerRfind("<answer>x</answer> y </ANSWER>"); got != "x</answer> y" {
		t.Errorf("rfind with a later closer = %q", got)
	}
	// No closer after the last opener: last non-empty line.
	if got := ExtractAnswerRfind("<answer>a</answer>\n<answer>b\nlast"); got != "last" {
		t.Errorf("rfind unclosed = %q", got)
	}
	if got := ExtractFirstAnswer("no tags\n 42 \n"); got != "42" {
		t.Errorf("first without tags = %q", got)
	}
}

func TestSQuAD(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"The  Eiffel Tower!", "eiffel tower"},
		// "a" inside a word stays; apostrophes are punctuation.
		{"A man's 'plan', a canal", "mans plan canal"},
		{"an", ""},
		{"U.S.A.", "usa"},
		// Non-ASCII punctuation is kept (only string.punctuation is removed).
		{"«Paris»", "«paris»"},
	} {
		if got := NormalizeSQuAD(tc.in); got != tc.want {
			t.Errorf("NormalizeSQuAD(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	golds := []string{"The Eiffel Tower", "Tour Eiffel"}
	if ExactMatch("eiffel tower.", golds) != 1 || ExactMatch("Eiffel", golds) != 0 {
		t.Error("ExactMatch")
	}
	// F1("eiffel", "eiffel tower"): common 1, P 1/1, R 1/2 → 2/3; against
	// "tour eiffel" also 2/3.
	if got := F1("Eiffel", golds); !near(got, 2.0/3) {
		t.Errorf("F1 = %v, want 2/3", got)
	}
	// Multiset: "paris paris" vs "paris": common 1, P 1/2, R 1 → 2/3.
	if got := F1("paris paris", []string{"Paris"}); !near(got, 2.0/3) {
		t.Errorf("F1 multiset = %v", got)
	}
	// Empty prediction: 1 only against a gold that normalises to empty.
	if F1("", []string{"the"}) != 1 || F1("", []string{"x"}) != 0 || F1("the", []string{"x", ""}) != 1 {
		t.Error("F1 empty cases")
	}
	if ExactMatch("", []string{"a"}) != 1 {
		t.Error(`"" and "a" both normalise to empty`)
	}
	if SubEM("eiffel", golds) != 1 || SubEM("louvre", golds) != 0 {
		t.Error("SubEM")
	}
	if F1("x", nil) != 0 || ExactMatch("x", nil) != 0 {
		t.Error("no golds must score 0")
	}
}

func TestANLS(t *testing.T) {
	for _, tc := range []struct {
		pred  string
		golds []string
		want  float64
	}{
		{"Invoice", []string{"invoice"}, 1},
		{"  total   due ", []string{"Total Due"}, 1},
		// "invoce" vs "invoice": distance 1, length 7 → 1 − 1/7.
		{"invoce", []string{"invoice"}, 1 - 1.0/7},
		// "abcd" vs "abxy": distance 2 / 4 = 0.5 → at the threshold, 0.
		{"abcd", []string{"abxy"}, 0},
		// "abcde" vs "abxye": 2/5 = 0.4 → 0.6.
		{"abcde", []string{"abxye"}, 0.6},
		{"", []string{""}, 1},
		{"", []string{"x"}, 0},
		{"x", []string{""}, 0},
		// Best over golds.
		{"12/03", []string{"nope", "12/03/2020", "12/03"}, 1},
		// Runes, not bytes: "café" vs "cafe" is one edit of four.
		{"café", []string{"cafe"}, 0.75},
	} {
		if got := ANLS(tc.pred, tc.golds); !near(got, tc.want) {
			t.Errorf("ANLS(%q, %q) = %v, want %v", tc.pred, tc.golds, got, tc.want)
		}
	}
}

func TestChoiceLabel(t *testing.T) {
	ch := []Choice{{"A", "x = 1"}, {"B", "No such function"}, {"C", "Infinitely many"}}
	for _, tc := range []struct {
		in   string
		want string
		ok   bool
	}{
		{"B", "B", true},
		{" c. ", "C", true},
		{"b)", "B", true},
		{"A:", "A", true},
		// The text of a choice, any case.
		{"infinitely MANY", "C", true},
		// The first token, cleaned.
		{"C) because the set is unbounded", "C", true},
		{"(B)", "", false},
		{"D", "", false},
		{"", "", false},
		{"none of these", "", false},
	} {
		got, ok := ChoiceLabel(tc.in, ch)
		if got != tc.want || ok != tc.ok {
			t.Errorf("ChoiceLabel(%q) = %q %v, want %q %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestLevenshtein(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		d    int
	}{{"", "", 0}, {"a", "", 1}, {"kitten", "sitting", 3}, {"flaw", "lawn", 2}, {"日本", "日本語", 1}} {
		if got := Levenshtein(tc.a, tc.b); got != tc.d {
			t.Errorf("Levenshtein(%q,%q) = %d, want %d", tc.a, tc.b, got, tc.d)
		}
	}
}

// TestPythonStringSemantics holds the shortest example of each way the
// scorers once differed from SkillOpt (issue 23), with SkillOpt's result.
func TestPythonStringSemantics(t *testing.T) {
	// 1. splitlines() breaks at U+2028 and a lone \r; split() and strip()
	// treat U+001C–U+001F as whitespace.
	for in, want := range map[string]string{
		"Answer: Paris\u2028(source: doc 3)":         "(source: doc 3)",
		"I think it is Paris.\rFinal answer: London": "Final answer: London",
		"<answer>\x1fParis\x1c</answer>":             "Paris",
	} {
		if got := ExtractAnswer(in); got != want {
			t.Errorf("ExtractAnswer(%q) = %q, want %q", in, got, want)
		}
	}
	// 2. \b knows Unicode letters; 4. full lowercasing.
	for in, want := range map[string]string{
		"çan!": "çan", "España": "españa", "Peña Nieto": "peña nieto", "Bahía Blanca": "bahía blanca",
		"ΟΔΟΣ": "οδος", "İ": "i\u0307", "x² + a": "x²", "½ a cup": "½ cup",
	} {
		if got := NormalizeSQuAD(in); got != want {
			t.Errorf("NormalizeSQuAD(%q) = %q, want %q", in, got, want)
		}
	}
	// 3. DocVQA cuts the original at the lowercased copy's code point
	// positions: Ⱥ keeps its length in code points (not in bytes), İ
	// does not.
	for in, want := range map[string]string{
		"Ⱥ <answer>Total</answer>":                    "Total",
		"İstanbul branch report. <answer>42</answer>": "2<",
		"STRAẞE <answer>Main St</answer>":             "Main St",
	} {
		if got := ExtractAnswerRfind(in); got != want {
			t.Errorf("ExtractAnswerRfind(%q) = %q, want %q", in, got, want)
		}
	}
	// 8. A decorated label is normalised.
	if l := NormalizeLabel(" b) "); l != "B" {
		t.Errorf("NormalizeLabel = %q", l)
	}
}
