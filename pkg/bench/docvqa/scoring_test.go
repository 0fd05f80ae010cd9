package docvqa_test

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/benchtest"
	"github.com/skillfleet/skillfleet/pkg/bench/docvqa"
	"github.com/skillfleet/skillfleet/pkg/bench/registry"
)

func TestEvaluate(t *testing.T) {
	for _, tc := range []struct {
		reply  string
		golds  []string
		answer string
		anls   float64
	}{
		{"<answer>Total</answer>", []string{"total"}, "Total", 1},
		// The tags are found in the lowercased reply and the original is
		// cut there, in code points: İ lowers to two, so the cut shifts.
		{"İstanbul branch report. <answer>42</answer>", []string{"42"}, "2<", 0},
		{"Ⱥ <answer>Total</answer>", []string{"Total"}, "Total", 1},
		// No golds score as one empty gold.
		{"<answer></answer>", nil, "", 1},
		{"no tags\n  last line \u2028", []string{"last line"}, "last line", 1},
	} {
		answer, anls := docvqa.Evaluate(tc.reply, tc.golds)
		if answer != tc.answer || math.Abs(anls-tc.anls) > 1e-9 {
			t.Errorf("Evaluate(%q, %q) = %q, %v; want %q, %v", tc.reply, tc.golds, answer, anls, tc.answer, tc.anls)
		}
	}
}

// TestGoldCellsAsText: a bare "10,000" cell is SkillOpt's tuple (10, 0)
// by default and the text 10,000 with env.gold_cells_as_text.
func TestGoldCellsAsText(t *testing.T) {
	dir := t.TempDir()
	png, err := os.ReadFile("testdata/split/images/page1.png")
	if err != nil {
		t.Fatal(err)
	}
	for _, split := range []string{"train", "val", "test"} {
		if err := os.MkdirAll(filepath.Join(dir, split), 0o755); err != nil {
			t.Fatal(err)
		}
		csv := "questionId,question,answer,image_path\nq-" + split + `,How many units?,"10,000",page.png` + "\n"
		if err := os.WriteFile(filepath.Join(dir, split, "items.csv"), []byte(csv), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "page.png"), png, 0o644); err != nil {
		t.Fatal(err)
	}
	s, err := registry.LoadSplits(docvqa.Name, dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cfg  string
		soft float64
	}{
		// "10,000" against "(10, 0)": 3 edits over 7 code points.
		{`{"split_dir":"` + dir + `"}`, 1 - 3.0/7},
		{`{"split_dir":"` + dir + `","gold_cells_as_text":true}`, 1},
	} {
		env, err := registry.New(docvqa.Name, []byte(tc.cfg))
		if err != nil {
			t.Fatal(err)
		}
		ep, err := env.Episode(context.Background(), benchtest.Text("<answer>10,000</answer>"), bench.EpisodeRequest{Item: s.Test[0]})
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(ep.Soft-tc.soft) > 1e-9 {
			t.Errorf("%s: soft %v, want %v", tc.cfg, ep.Soft, tc.soft)
		}
	}
}
