package searchqa

import (
	"math"
	"testing"
)

func TestEvaluate(t *testing.T) {
	for _, tc := range []struct {
		reply  string
		golds  []string
		answer string
		em, f1 float64
	}{
		{"<answer>first</answer> then <answer>(123)</answer>", []string{"(123)"}, "(123)", 1, 1},
		// The last line as str.splitlines() cuts lines: U+2028 breaks.
		{"Answer: Paris\u2028(source: doc 3)", []string{"Paris"}, "(source: doc 3)", 0, 0},
		{"<ANSWER>The España</ANSWER>", []string{"españa"}, "The España", 1, 1},
	} {
		answer, em, f1 := Evaluate(tc.reply, tc.golds)
		if answer != tc.answer || em != tc.em || math.Abs(f1-tc.f1) > 1e-9 {
			t.Errorf("Evaluate(%q) = %q %v %v, want %q %v %v", tc.reply, answer, em, f1, tc.answer, tc.em, tc.f1)
		}
	}
}

func TestPyListIsPythonRepr(t *testing.T) {
	got := pyList([]string{"O'Neil", `a"b'c`, "x\u2028\u0085é"})
	want := `["O'Neil", 'a"b\'c', 'x\u2028\x85é']`
	if got != want {
		t.Errorf("pyList = %s, want %s", got, want)
	}
}
