package synth

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/bench/registry"
)

// TestPaperPresetHasSkillOptCounts writes every world at the paper preset
// and reads it back with the benchmark's own loader: the split sizes are
// SkillOpt's released ones (spec §4.1), and the manifest says so.
func TestPaperPresetHasSkillOptCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("writes thousands of items")
	}
	for _, name := range Benchmarks() {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			m, err := Write(name, dir, PresetPaper, 1)
			if err != nil {
				t.Fatal(err)
			}
			s, err := registry.LoadSplits(name, dir, 0)
			if err != nil {
				t.Fatal(err)
			}
			want := paperCounts[name]
			got := [3]int{len(s.Train), len(s.Val), len(s.Test)}
			if got != want {
				t.Fatalf("loaded %v items, want %v", got, want)
			}
			var disk Manifest
			b, err := os.ReadFile(filepath.Join(dir, "split_manifest.json"))
			if err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(b, &disk); err != nil {
				t.Fatal(err)
			}
			if disk.Benchmark != name || disk.Counts["train"] != want[0] || disk.Counts["val"] != want[1] || disk.Counts["test"] != want[2] || len(disk.Rules) != len(m.Rules) {
				t.Fatalf("manifest %+v does not describe the world", disk)
			}
			if _, err := os.Stat(filepath.Join(dir, disk.SeedSkill)); err != nil {
				t.Fatalf("seed skill: %v", err)
			}
		})
	}
}

func TestUnknownBenchmarkAndPreset(t *testing.T) {
	if _, err := Write("nosuch", t.TempDir(), "", 0); err == nil {
		t.Error("an unknown benchmark was written")
	}
	if _, err := Write("searchqa", t.TempDir(), "huge", 0); err == nil {
		t.Error("an unknown preset was accepted")
	}
}

// TestRulesAreWellFormed checks every world rule: its stems are in its
// text and paraphrases, not in its vague line; its harmful stems are in its
// harmful rule; and its lines are short enough not to read as filler.
func TestRulesAreWellFormed(t *testing.T) {
	for _, r := range WorldRules() {
		for _, text := range append([]string{r.Text}, r.Paraphrases...) {
			if !r.Covered(text) {
				t.Errorf("%s: %q lacks a stem of %v", r.ID, text, r.Stems)
			}
			if len(text) > 100 {
				t.Errorf("%s: %q is longer than 100 characters", r.ID, text)
			}
		}
		if r.Covered(r.Vague) || !r.Broken(r.Harmful) || r.Broken(r.Text) {
			t.Errorf("%s: vague line, harmful rule or rule mixes up the stems", r.ID)
		}
	}
}
