package bench_test

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/bench"
)

func TestRatioCounts(t *testing.T) {
	for _, tc := range []struct {
		total int
		w     [3]int
		want  [3]int
	}{
		// 10 by 2:1:7 divides exactly.
		{10, [3]int{2, 1, 7}, [3]int{2, 1, 7}},
		// 11 by 2:1:7: floors 2,1,7 (remainders 2/10, 1/10, 7/10); the one
		// left over goes to test, the largest remainder.
		{11, [3]int{2, 1, 7}, [3]int{2, 1, 8}},
		// 3 by 2:1:7: floors 0,0,2 (remainders 6, 3, 1 tenths); one left → train.
		{3, [3]int{2, 1, 7}, [3]int{1, 0, 2}},
		// 4 by 1:1:1: floors 1,1,1, equal remainders and weights: position decides.
		{4, [3]int{1, 1, 1}, [3]int{2, 1, 1}},
		// 5 by 1:1:3: floors 1,1,3 exactly.
		{5, [3]int{1, 1, 3}, [3]int{1, 1, 3}},
		// 7 by 1:2:2: 7/5=1 r2, 14/5=2 r4, 14/5=2 r4: two left, to val and
		// test (largest remainders, equal weights → position).
		{7, [3]int{1, 2, 2}, [3]int{1, 3, 3}},
		// 2 by 1:3:1 (remainders 2, 1, 2 fifths, weights 1, 3, 1): floors
		// 0,1,0 → one left: train and test tie on remainder and weight →
		// train by position.
		{2, [3]int{1, 3, 1}, [3]int{1, 1, 0}},
	} {
		if got := bench.RatioCounts(tc.total, tc.w[:]); [3]int(got) != tc.want {
			t.Errorf("RatioCounts(%d, %v) = %v, want %v", tc.total, tc.w, got, tc.want)
		}
	}
}

func TestWriteRatioSplit(t *testing.T) {
	dir := t.TempDir()
	var lines []string
	for i := range 10 {
		lines = append(lines, fmt.Sprintf(`{"id":"q%d","question":"x"}`, i))
	}
	data := filepath.Join(dir, "data.jsonl")
	if err := os.WriteFile(data, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "split")
	m, err := bench.WriteRatioSplit(bench.RatioOptions{DataPath: data, Ratio: "2:1:7", Seed: 42, OutDir: out})
	if err != nil {
		t.Fatal(err)
	}
	if m.Counts["train"] != 2 || m.Counts["val"] != 1 || m.Counts["test"] != 7 {
		t.Fatalf("counts = %v", m.Counts)
	}
	s, err := bench.LoadSplitDir(out, bench.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// CPython: l = list(range(10)); random.Random(42).shuffle(l) gives
	// [7, 3, 2, 8, 5, 6, 9, 4, 0, 1]; train takes the first 2, val the next.
	ids := func(items []bench.Item) string {
		var out []string
		for _, it := range items {
			out = append(out, it.ID)
		}
		return strings.Join(out, ",")
	}
	if got := ids(s.Train) + "|" + ids(s.Val) + "|" + ids(s.Test); got != "q7,q3|q2|q8,q5,q6,q9,q4,q0,q1" {
		t.Errorf("split = %s", got)
	}
	// Re-running with the same inputs keeps the split; a different seed into
	// the same directory is refused rather than overwriting it.
	if _, err := bench.WriteRatioSplit(bench.RatioOptions{DataPath: data, Ratio: "2:1:7", Seed: 42, OutDir: out}); err != nil {
		t.Errorf("same split again: %v", err)
	}
	if _, err := bench.WriteRatioSplit(bench.RatioOptions{DataPath: data, Ratio: "2:1:7", Seed: 7, OutDir: out}); err == nil || !strings.Contains(err.Error(), "seed 42") {
		t.Errorf("different seed into the same dir: err = %v", err)
	}
	if _, err := bench.WriteRatioSplit(bench.RatioOptions{DataPath: data, Ratio: "2:0:7", OutDir: t.TempDir()}); err == nil {
		t.Error("ratio 2:0:7 accepted")
	}
}

func TestReadItemsFormats(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tc := range []struct {
		file, body string
		n          int
		err        string
	}{
		{"a.json", `[{"id":1},{"id":2}]`, 2, ""},
		{"b.json", `{"data":[{"id":1}]}`, 1, ""},
		{"c.json", `{"x":{"id":"x"},"y":{"id":"y"},"z":{"id":"z"}}`, 3, ""},
		{"d.json", `{"id":"a"}`, 0, "object of items"},
		{"e.jsonl", "{\"id\":1}\n\n{\"id\":2}\n", 2, ""},
		{"f.jsonl", "{\"id\":1}\nnope\n", 0, "f.jsonl:2"},
		{"g.csv", "id,question\n1,\"a, b\"\n2,c\n", 2, ""},
		{"h.csv", "id,question\n1\n", 0, "row 2 has 1 fields"},
	} {
		raws, err := bench.ReadItemsFile(write(tc.file, tc.body))
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: err = %v, want %q", tc.file, err, tc.err)
			}
			continue
		}
		if err != nil || len(raws) != tc.n {
			t.Errorf("%s: %d items, err %v; want %d", tc.file, len(raws), err, tc.n)
		}
	}
	// Object-of-items keeps file order.
	raws, _ := bench.ReadItemsFile(filepath.Join(dir, "c.json"))
	var first struct{ ID string }
	_ = json.Unmarshal(raws[0], &first)
	if first.ID != "x" {
		t.Errorf("first item of c.json = %q, want x", first.ID)
	}
	// CSV values are strings, quoted commas kept.
	raws, _ = bench.ReadItemsFile(filepath.Join(dir, "g.csv"))
	if string(raws[0]) != `{"id":"1","question":"a, b"}` {
		t.Errorf("g.csv row 1 = %s", raws[0])
	}
}

func TestLoadSplitDirNormalizesAndStoresID(t *testing.T) {
	dir := t.TempDir()
	for _, sp := range []string{"train", "val", "test"} {
		if err := os.MkdirAll(filepath.Join(dir, sp), 0o755); err != nil {
			t.Fatal(err)
		}
		body := fmt.Sprintf("uid,q\n%s-1,hello\n", sp)
		if err := os.WriteFile(filepath.Join(dir, sp, "items.csv"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	norm := func(m map[string]any) (map[string]any, error) {
		if m["q"] == "" {
			return nil, fmt.Errorf("q: empty")
		}
		m["question"] = m["q"]
		delete(m, "q")
		return m, nil
	}
	s, err := bench.LoadSplitDir(dir, bench.LoadOptions{IDFields: []string{"uid"}, Files: []string{"*.csv", "*.json"}, Normalize: norm})
	if err != nil {
		t.Fatal(err)
	}
	// The id is stored under "id" too, and the normalised fields are what
	// the item carries.
	if got := string(s.Train[0].Raw); got != `{"id":"train-1","question":"hello","uid":"train-1"}` {
		t.Errorf("train item = %s", got)
	}
	if err := os.WriteFile(filepath.Join(dir, "val", "items.csv"), []byte("uid,q\nv,\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = bench.LoadSplitDir(dir, bench.LoadOptions{IDFields: []string{"uid"}, Files: []string{"*.csv"}, Normalize: norm})
	if err == nil || !strings.Contains(err.Error(), "val/items.csv:2: q: empty") {
		t.Errorf("normalize error = %v", err)
	}
}

// TestRatioSplitMatchesCPython checks RatioCounts and RatioSplit against
// CPython 3.11 for every total up to the fixture's max_total. The fixture
// is scripts/fixtures/plan_fixtures.py's (its ratio_splits section).
func TestRatioSplitMatchesCPython(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "coordinator", "plan", "testdata", "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		RatioSplits struct {
			MaxTotal int `json:"max_total"`
			Cases    []struct {
				Weights   []int  `json:"weights"`
				SplitSeed int64  `json:"split_seed"`
				Counts    string `json:"counts"`
				Digests   string `json:"digests"`
			} `json:"cases"`
		} `json:"ratio_splits"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatal(err)
	}
	if len(f.RatioSplits.Cases) == 0 {
		t.Fatal("no ratio_splits cases in the fixture")
	}
	ints := func(xs []int) string {
		s := make([]string, len(xs))
		for i, x := range xs {
			s[i] = strconv.Itoa(x)
		}
		return strings.Join(s, ",")
	}
	for _, c := range f.RatioSplits.Cases {
		w := c.Weights
		wantCounts, wantDigests := strings.Fields(c.Counts), strings.Fields(c.Digests)
		for total := 0; total <= f.RatioSplits.MaxTotal; total++ {
			counts := bench.RatioCounts(total, w)
			if got := ints(counts); got != wantCounts[total] {
				t.Errorf("RatioCounts(%d, %v) = %s, want %s", total, w, got, wantCounts[total])
			}
			parts := bench.RatioSplit(total, w, c.SplitSeed)
			lines := make([]string, len(parts))
			for i, p := range parts {
				lines[i] = ints(p)
			}
			sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
			if got := hex.EncodeToString(sum[:])[:8]; got != wantDigests[total] {
				t.Errorf("RatioSplit(%d, %v, %d) digest = %s, want %s", total, w, c.SplitSeed, got, wantDigests[total])
			}
		}
	}
}
