package pystr

import (
	"bufio"
	"compress/gzip"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"
)

// TestPropertiesMatchPython checks every code point against what CPython
// 3.11 answered (testdata/py311_props.txt.gz, written by
// internal/gen/gen_props.py): whitespace, \w, line breaks, lower and
// upper mappings, and the final-sigma context.
func TestPropertiesMatchPython(t *testing.T) {
	f, err := os.Open("testdata/py311_props.txt.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sets := map[string]map[rune]bool{}
	maps := map[string]map[rune]string{"lower": {}, "upper": {}}
	hex := func(s string) rune {
		v, err := strconv.ParseUint(s, 16, 32)
		if err != nil {
			t.Fatalf("bad hex %q", s)
		}
		return rune(v)
	}
	sc := bufio.NewScanner(zr)
	for sc.Scan() {
		p := strings.Fields(sc.Text())
		switch p[0] {
		case "lower", "upper":
			var b strings.Builder
			for _, h := range p[2:] {
				b.WriteRune(hex(h))
			}
			maps[p[0]][hex(p[1])] = b.String()
		case "linebreak":
			if sets[p[0]] == nil {
				sets[p[0]] = map[rune]bool{}
			}
			sets[p[0]][hex(p[1])] = true
		default:
			if sets[p[0]] == nil {
				sets[p[0]] = map[rune]bool{}
			}
			for c := hex(p[1]); c <= hex(p[2]); c++ {
				sets[p[0]][c] = true
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	bad := map[string]int{}
	for c := rune(0); c <= utf8.MaxRune; c++ {
		if c >= 0xd800 && c <= 0xdfff {
			continue
		}
		ch := string(c)
		check := func(name string, got, want bool) {
			if got != want {
				if bad[name] < 5 {
					t.Errorf("%s(U+%04X) = %v, Python says %v", name, c, got, want)
				}
				bad[name]++
			}
		}
		check("IsSpace", IsSpace(c), sets["space"][c])
		check("IsWord", IsWord(c), sets["word"][c])
		check("IsLineBreak", IsLineBreak(c), sets["linebreak"][c])
		check("final sigma after c", strings.HasSuffix(Lower(ch+"Σ"), "ς"), sets["sigma1"][c])
		check("final sigma after A c", strings.HasSuffix(Lower("A"+ch+"Σ"), "ς"), sets["sigma3"][c])
		for _, name := range []string{"lower", "upper"} {
			want, ok := maps[name][c]
			if !ok {
				want = ch
			}
			got := Lower(ch)
			if name == "upper" {
				got = Upper(ch)
			}
			check(name+" mapping", got == want, true)
		}
	}
	for k, n := range bad {
		t.Errorf("%s: %d code points differ from Python", k, n)
	}
}

func TestStringFunctions(t *testing.T) {
	s := "a\rb\r\nc\n\nd\x1c\x1fe\u2028"
	if got, want := SplitLines(s), []string{"a", "b", "c", "", "d", "\x1fe"}; !slices.Equal(got, want) {
		t.Errorf("SplitLines(%q) = %q, want %q", s, got, want)
	}
	if got, want := Fields(s), []string{"a", "b", "c", "d", "e"}; !slices.Equal(got, want) {
		t.Errorf("Fields(%q) = %q, want %q", s, got, want)
	}
	if got, want := Strip(s), "a\rb\r\nc\n\nd\x1c\x1fe"; got != want {
		t.Errorf("Strip(%q) = %q, want %q", s, got, want)
	}
	for in, want := range map[string][]string{
		"": nil, "\n": {""}, "a\n": {"a"}, "\r\n\r\n": {"", ""}, "x\u0085y\u2029": {"x", "y"},
	} {
		if got := SplitLines(in); !slices.Equal(got, want) {
			t.Errorf("SplitLines(%q) = %q, want %q", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"ΟΔΟΣ": "οδος", "ΣΑ": "σα", "Σ": "σ", "ΑΣ.": "ας.", "ΑΣ.Α": "ασ.α",
		"İstanbul": "i̇stanbul", "ẞ": "ß", "Ⱥ": "ⱥ",
	} {
		if got := Lower(in); got != want {
			t.Errorf("Lower(%q) = %q, want %q", in, got, want)
		}
	}
	if got := Upper("straße ﬁ"); got != "STRASSE FI" {
		t.Errorf("Upper = %q", got)
	}
	articles := []string{"a", "an", "the"}
	for in, want := range map[string]string{
		"çan!": "çan!", "españa": "españa", "an apple a day": "  apple   day",
		"the_the the": "the_the  ", "½ a cup": "½   cup", "x² + a": "x² +  ", "a-an-the": " - - ",
	} {
		if got := ReplaceWords(in, articles, " "); got != want {
			t.Errorf("ReplaceWords(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestCodePointIndexing(t *testing.T) {
	s := "İé <answer>x</answer>"
	if got := Find(s, "<answer>"); got != 3 {
		t.Errorf("Find = %d", got)
	}
	if got := RFind(s, "</"); got != 12 {
		t.Errorf("RFind = %d", got)
	}
	for _, c := range []struct {
		from, to int
		want     string
	}{{0, 2, "İé"}, {-3, 100, "er>"}, {5, 2, ""}, {-100, 1, "İ"}} {
		if got := Slice(s, c.from, c.to); got != c.want {
			t.Errorf("Slice(%d, %d) = %q, want %q", c.from, c.to, got, c.want)
		}
	}
	if diff := cmp.Diff(21, Len(s)); diff != "" {
		t.Error(diff)
	}
}
