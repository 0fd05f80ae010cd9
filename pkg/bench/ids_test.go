package bench_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/bench"
)

func writeFile(t *testing.T, path, body string) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func itemIDs(s *bench.Splits) string {
	var parts []string
	for _, sp := range [][]bench.Item{s.Train, s.Val, s.Test} {
		var ids []string
		for _, it := range sp {
			ids = append(ids, it.ID)
		}
		parts = append(parts, strings.Join(ids, ","))
	}
	return strings.Join(parts, "|")
}

// ratioSplit writes a ratio split of body (a file named name) and loads it.
func ratioSplit(t *testing.T, name, body string, o bench.LoadOptions) (string, *bench.Splits, error) {
	t.Helper()
	dir := t.TempDir()
	src := writeFile(t, filepath.Join(dir, name), body)
	out := filepath.Join(dir, "_generated_splits", "x_2-1-7_seed42")
	if _, err := bench.WriteRatioSplit(bench.RatioOptions{DataPath: src, Ratio: "2:1:7", Seed: 42, OutDir: out}); err != nil {
		return src, nil, err
	}
	s, err := bench.LoadSplitDir(out, o)
	return src, s, err
}

// TestRatioSplitWithoutIDs: a JSONL file without ids gets ids from each
// row's position in the source file, the same however it is shuffled.
func TestRatioSplitWithoutIDs(t *testing.T) {
	var lines []string
	for i := range 10 {
		lines = append(lines, fmt.Sprintf(`{"question":"q%d","answer":"a"}`, i))
	}
	// A blank line and a comment-free layout: rows count items, not lines.
	body := strings.Join(lines[:5], "\n") + "\n\n" + strings.Join(lines[5:], "\n") + "\n"
	_, s, err := ratioSplit(t, "data.jsonl", body, bench.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Seed 42 orders the rows [7, 3, 2, 8, 5, 6, 9, 4, 0, 1] (0-based).
	if got := itemIDs(s); got != "row-8,row-4|row-3|row-9,row-6,row-7,row-10,row-5,row-1,row-2" {
		t.Errorf("ids = %s", got)
	}
	if got := string(s.Val[0].Raw); got != `{"answer":"a","id":"row-3","question":"q2"}` {
		t.Errorf("val item = %s", got)
	}
}

// TestRatioSplitIDField: env.id_field names where ids are; a row without
// it is an error naming the user's file and line, never the generated one.
func TestRatioSplitIDField(t *testing.T) {
	var lines []string
	for i := range 10 {
		lines = append(lines, fmt.Sprintf(`{"qid":"Q%d","question":"q"}`, i))
	}
	_, s, err := ratioSplit(t, "data.jsonl", strings.Join(lines, "\n"), bench.LoadOptions{IDField: "qid"})
	if err != nil {
		t.Fatal(err)
	}
	if got := itemIDs(s); got != "Q7,Q3|Q2|Q8,Q5,Q6,Q9,Q4,Q0,Q1" {
		t.Errorf("ids = %s", got)
	}

	lines[6] = `{"question":"no id here"}`
	src, _, err := ratioSplit(t, "data.jsonl", strings.Join(lines, "\n"), bench.LoadOptions{IDField: "qid"})
	want := src + ":7: missing qid (env.id_field)"
	if err == nil || err.Error() != want {
		t.Errorf("err = %v\nwant %s", err, want)
	}
}

// TestRatioSplitErrorsNameTheSource: every data error about a generated
// split names the source file and line.
func TestRatioSplitErrorsNameTheSource(t *testing.T) {
	rows := func(edit func([]string)) string {
		var lines []string
		for i := range 10 {
			lines = append(lines, fmt.Sprintf(`{"id":"q%d","question":"x"}`, i))
		}
		edit(lines)
		return strings.Join(lines, "\n")
	}
	norm := func(m map[string]any) (map[string]any, error) {
		if m["question"] == "" {
			return nil, fmt.Errorf("question: empty")
		}
		return m, nil
	}
	for _, tc := range []struct {
		name, file, body string
		o                bench.LoadOptions
		want             string // after "<source>:"
	}{
		{"mixed ids", "d.jsonl", rows(func(l []string) { l[4] = `{"question":"x"}` }), bench.LoadOptions{},
			"5: missing id (other items have one; give every item an id, or none to number them by position)"},
		{"duplicate", "d.jsonl", rows(func(l []string) { l[8] = `{"id":"q2","question":"x"}` }), bench.LoadOptions{},
			`9: item "q2" also appears at `},
		{"normalize", "d.jsonl", rows(func(l []string) { l[9] = `{"id":"q9","question":""}` }), bench.LoadOptions{Normalize: norm},
			"10: question: empty"},
		{"json array", "d.json", "[\n" + strings.ReplaceAll(rows(func(l []string) { l[2] = `{"question":"x"}` }), "\n", ",\n") + "\n]", bench.LoadOptions{},
			"4: missing id"},
		{"csv", "d.csv", "id,question\nq0,\"two\nlines\"\n,x\nq2,y\n", bench.LoadOptions{}, "4: missing id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, _, err := ratioSplit(t, tc.file, tc.body, tc.o)
			if err == nil || !strings.HasPrefix(err.Error(), src+":"+tc.want) {
				t.Errorf("err = %v\nwant prefix %s:%s", err, src, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "_generated_splits") && tc.name != "duplicate" {
				t.Errorf("error names the generated split: %v", err)
			}
		})
	}
	// The duplicate's other occurrence is named in the source too.
	src, _, err := ratioSplit(t, "d.jsonl", rows(func(l []string) { l[8] = `{"id":"q2","question":"x"}` }), bench.LoadOptions{})
	if err == nil || !strings.HasSuffix(err.Error(), "also appears at "+src+":3 (ids must be unique and splits must not overlap)") {
		t.Errorf("duplicate err = %v", err)
	}
}

// TestSplitDirWithoutIDs: split files without ids get ids from the split
// and each row's position; ids are unique across splits.
func TestSplitDirWithoutIDs(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "train", "items.jsonl"), "{\"q\":\"a\"}\n{\"q\":\"b\"}\n")
	writeFile(t, filepath.Join(dir, "val", "items.jsonl"), "{\"q\":\"c\"}\n")
	writeFile(t, filepath.Join(dir, "test", "items.jsonl"), "\n{\"q\":\"d\"}\n")
	s, err := bench.LoadSplitDir(dir, bench.LoadOptions{Files: []string{"*.jsonl"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := itemIDs(s); got != "train-row-1,train-row-2|val-row-1|test-row-1" {
		t.Errorf("ids = %s", got)
	}
	// A bad line in a split file is named with its line.
	writeFile(t, filepath.Join(dir, "test", "items.jsonl"), "\n{\"q\":\"d\"}\n[1]\n")
	if _, err := bench.LoadSplitDir(dir, bench.LoadOptions{Files: []string{"*.jsonl"}}); err == nil ||
		err.Error() != filepath.Join(dir, "test", "items.jsonl")+":3: want one JSON object per line" {
		t.Errorf("err = %v", err)
	}
}

// TestReadItemsLines: JSON syntax errors and non-object values are named
// by line.
func TestReadItemsLines(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ file, body, want string }{
		{"a.json", "[\n{\"id\":1},\n{\"id\":2,}\n]", ":3: invalid JSON"},
		{"b.json", "[\n{\"id\":1},\n7\n]", ":3: want a JSON array of item objects"},
		{"c.json", "{\"data\": [\n{\"id\":1},\n\"x\"]}", ":3: want a JSON array of item objects"},
		{"d.json", "{\"a\": {\"id\":1},\n \"b\": [1]}", ":2: want a JSON array of item objects"},
		{"e.csv", "id,q\n1,\"unterminated\n", ":2: "},
	} {
		p := writeFile(t, filepath.Join(dir, tc.file), tc.body)
		_, err := bench.ReadItemsFile(p)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.file, err, tc.want)
		}
	}
	// Lines of a pretty-printed {"data": [...]} file, through a ratio split.
	p := writeFile(t, filepath.Join(dir, "f.json"), "{\n  \"meta\": 1,\n  \"data\": [\n    {\"question\": \"x\"},\n    {\"id\": \"b\"}\n  ]\n}\n")
	out := filepath.Join(dir, "split")
	if _, err := bench.WriteRatioSplit(bench.RatioOptions{DataPath: p, Ratio: "1:1:1", Seed: 1, OutDir: out}); err != nil {
		t.Fatal(err)
	}
	if _, err := bench.LoadSplitDir(out, bench.LoadOptions{}); err == nil || !strings.HasPrefix(err.Error(), p+":4: missing id") {
		t.Errorf("err = %v, want %s:4: missing id", err, p)
	}
}
