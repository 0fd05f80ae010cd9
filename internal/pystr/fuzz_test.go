package pystr_test

import (
	"math"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/skillfleet/skillfleet/internal/pystr"
	"github.com/skillfleet/skillfleet/pkg/bench/score/scorecorpus"
)

// fuzzSeedsPerScorer bounds the corpus seeds taken from each scorer, so
// that fuzzing starts quickly.
const fuzzSeedsPerScorer = 300

func corpusSeeds(f *testing.F, field string, scorers ...string) {
	f.Helper()
	cases, err := scorecorpus.Load(scorecorpus.Path("../../pkg/bench/score/testdata/skillopt-scores.jsonl.gz"))
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range scorecorpus.Inputs(cases, field, fuzzSeedsPerScorer, scorers...) {
		f.Add(s)
	}
}

// finite reports whether every float in v is finite (inf and nan print
// as names, which are not literals).
func finite(v pystr.Value) bool {
	switch v.Kind {
	case pystr.KindFloat, pystr.KindComplex:
		return !math.IsInf(v.Float, 0) && !math.IsNaN(v.Float) && !math.IsInf(v.Imag, 0) && !math.IsNaN(v.Imag)
	}
	for _, it := range append(append([]pystr.Value(nil), v.Items...), v.Vals...) {
		if !finite(it) {
			return false
		}
	}
	return true
}

// FuzzLiteralEval: no panic; a value prints as valid UTF-8, and its repr
// reads back to the same value (as in Python, eval(repr(x)) == x).
func FuzzLiteralEval(f *testing.F) {
	corpusSeeds(f, "raw", "dv_gold", "dv_goldanls")
	for _, s := range []string{"1+2j", "-0.0", "(1,)", "{'a': [1, b'x\\xff'], 2: ()}", "set()", "'\\N{BULLET}'", "0o17", "1_0.5e-3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		v, err := pystr.LiteralEval(src)
		if err != nil || !utf8.ValidString(src) {
			return
		}
		s, r := v.String(), v.Repr()
		if !utf8.ValidString(s) || !utf8.ValidString(r) {
			t.Fatalf("pystr.LiteralEval(%q) prints invalid UTF-8: %q / %q", src, s, r)
		}
		if !finite(v) {
			return
		}
		back, err := pystr.LiteralEval(r)
		if err != nil {
			t.Fatalf("repr %q of pystr.LiteralEval(%q) does not read back: %v", r, src, err)
		}
		if back.Repr() != r {
			t.Fatalf("pystr.LiteralEval(%q): repr %q reads back as %q", src, r, back.Repr())
		}
	})
}

// FuzzStringFunctions: the string functions keep valid UTF-8 valid and
// agree with each other.
func FuzzStringFunctions(f *testing.F) {
	corpusSeeds(f, "text", "sq_extract", "dv_extract")
	f.Fuzz(func(t *testing.T, s string) {
		lower, upper, lines, fields := pystr.Lower(s), pystr.Upper(s), pystr.SplitLines(s), pystr.Fields(s)
		if !utf8.ValidString(s) {
			return
		}
		for _, x := range append(append([]string{lower, upper, pystr.Strip(s)}, lines...), fields...) {
			if !utf8.ValidString(x) {
				t.Fatalf("%q: invalid UTF-8 out: %q", s, x)
			}
		}
		if pystr.Lower(lower) != lower {
			t.Fatalf("Lower is not idempotent on %q: %q → %q", s, lower, pystr.Lower(lower))
		}
		for _, l := range lines {
			if strings.ContainsFunc(l, pystr.IsLineBreak) {
				t.Fatalf("pystr.SplitLines(%q) has a line with a break: %q", s, l)
			}
		}
		if strings.Join(fields, " ") != pystr.JoinFields(s) || pystr.JoinFields(strings.Join(lines, "\n")) != pystr.JoinFields(s) {
			t.Fatalf("Fields and SplitLines disagree on %q", s)
		}
		if pystr.RFind(s, "<") >= 0 && pystr.Slice(s, pystr.RFind(s, "<"), pystr.RFind(s, "<")+1) != "<" {
			t.Fatalf("RFind/Slice disagree on %q", s)
		}
	})
}
