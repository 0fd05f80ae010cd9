package skill

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func numbered(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestDiff(t *testing.T) {
	t.Parallel()
	twenty := numbered(20)
	tests := []struct {
		name string
		a, b string
		want string
	}{
		{name: "equal", a: plain, b: plain, want: ""},
		{
			name: "one line changed",
			a:    "a\nb\nc\n", b: "a\nB\nc\n",
			want: "--- a\n+++ b\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n",
		},
		{
			name: "from empty",
			a:    "", b: "x\n",
			want: "--- a\n+++ b\n@@ -0,0 +1 @@\n+x\n",
		},
		{
			name: "to empty",
			a:    "x\ny\n", b: "",
			want: "--- a\n+++ b\n@@ -1,2 +0,0 @@\n-x\n-y\n",
		},
		{
			name: "no newline at end",
			a:    "x\n", b: "x\ny",
			want: "--- a\n+++ b\n@@ -1 +1,2 @@\n x\n+y\n\\ No newline at end of file\n",
		},
		{
			name: "newline added at end",
			a:    "x", b: "x\n",
			want: "--- a\n+++ b\n@@ -1 +1 @@\n-x\n\\ No newline at end of file\n+x\n",
		},
		{
			name: "two distant hunks",
			a:    twenty,
			b:    strings.Replace(strings.Replace(twenty, "line 2\n", "line two\n", 1), "line 19\n", "line nineteen\n", 1),
			want: "--- a\n+++ b\n" +
				"@@ -1,5 +1,5 @@\n line 1\n-line 2\n+line two\n line 3\n line 4\n line 5\n" +
				"@@ -16,5 +16,5 @@\n line 16\n line 17\n line 18\n-line 19\n+line nineteen\n line 20\n",
		},
		{
			name: "close changes share a hunk",
			a:    twenty,
			b:    strings.Replace(strings.Replace(twenty, "line 5\n", "", 1), "line 12\n", "", 1),
			want: "--- a\n+++ b\n" +
				"@@ -2,14 +2,12 @@\n line 2\n line 3\n line 4\n-line 5\n line 6\n line 7\n line 8\n" +
				" line 9\n line 10\n line 11\n-line 12\n line 13\n line 14\n line 15\n",
		},
		{
			name: "insertion in the middle",
			a:    "a\nb\nc\nd\n", b: "a\nb\nX\nc\nd\n",
			want: "--- a\n+++ b\n@@ -1,4 +1,5 @@\n a\n b\n+X\n c\n d\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, Diff(tt.a, tt.b)); diff != "" {
				t.Errorf("Diff(%q, %q) mismatch (-want +got):\n%s", tt.a, tt.b, diff)
			}
		})
	}
}

// lcs returns the length of the longest common subsequence of a and b.
func lcs(a, b []string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(prev[j+1], cur[j])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// TestDiffScriptIsShortest checks on random inputs that the edit script
// rebuilds both texts and has the fewest possible changed lines.
func TestDiffScriptIsShortest(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	words := []string{"a\n", "b\n", "c\n", "d\n"}
	gen := func() []string {
		out := make([]string, rng.IntN(40))
		for i := range out {
			out[i] = words[rng.IntN(len(words))]
		}
		return out
	}
	for iter := range 3000 {
		a, b := gen(), gen()
		d := newDiffer(a, b)
		d.compare(0, len(a), 0, len(b))
		var gotA, gotB []string
		changes := 0
		for _, l := range d.script() {
			if l.kind != '+' {
				gotA = append(gotA, l.text)
			}
			if l.kind != '-' {
				gotB = append(gotB, l.text)
			}
			if l.kind != ' ' {
				changes++
			}
		}
		if !cmp.Equal(a, gotA, cmp.Comparer(func(x, y []string) bool { return strings.Join(x, "") == strings.Join(y, "") })) ||
			strings.Join(b, "") != strings.Join(gotB, "") {
			t.Fatalf("iteration %d: script does not rebuild the inputs\na=%q\nb=%q", iter, a, b)
		}
		if want := len(a) + len(b) - 2*lcs(a, b); changes != want {
			t.Fatalf("iteration %d: script has %d changes, want %d\na=%q\nb=%q", iter, changes, want, a, b)
		}
	}
}

func BenchmarkDiff(b *testing.B) {
	s := benchSkill()
	c, _ := Apply(s, []Edit{
		{Op: "append", Content: "New rule."},
		{Op: "replace", Target: "- Rule xxxxx:", Content: "- Replaced rule:"},
	}, ApplyOptions{})
	b.ReportAllocs()
	for b.Loop() {
		Diff(s, c)
	}
}
