package simbench

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/skillfleet/skillfleet/internal/atomicfile"
)

// Preset names.
const (
	PresetDemo  = "demo"
	PresetPaper = "paper"
)

// ErrUnknownPreset is returned for a preset name that is not defined.
var ErrUnknownPreset = errors.New("unknown sim preset")

// Preset sizes a generated world and recommends how to train on it.
type Preset struct {
	Name string `json:"name"`
	// Pitfalls is K, how many catalogue pitfalls the world uses.
	Pitfalls int `json:"pitfalls"`
	// Train, Val and Test are the split sizes.
	Train int `json:"train"`
	Val   int `json:"val"`
	Test  int `json:"test"`
	// Recommended training settings for a config.
	BatchSize     int `json:"batch_size"`
	MinibatchSize int `json:"minibatch_size"`
	Epochs        int `json:"epochs"`
	LR            int `json:"lr"`
}

// Presets returns every preset: demo (small, for the demo and tests) and
// paper (SearchQA's 400/200/1400 split sizes).
func Presets() []Preset {
	return []Preset{
		{Name: PresetDemo, Pitfalls: 12, Train: 60, Val: 40, Test: 120, BatchSize: 20, MinibatchSize: 5, Epochs: 3, LR: 4},
		{Name: PresetPaper, Pitfalls: 20, Train: 400, Val: 200, Test: 1400, BatchSize: 40, MinibatchSize: 8, Epochs: 4, LR: 4},
	}
}

// LookupPreset returns the preset with the given name ("" = demo).
func LookupPreset(name string) (Preset, error) {
	if name == "" {
		name = PresetDemo
	}
	for _, p := range Presets() {
		if p.Name == name {
			return p, nil
		}
	}
	return Preset{}, fmt.Errorf("%w %q (want demo or paper)", ErrUnknownPreset, name)
}

// Item is one generated benchmark item, as written to the split files.
type Item struct {
	ID       string `json:"id"`
	Question string `json:"question"`
	// Answer is the gold answer: the record value quoted in the question.
	Answer   string `json:"answer"`
	TaskType string `json:"task_type"`
	// Pitfalls are the item's pitfall ids, in the order their cues appear
	// in the question. The target never sees this field; tests and docs do.
	Pitfalls []string `json:"pitfalls"`
}

// World is a generated benchmark: the active pitfalls and the three splits.
type World struct {
	Preset Preset
	Seed   int64
	// Active are the ids of the K pitfalls the items use, in catalogue order.
	Active []string
	Train  []Item
	Val    []Item
	Test   []Item
}

// pitfallsPerItem is the distribution of an item's pitfall count (0-3):
// with it a skill that covers almost nothing scores well under 0.4 and one
// that covers everything scores near 1 - epsilon.
var pitfallsPerItem = [...]float64{0.10, 0.30, 0.35, 0.25}

// Generate builds the world of a preset and seed. The same arguments give
// the same world, on every platform and Go version.
func Generate(preset string, seed int64) (*World, error) {
	p, err := LookupPreset(preset)
	if err != nil {
		return nil, err
	}
	w := &World{Preset: p, Seed: seed, Active: activePitfalls(p, seed)}
	for _, sp := range []struct {
		name string
		n    int
		dst  *[]Item
	}{{"train", p.Train, &w.Train}, {"val", p.Val, &w.Val}, {"test", p.Test, &w.Test}} {
		r := HashRNG([]byte("items"), []byte(p.Name), i64(seed), []byte(sp.name))
		items := make([]Item, sp.n)
		for i := range items {
			items[i] = genItem(r, fmt.Sprintf("sim-%s-%04d", sp.name, i+1), i+1, w.Active)
		}
		*sp.dst = items
	}
	return w, nil
}

func i64(v int64) []byte { return []byte(strconv.FormatInt(v, 10)) }

// activePitfalls picks K catalogue pitfalls for the world.
func activePitfalls(p Preset, seed int64) []string {
	r := HashRNG([]byte("active"), []byte(p.Name), i64(seed))
	idx := make([]int, len(catalogue))
	for i := range idx {
		idx[i] = i
	}
	r.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
	idx = idx[:min(p.Pitfalls, len(idx))]
	slices.Sort(idx)
	ids := make([]string, len(idx))
	for i, k := range idx {
		ids[i] = catalogue[k].ID
	}
	return ids
}

var (
	intros = []string{
		"A clerk is checking entry %d of an archive.",
		"This question concerns archive record %d.",
		"Entry %d of a regional register is under review.",
		"An auditor pulled record %d from the archive.",
		"Record %d comes from a municipal filing cabinet.",
	}
	cueLines = []string{
		"The entry mentions %s.",
		"Note %s in the record.",
		"It also refers to %s.",
		"The question involves %s.",
	}
	asks = []string{
		"What value does the record give?",
		"Which figure should be reported?",
		"State the value from the record.",
	}
)

// RecordMarker precedes the record value in every question.
const RecordMarker = "Record value: "

func genItem(r *RNG, id string, n int, active []string) Item {
	u, c := r.Float64(), 0
	for acc := 0.0; c < len(pitfallsPerItem); c++ {
		if acc += pitfallsPerItem[c]; u < acc {
			break
		}
	}
	c = min(c, len(pitfallsPerItem)-1, len(active))
	pool := slices.Clone(active)
	r.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	pits := pool[:c]

	var q strings.Builder
	fmt.Fprintf(&q, intros[r.IntN(len(intros))], n)
	line := r.IntN(len(cueLines)) // successive cues use successive wordings
	for k, pid := range pits {
		p, _ := Lookup(pid)
		q.WriteString(" ")
		fmt.Fprintf(&q, cueLines[(line+k)%len(cueLines)], p.Cue)
	}
	gold := genValue(r)
	q.WriteString(" " + asks[r.IntN(len(asks))] + " " + RecordMarker + gold + ".")

	tt := "plain"
	if len(pits) > 0 {
		p, _ := Lookup(pits[0])
		tt = p.Category
	}
	return Item{ID: id, Question: q.String(), Answer: gold, TaskType: tt, Pitfalls: slices.Clone(pits)}
}

// genValue returns four distinct digits from 1-9: every pitfall turns such
// a value into a different wrong answer, so a wrong answer names its pitfall.
func genValue(r *RNG) string {
	d := []byte("123456789")
	r.Shuffle(len(d), func(i, j int) { d[i], d[j] = d[j], d[i] })
	return string(d[:4])
}

// BaseValue returns the record value quoted in a question.
func BaseValue(question string) (string, bool) {
	at := strings.LastIndex(question, RecordMarker)
	if at < 0 {
		return "", false
	}
	rest := question[at+len(RecordMarker):]
	end := 0
	for end < len(rest) && rest[end] >= '0' && rest[end] <= '9' {
		end++
	}
	return rest[:end], end > 0
}

// Skill text shared by the seed and reference skills. None of it holds a
// stem.
const (
	skillTitle   = "# Answering questions about archived records"
	skillGeneral = "Answer every question from the record it quotes.\n\n## General\n- Read the whole question before you answer.\n- Put only your final answer inside the answer tags."
	// WatchHeading heads the pitfall section of the seed skill.
	WatchHeading = "## Things to watch"
)

// SeedSkill returns the weak initial skill of a world: a title, a few
// generic lines, a vague line (holding no stem) for every other active
// pitfall, and the proper rule of one pitfall.
func SeedSkill(preset string, seed int64) (string, error) {
	p, err := LookupPreset(preset)
	if err != nil {
		return "", err
	}
	active := activePitfalls(p, seed)
	r := HashRNG([]byte("seed-skill"), []byte(p.Name), i64(seed))
	order := slices.Clone(active)
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	nVague := len(order) / 2
	var b strings.Builder
	b.WriteString(skillTitle + "\n\n" + skillGeneral + "\n\n" + WatchHeading + "\n")
	for _, id := range order[:nVague] {
		pf, _ := Lookup(id)
		b.WriteString("- " + pf.Vague + "\n")
	}
	if nVague < len(order) {
		pf, _ := Lookup(order[nVague])
		b.WriteString("- " + pf.Rule + "\n")
	}
	return b.String(), nil
}

// ReferenceSkill returns a skill that holds the canonical rule of every
// active pitfall and nothing harmful: what training should approach.
func ReferenceSkill(preset string, seed int64) (string, error) {
	p, err := LookupPreset(preset)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString(skillTitle + "\n\n" + skillGeneral + "\n\n" + WatchHeading + "\n")
	for _, id := range activePitfalls(p, seed) {
		pf, _ := Lookup(id)
		b.WriteString("- " + pf.Rule + "\n")
	}
	return b.String(), nil
}

// Manifest is split_manifest.json.
type Manifest struct {
	Benchmark      string         `json:"benchmark"`
	Preset         string         `json:"preset"`
	Seed           int64          `json:"seed"`
	Counts         map[string]int `json:"counts"`
	ItemFields     []string       `json:"item_fields"`
	ActivePitfalls []string       `json:"active_pitfalls"`
	Training       Preset         `json:"training"`
	Notes          string         `json:"notes"`
}

// SeedSkillFile is the name of the seed skill WriteSplits leaves beside the
// splits, for a config's skill_init.
const SeedSkillFile = "seed_skill.md"

// WriteSplits generates the world of preset and seed and writes it under
// dir: train/items.json, val/items.json, test/items.json (JSON arrays of
// [Item]), seed_skill.md, and split_manifest.json last, so that a
// directory with a manifest is complete.
func WriteSplits(dir, preset string, seed int64) error {
	w, err := Generate(preset, seed)
	if err != nil {
		return err
	}
	for _, sp := range []struct {
		name  string
		items []Item
	}{{"train", w.Train}, {"val", w.Val}, {"test", w.Test}} {
		if err := atomicfile.WriteJSON(filepath.Join(dir, sp.name, "items.json"), sp.items); err != nil {
			return err
		}
	}
	seedSkill, err := SeedSkill(preset, seed)
	if err != nil {
		return err
	}
	if err := atomicfile.Write(filepath.Join(dir, SeedSkillFile), []byte(seedSkill)); err != nil {
		return err
	}
	m := Manifest{
		Benchmark: "sim", Preset: w.Preset.Name, Seed: seed,
		Counts:         map[string]int{"train": len(w.Train), "val": len(w.Val), "test": len(w.Test)},
		ItemFields:     []string{"id", "question", "answer", "task_type", "pitfalls"},
		ActivePitfalls: w.Active,
		Training:       w.Preset,
		Notes: "Generated by the simulated benchmark, a test double: synthetic questions whose answers go wrong " +
			"in catalogued ways unless the skill states the matching rule. 'pitfalls' is hidden from the target; " +
			"training settings are the preset's recommendation. " + SeedSkillFile + " is the weak initial skill.",
	}
	return atomicfile.WriteJSON(filepath.Join(dir, "split_manifest.json"), m)
}
