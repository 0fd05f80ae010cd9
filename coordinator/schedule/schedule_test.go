package schedule

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func budgets(t *testing.T, kind Kind, maxLR, minLR, total int) []int {
	t.Helper()
	var out []int
	for step := 1; step <= total; step++ {
		b, err := Budget(kind, maxLR, minLR, total, step)
		if err != nil {
			t.Fatalf("Budget(%s, %d, %d, %d, %d): %v", kind, maxLR, minLR, total, step, err)
		}
		out = append(out, b)
	}
	return out
}

func repeat(v, n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = v
	}
	return out
}

func TestBudgetSpecExamples(t *testing.T) {
	t.Parallel()
	t40 := append(append(repeat(4, 13), repeat(3, 13)...), repeat(2, 14)...)
	tests := []struct {
		name                string
		kind                Kind
		maxLR, minLR, total int
		want                []int
	}{
		{name: "cosine T=4", kind: Cosine, maxLR: 4, minLR: 2, total: 4, want: []int{4, 3, 2, 2}},
		{name: "linear T=4", kind: Linear, maxLR: 4, minLR: 2, total: 4, want: []int{4, 3, 2, 2}},
		{name: "cosine T=40", kind: Cosine, maxLR: 4, minLR: 2, total: 40, want: t40},
		// 4.5 rounds to 4 (half to even); math.Round would give 5.
		{name: "linear 5 to 2 over 6", kind: Linear, maxLR: 5, minLR: 2, total: 6, want: []int{4, 4, 4, 3, 2, 2}},
		{name: "constant", kind: Constant, maxLR: 4, minLR: 2, total: 3, want: []int{4, 4, 4}},
		{name: "autonomous", kind: Autonomous, maxLR: 4, minLR: 2, total: 2, want: []int{999, 999}},
		{name: "linear total 1", kind: Linear, maxLR: 4, minLR: 2, total: 1, want: []int{4}},
		{name: "cosine total 1", kind: Cosine, maxLR: 4, minLR: 2, total: 1, want: []int{4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, budgets(t, tt.kind, tt.maxLR, tt.minLR, tt.total)); diff != "" {
				t.Errorf("budgets mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBudgetEdges(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                   string
		kind                   Kind
		maxLR, minLR, total, t int
		want                   int
	}{
		{name: "t=0 is unadvanced", kind: Cosine, maxLR: 4, minLR: 2, total: 4, t: 0, want: 4},
		{name: "t past total clamps", kind: Cosine, maxLR: 4, minLR: 2, total: 4, t: 9, want: 2},
		{name: "total 0 guard", kind: Linear, maxLR: 4, minLR: 2, total: 0, t: 3, want: 4},
		{name: "negative total guard", kind: Cosine, maxLR: 4, minLR: 2, total: -5, t: 1, want: 4},
		{name: "floor at min", kind: Linear, maxLR: 2, minLR: 4, total: 2, t: 1, want: 4},
	}
	for _, tt := range tests {
		got, err := Budget(tt.kind, tt.maxLR, tt.minLR, tt.total, tt.t)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if got != tt.want {
			t.Errorf("%s: Budget(%s, %d, %d, %d, %d) = %d, want %d", tt.name, tt.kind, tt.maxLR, tt.minLR, tt.total, tt.t, got, tt.want)
		}
	}
	if _, err := Budget("step", 4, 2, 4, 1); err == nil {
		t.Errorf("Budget(step, ...) error = nil, want unknown scheduler")
	}
}

// TestBudgetMatchesCPython compares every (total, t) for a grid of max and
// min budgets with CPython's math.cos and round.
func TestBudgetMatchesCPython(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile("testdata/schedule.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		MaxTotal int `json:"max_total"`
		Cases    []struct {
			Kind   Kind   `json:"kind"`
			Max    int    `json:"max"`
			Min    int    `json:"min"`
			Digest string `json:"digest"`
		} `json:"cases"`
		Examples []struct {
			Kind    Kind  `json:"kind"`
			Max     int   `json:"max"`
			Min     int   `json:"min"`
			Total   int   `json:"total"`
			Budgets []int `json:"budgets"`
		} `json:"examples"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.Cases) == 0 {
		t.Fatal("no cases in testdata/schedule.json")
	}
	for _, c := range f.Cases {
		var b strings.Builder
		for total := 0; total <= f.MaxTotal; total++ {
			seq := make([]string, 0, total+3)
			for step := 0; step < total+3; step++ {
				v, err := Budget(c.Kind, c.Max, c.Min, total, step)
				if err != nil {
					t.Fatal(err)
				}
				seq = append(seq, strconv.Itoa(v))
			}
			fmt.Fprintf(&b, "%d: %s\n", total, strings.Join(seq, ","))
		}
		sum := sha256.Sum256([]byte(b.String()))
		if got := hex.EncodeToString(sum[:])[:16]; got != c.Digest {
			t.Errorf("%s max=%d min=%d: schedule digest = %s, want %s", c.Kind, c.Max, c.Min, got, c.Digest)
		}
	}
	for _, e := range f.Examples {
		if diff := cmp.Diff(e.Budgets, budgets(t, e.Kind, e.Max, e.Min, e.Total)); diff != "" {
			t.Errorf("%s max=%d min=%d T=%d mismatch (-want +got):\n%s", e.Kind, e.Max, e.Min, e.Total, diff)
		}
	}
}

func TestParseKind(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    Kind
		wantErr bool
	}{
		{in: "cosine", want: Cosine},
		{in: " Linear ", want: Linear},
		{in: "CONSTANT", want: Constant},
		{in: "autonomous", want: Autonomous},
		{in: "", wantErr: true},
		{in: "exponential", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseKind(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseKind(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestParseLearningRate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw          string
		available    int
		want         int
		wantFallback bool
	}{
		{raw: `3`, available: 10, want: 3},
		{raw: `0`, available: 10, want: 0},
		{raw: `3.0`, available: 10, want: 3},
		{raw: `3e0`, available: 10, want: 3},
		{raw: `12`, available: 5, want: 5},
		{raw: `1e300`, available: 5, want: 5},
		{raw: `-2`, available: 5, want: 0},
		{raw: `-2.0`, available: 5, want: 0},
		{raw: `"4"`, available: 10, want: 4},
		{raw: `"about 6 edits, maybe 7"`, available: 10, want: 6},
		{raw: `"-3"`, available: 10, want: 0},
		{raw: `"2.5"`, available: 10, want: 2},
		{raw: `"99999999999999999999999"`, available: 10, want: 10},
		{raw: ` 2 `, available: 10, want: 2},
		{raw: `4`, available: -1, want: 0},
		{raw: `2.5`, available: 10, wantFallback: true},
		{raw: `true`, available: 10, wantFallback: true},
		{raw: `false`, available: 10, wantFallback: true},
		{raw: `null`, available: 10, wantFallback: true},
		{raw: `"many"`, available: 10, wantFallback: true},
		{raw: `[3]`, available: 10, wantFallback: true},
		{raw: `{"n": 3}`, available: 10, wantFallback: true},
		{raw: ``, available: 10, wantFallback: true},
		{raw: `3x`, available: 10, wantFallback: true},
	}
	for _, tt := range tests {
		got, fb := ParseLearningRate(json.RawMessage(tt.raw), tt.available)
		if got != tt.want || fb != tt.wantFallback {
			t.Errorf("ParseLearningRate(%s, %d) = %d, %v; want %d, %v", tt.raw, tt.available, got, fb, tt.want, tt.wantFallback)
		}
	}
}

func BenchmarkBudgetCosine(b *testing.B) {
	for i := range b.N {
		if _, err := Budget(Cosine, 4, 2, 40, i%40+1); err != nil {
			b.Fatal(err)
		}
	}
}
