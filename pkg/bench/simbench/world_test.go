package simbench

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillfleet/skillfleet/pkg/bench"
)

func TestGenerate(t *testing.T) {
	t.Parallel()
	for _, p := range Presets() {
		t.Run(p.Name, func(t *testing.T) {
			t.Parallel()
			w, err := Generate(p.Name, 7)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := Generate(p.Name, 7)
			if diff := cmp.Diff(w, again); diff != "" {
				t.Fatalf("Generate is not deterministic (-first +second):\n%s", diff)
			}
			if other, _ := Generate(p.Name, 8); cmp.Equal(w.Test, other.Test) {
				t.Error("seeds 7 and 8 give the same test split")
			}
			if len(w.Active) != p.Pitfalls || len(w.Train) != p.Train || len(w.Val) != p.Val || len(w.Test) != p.Test {
				t.Fatalf("sizes: %d pitfalls, %d/%d/%d items; want %+v", len(w.Active), len(w.Train), len(w.Val), len(w.Test), p)
			}
			ids := map[string]bool{}
			counts := make([]int, 4)
			for _, it := range slices.Concat(w.Train, w.Val, w.Test) {
				if ids[it.ID] {
					t.Fatalf("duplicate id %s", it.ID)
				}
				ids[it.ID] = true
				if got := PitfallsInQuestion(it.Question); !slices.Equal(got, it.Pitfalls) {
					t.Fatalf("%s: PitfallsInQuestion = %v, want %v (question %q)", it.ID, got, it.Pitfalls, it.Question)
				}
				if v, ok := BaseValue(it.Question); !ok || v != it.Answer {
					t.Fatalf("%s: BaseValue = %q, want %q", it.ID, v, it.Answer)
				}
				for _, id := range it.Pitfalls {
					if !slices.Contains(w.Active, id) {
						t.Fatalf("%s: pitfall %s is not active", it.ID, id)
					}
				}
				wantType := "plain"
				if len(it.Pitfalls) > 0 {
					pf, _ := Lookup(it.Pitfalls[0])
					wantType = pf.Category
				}
				if it.TaskType != wantType {
					t.Fatalf("%s: task_type %q, want %q", it.ID, it.TaskType, wantType)
				}
				counts[len(it.Pitfalls)]++
			}
			for n, c := range counts {
				if c == 0 {
					t.Errorf("no item has %d pitfalls (counts %v)", n, counts)
				}
			}
		})
	}
	if _, err := Generate("huge", 1); !errors.Is(err, ErrUnknownPreset) {
		t.Errorf("Generate(huge) error = %v, want ErrUnknownPreset", err)
	}
}

func TestSeedAndReferenceSkills(t *testing.T) {
	t.Parallel()
	for _, p := range Presets() {
		for _, seed := range []int64{0, 1, 2} {
			w, _ := Generate(p.Name, seed)
			s, err := SeedSkill(p.Name, seed)
			if err != nil {
				t.Fatal(err)
			}
			covered := CoveredIDs(s)
			if len(covered) != 1 || !slices.Contains(w.Active, covered[0]) {
				t.Errorf("%s/%d: seed skill covers %v, want one active pitfall", p.Name, seed, covered)
			}
			if h := Harmful(s); len(h) != 0 {
				t.Errorf("%s/%d: seed skill breaks %v", p.Name, seed, h)
			}
			vague := 0
			for _, id := range w.Active {
				pf, _ := Lookup(id)
				if strings.Contains(s, "- "+pf.Vague+"\n") {
					vague++
				}
			}
			if vague != p.Pitfalls/2 {
				t.Errorf("%s/%d: %d vague lines, want %d", p.Name, seed, vague, p.Pitfalls/2)
			}
			ref, _ := ReferenceSkill(p.Name, seed)
			if got := CoveredIDs(ref); !slices.Equal(got, w.Active) {
				t.Errorf("%s/%d: reference skill covers %v, want %v", p.Name, seed, got, w.Active)
			}
			if h := Harmful(ref); len(h) != 0 {
				t.Errorf("%s/%d: reference skill breaks %v", p.Name, seed, h)
			}
		}
	}
}

func TestWriteSplits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := WriteSplits(dir, PresetDemo, 3); err != nil {
		t.Fatal(err)
	}
	s, err := bench.LoadSplitDir(dir, bench.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, _ := Generate(PresetDemo, 3)
	if len(s.Train) != 60 || len(s.Val) != 40 || len(s.Test) != 120 {
		t.Fatalf("loaded %d/%d/%d items", len(s.Train), len(s.Val), len(s.Test))
	}
	var first Item
	if err := json.Unmarshal(s.Test[0].Raw, &first); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(w.Test[0], first); diff != "" {
		t.Errorf("test item 0 (-generated +loaded):\n%s", diff)
	}
	if s.Test[0].TaskType != w.Test[0].TaskType {
		t.Errorf("task type %q, want %q", s.Test[0].TaskType, w.Test[0].TaskType)
	}
	var m Manifest
	data, err := os.ReadFile(filepath.Join(dir, "split_manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	want := Manifest{
		Benchmark: "sim", Preset: "demo", Seed: 3,
		Counts:         map[string]int{"train": 60, "val": 40, "test": 120},
		ItemFields:     []string{"id", "question", "answer", "task_type", "pitfalls"},
		ActivePitfalls: w.Active, Training: w.Preset, Notes: m.Notes,
	}
	if diff := cmp.Diff(want, m); diff != "" {
		t.Errorf("manifest (-want +got):\n%s", diff)
	}
	if !strings.Contains(m.Notes, "test double") {
		t.Errorf("manifest notes %q do not say it is a test double", m.Notes)
	}
	seed, _ := SeedSkill(PresetDemo, 3)
	if got, _ := os.ReadFile(filepath.Join(dir, SeedSkillFile)); string(got) != seed {
		t.Errorf("%s = %q, want the seed skill", SeedSkillFile, got)
	}
	if err := WriteSplits(t.TempDir(), "nope", 1); !errors.Is(err, ErrUnknownPreset) {
		t.Errorf("WriteSplits(nope) = %v, want ErrUnknownPreset", err)
	}
}

func TestPresets(t *testing.T) {
	t.Parallel()
	p, err := LookupPreset("")
	if err != nil || p.Name != PresetDemo {
		t.Fatalf("LookupPreset(\"\") = %+v, %v; want demo", p, err)
	}
	want := Preset{Name: "demo", Pitfalls: 12, Train: 60, Val: 40, Test: 120, BatchSize: 20, MinibatchSize: 5, Epochs: 3, LR: 4}
	if diff := cmp.Diff(want, p); diff != "" {
		t.Errorf("demo preset (-want +got):\n%s", diff)
	}
	c := Config{}
	if c.PresetName() != "demo" || c.WorldSeed() != 0 {
		t.Errorf("zero Config = %q/%d, want demo/0", c.PresetName(), c.WorldSeed())
	}
}
