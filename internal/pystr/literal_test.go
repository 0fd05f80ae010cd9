package pystr

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"os"
	"testing"
)

// TestLiteralEvalMatchesPython checks LiteralEval on 6,000 generated
// sources (testdata/py311_literals.jsonl.gz, written by
// internal/gen/gen_literals.py) against what CPython 3.11's
// ast.literal_eval answered: the same sources accepted, with the same
// str() and repr().
func TestLiteralEvalMatchesPython(t *testing.T) {
	f, err := os.Open("testdata/py311_literals.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 1<<20)
	n, bad := 0, 0
	for sc.Scan() {
		var c struct {
			Src  string `json:"src"`
			OK   bool   `json:"ok"`
			Str  string `json:"str"`
			Repr string `json:"repr"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		n++
		v, err := LiteralEval(c.Src)
		switch {
		case (err == nil) != c.OK:
			bad++
			if bad <= 20 {
				t.Errorf("LiteralEval(%q): error %v, Python accepts: %v (%q)", c.Src, err, c.OK, c.Repr)
			}
		case c.OK && (v.String() != c.Str || v.Repr() != c.Repr):
			bad++
			if bad <= 20 {
				t.Errorf("LiteralEval(%q) = %q / %q, Python %q / %q", c.Src, v.String(), v.Repr(), c.Str, c.Repr)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if bad > 0 {
		t.Errorf("%d of %d sources differ from Python", bad, n)
	}
}

func TestLiteralEvalExamples(t *testing.T) {
	for _, tc := range []struct{ src, str string }{
		{".5", "0.5"}, {"3.50", "3.5"}, {"10,000", "(10, 0)"}, {"1e3", "1000.0"}, {"0x10", "16"},
		{"1_000", "1000"}, {"-5", "-5"}, {"'quoted'", "quoted"}, {"True", "True"}, {"None", "None"},
		{"[' padded ', '']", "[' padded ', '']"}, {`['a\x41b']`, "['aAb']"}, {"['a' 'b']", "['ab']"},
		{"1e16", "1e+16"}, {"1e-5", "1e-05"}, {"1+2j", "(1+2j)"}, {"-1j", "(-0-1j)"}, {"[b'by']", "[b'by']"},
		{"{'answer': 'x'}", "{'answer': 'x'}"}, {`'\N{LATIN SMALL LETTER E WITH ACUTE}'`, "é"}, {"(1,)", "(1,)"},
		{"  ['a'\n, 'b']  # note\n", "['a', 'b']"}, {"1e999", "inf"}, {"set()", "set()"},
	} {
		v, err := LiteralEval(tc.src)
		if err != nil || v.String() != tc.str {
			t.Errorf("LiteralEval(%q) = %q, %v; want %q", tc.src, v.String(), err, tc.str)
		}
	}
	for _, src := range []string{"007", "['x'] trailing", "\n the B%", "", "f'x'", "x", "1 +", "--1", "1+2", "b'é'", "'a' b'b'", "{[1]: 2}", "[1]+[2]", "'\\x4'", "'\x00'"} {
		if _, err := LiteralEval(src); err == nil {
			t.Errorf("LiteralEval(%q) accepted", src)
		}
	}
}
