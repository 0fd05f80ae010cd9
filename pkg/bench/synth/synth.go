// Package synth writes synthetic worlds for the real benchmarks: small,
// deterministic data sets in each benchmark's own on-disk format (split
// directories of items, PNG pages, document folders, workbooks, game
// layouts), read by the same loaders as real data. Each world hides rules
// that a skill must teach; the simulated model (backends/sim) plays them
// and is right exactly when the skill carries the rules an item needs.
// They are test doubles: they show that a benchmark's loader, prompts,
// tool runtime and scorer work inside the whole training loop, offline.
//
// # Rules
//
// A world's rules are [Rule]s: a cue that marks an item as needing the
// rule, the rule's sentence, keyword stems that show the rule is in a
// skill, a harmful look-alike, and the wrong answer an agent gives when it
// lacks the rule. Answer-format, unit and rounding rules are the simulated
// benchmark's pitfalls ([simbench.Catalogue]); worlds that have tools,
// cells or actions add their own ([WorldRules]).
//
// Nothing outside the sim packages and this one may rely on the rules:
// the benchmarks and the trainer see only ordinary items.
package synth

import (
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/skillfleet/skillfleet/internal/atomicfile"
	"github.com/skillfleet/skillfleet/pkg/bench/docvqa"
	"github.com/skillfleet/skillfleet/pkg/bench/livemath"
	"github.com/skillfleet/skillfleet/pkg/bench/officeqa"
	"github.com/skillfleet/skillfleet/pkg/bench/searchqa"
	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
)

// Preset names.
const (
	PresetSmall = "small"
	PresetPaper = "paper"
)

// Size is a world's size.
type Size struct {
	Preset string `json:"preset"`
	// Rules is how many of the benchmark's eligible rules the world uses.
	Rules int `json:"rules"`
	Train int `json:"train"`
	Val   int `json:"val"`
	Test  int `json:"test"`
}

// paperCounts are SkillOpt's released split sizes (spec §4.1).
var paperCounts = map[string][3]int{
	"searchqa":    {400, 200, 1400},
	"livemath":    {35, 17, 125},
	"docvqa":      {107, 53, 374},
	"officeqa":    {50, 24, 172},
	"spreadsheet": {80, 40, 280},
	"alfworld":    {39, 18, 134},
	"textgame":    {39, 18, 134},
	"jsonl":       {400, 200, 1400},
}

// SizeOf returns the size of a benchmark's world for a preset ("" = small).
func SizeOf(benchName, preset string) (Size, error) {
	switch preset {
	case "", PresetSmall:
		s := Size{Preset: PresetSmall, Rules: 5, Train: 40, Val: 20, Test: 40}
		if benchName == "spreadsheet" {
			// Every episode runs Python (and imports openpyxl, ~0.3 CPU-s)
			// in a sandbox: a smaller world, as many training items as
			// three steps of four use and enough test items for a gain
			// of 0.3 to be four items.
			s = Size{Preset: PresetSmall, Rules: 4, Train: 12, Val: 6, Test: 12}
		}
		return s, nil
	case PresetPaper:
		c, ok := paperCounts[benchName]
		if !ok {
			return Size{}, fmt.Errorf("synth: no paper preset for benchmark %q", benchName)
		}
		return Size{Preset: PresetPaper, Rules: 8, Train: c[0], Val: c[1], Test: c[2]}, nil
	default:
		return Size{}, fmt.Errorf("synth: unknown preset %q (want small or paper)", preset)
	}
}

// Generator writes one benchmark's world into a directory.
type Generator func(dir string, size Size, seed int64) (*Manifest, error)

// generators holds every benchmark that has a synthetic world, by name:
// the one place to look for what `skillfleet data synth` can write.
var generators = map[string]Generator{
	"alfworld": func(dir string, size Size, seed int64) (*Manifest, error) {
		return writeHousehold("alfworld", dir, size, seed)
	},
	docvqa.Name:   writeDocVQA,
	"jsonl":       writeJSONL,
	livemath.Name: writeLiveMath,
	officeqa.Name: writeOfficeQA,
	searchqa.Name: writeSearchQA,
	"spreadsheet": writeSpreadsheet,
	"textgame": func(dir string, size Size, seed int64) (*Manifest, error) {
		return writeHousehold("textgame", dir, size, seed)
	},
}

// Benchmarks returns the names of the benchmarks that have a world.
func Benchmarks() []string {
	names := make([]string, 0, len(generators))
	for n := range generators {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// Write generates the world of benchmark name for preset and seed into
// dir, and writes split_manifest.json last, so that a directory with a
// manifest is complete.
func Write(name, dir, preset string, seed int64) (*Manifest, error) {
	g, ok := generators[name]
	if !ok {
		return nil, fmt.Errorf("synth: no synthetic world for benchmark %q (have %s)", name, strings.Join(Benchmarks(), ", "))
	}
	size, err := SizeOf(name, preset)
	if err != nil {
		return nil, err
	}
	m, err := g(dir, size, seed)
	if err != nil {
		return nil, fmt.Errorf("synth %s: %w", name, err)
	}
	m.Benchmark, m.Preset, m.Seed = name, size.Preset, seed
	m.Generator = "skillfleet data synth"
	if m.Notes == "" {
		m.Notes = "A synthetic world (a test double), not real benchmark data."
	}
	if err := atomicfile.WriteJSON(filepath.Join(dir, "split_manifest.json"), m); err != nil {
		return nil, err
	}
	return m, nil
}

// Manifest is split_manifest.json of a synthetic world: SkillOpt's
// released-manifest fields (benchmark, counts, item_fields, notes) plus
// what generated it and the rules it hides.
type Manifest struct {
	Benchmark  string         `json:"benchmark"`
	Generator  string         `json:"generator"`
	Preset     string         `json:"preset"`
	Seed       int64          `json:"seed"`
	Counts     map[string]int `json:"counts"`
	ItemFields []string       `json:"item_fields"`
	// Rules are the ids of the rules the world's items need.
	Rules []string `json:"rules"`
	// SeedSkill is the weak initial skill file beside the splits.
	SeedSkill string `json:"seed_skill"`
	Notes     string `json:"notes"`
}

// SeedSkillFile is the weak initial skill each world leaves beside its
// splits, for a config's env.skill_init.
const SeedSkillFile = "seed_skill.md"

// Rule is one hidden rule of a world.
type Rule struct {
	ID string
	// Category groups rules; it is an item's task_type when the rule is
	// its first.
	Category string
	// Cue is the phrase an item's text holds when the item needs the rule.
	Cue string
	// Text is the rule's sentence; Paraphrases say the same in other words.
	Text        string
	Paraphrases []string
	// Stems all occur (case-insensitively) in a skill that holds the rule.
	Stems []string
	// Vague is a line on the rule's topic holding no stem.
	Vague string
	// Harmful is a tempting wrong rule; HarmfulStems show it in a skill.
	Harmful      string
	HarmfulStems []string
	Description  string
	// Wrong is the answer an agent that lacks the rule gives for gold.
	Wrong func(gold string) string
}

// FromPitfall returns the simulated benchmark's pitfall id as a Rule.
func FromPitfall(id string) Rule {
	p, ok := simbench.Lookup(id)
	if !ok {
		panic("synth: unknown pitfall " + id)
	}
	return Rule{ID: p.ID, Category: p.Category, Cue: p.Cue, Text: p.Rule, Paraphrases: p.Paraphrases,
		Stems: p.Stems, Vague: p.Vague, Harmful: p.Harmful, HarmfulStems: p.HarmfulStems,
		Description: p.Description, Wrong: p.Wrong}
}

// LookupRule returns the rule with the given id: a world rule or a
// pitfall of the simulated benchmark.
func LookupRule(id string) (Rule, bool) {
	if r, ok := worldRules[id]; ok {
		return r, true
	}
	if _, ok := simbench.Lookup(id); ok {
		return FromPitfall(id), true
	}
	return Rule{}, false
}

// Covered reports whether skill holds rule r (every stem, case-insensitively).
func (r Rule) Covered(skill string) bool { return containsAll(strings.ToLower(skill), r.Stems) }

// Broken reports whether skill holds r's harmful rule.
func (r Rule) Broken(skill string) bool { return containsAll(strings.ToLower(skill), r.HarmfulStems) }

func containsAll(low string, stems []string) bool {
	for _, s := range stems {
		if !strings.Contains(low, s) {
			return false
		}
	}
	return len(stems) > 0
}

// CuesIn returns the ids of the rules among ids whose cue occurs in text,
// in the order the cues appear.
func CuesIn(text string, ids []string) []string {
	type hit struct {
		at int
		id string
	}
	var hits []hit
	for _, id := range ids {
		r, ok := LookupRule(id)
		if !ok {
			continue
		}
		if at := strings.Index(text, r.Cue); at >= 0 {
			hits = append(hits, hit{at, id})
		}
	}
	slices.SortStableFunc(hits, func(a, b hit) int { return a.at - b.at })
	out := make([]string, len(hits))
	for i, h := range hits {
		out[i] = h.id
	}
	return out
}

// RNG is the deterministic generator of the worlds.
type RNG = simbench.RNG

// newRNG returns a generator seeded by the benchmark, the preset, the
// seed and a purpose.
func newRNG(name string, size Size, seed int64, purpose string) *RNG {
	return simbench.HashRNG([]byte("synth"), []byte(name), []byte(size.Preset), []byte(strconv.FormatInt(seed, 10)), []byte(purpose))
}

// pickRules chooses n of the eligible rule ids, kept in eligible order.
func pickRules(r *RNG, eligible []string, n int) []string {
	idx := make([]int, len(eligible))
	for i := range idx {
		idx[i] = i
	}
	r.Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
	idx = idx[:min(n, len(idx))]
	slices.Sort(idx)
	out := make([]string, len(idx))
	for i, k := range idx {
		out[i] = eligible[k]
	}
	return out
}

// rulesPerItem is the distribution of an item's rule count (0-2).
var rulesPerItem = [...]float64{0.15, 0.45, 0.40}

// itemRules draws an item's rules from the active ones.
func itemRules(r *RNG, active []string) []string {
	u, c := r.Float64(), 0
	for acc := 0.0; c < len(rulesPerItem); c++ {
		if acc += rulesPerItem[c]; u < acc {
			break
		}
	}
	c = min(c, len(rulesPerItem)-1, len(active))
	pool := slices.Clone(active)
	r.Shuffle(len(pool), func(i, j int) { pool[i], pool[j] = pool[j], pool[i] })
	return slices.Clone(pool[:c])
}

// Value returns four distinct digits from 1-9: every rule's wrong answer
// for such a value differs from the others', so a wrong answer names its
// rule.
func Value(r *RNG) string {
	d := []byte("123456789")
	r.Shuffle(len(d), func(i, j int) { d[i], d[j] = d[j], d[i] })
	return string(d[:4])
}

// pick returns one of xs.
func pick[T any](r *RNG, xs []T) T { return xs[r.IntN(len(xs))] }

// Names of places and registers the worlds' items talk about.
var entityNames = []string{
	"Harlow", "Brenton", "Calder", "Dunmore", "Elstow", "Farleigh", "Glenrock", "Hadley", "Inverby",
	"Jarrow", "Kelby", "Lindale", "Marston", "Netherby", "Oakham", "Pendle", "Quarry Hill", "Redmire",
	"Selby", "Thornbury", "Ulverton", "Vexford", "Whitby", "Yarrow", "Ashcombe", "Birchley", "Corsham",
}

// SeedSkill renders a world's weak initial skill: a title, general lines,
// a vague line for half of the active rules and the proper rule of one.
func SeedSkill(title, general string, active []string, r *RNG) string {
	order := slices.Clone(active)
	r.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	nVague := len(order) / 2
	var b strings.Builder
	b.WriteString("# " + title + "\n\n" + general + "\n\n## Things to watch\n")
	for _, id := range order[:nVague] {
		ru, _ := LookupRule(id)
		b.WriteString("- " + ru.Vague + "\n")
	}
	if nVague < len(order) {
		ru, _ := LookupRule(order[nVague])
		b.WriteString("- " + ru.Text + "\n")
	}
	return b.String()
}

// ReferenceSkill renders a skill that holds every active rule.
func ReferenceSkill(title, general string, active []string) string {
	var b strings.Builder
	b.WriteString("# " + title + "\n\n" + general + "\n\n## Things to watch\n")
	for _, id := range active {
		ru, _ := LookupRule(id)
		b.WriteString("- " + ru.Text + "\n")
	}
	return b.String()
}

// splits runs gen for every split and returns the items per split.
func splits[T any](size Size, gen func(split string, i int) T) map[string][]T {
	out := map[string][]T{}
	for _, sp := range []struct {
		name string
		n    int
	}{{"train", size.Train}, {"val", size.Val}, {"test", size.Test}} {
		items := make([]T, sp.n)
		for i := range items {
			items[i] = gen(sp.name, i)
		}
		out[sp.name] = items
	}
	return out
}

// writeItems writes each split's items as <dir>/<split>/items.json.
func writeItems[T any](dir string, items map[string][]T) (map[string]int, error) {
	counts := map[string]int{}
	for _, sp := range []string{"train", "val", "test"} {
		if err := atomicfile.WriteJSON(filepath.Join(dir, sp, "items.json"), items[sp]); err != nil {
			return nil, err
		}
		counts[sp] = len(items[sp])
	}
	return counts, nil
}

// writeSeedSkill writes the seed skill file and returns its name.
func writeSeedSkill(dir, skill string) (string, error) {
	return SeedSkillFile, atomicfile.Write(filepath.Join(dir, SeedSkillFile), []byte(skill))
}

// worldRules are the rules that only the synthetic worlds have, by id;
// each world's file lists its own.
var worldRules = rulesByID(householdWorldRules, officeqaWorldRules, spreadsheetWorldRules)

// rulesByID indexes rule lists by id; two rules with one id are a
// programming error.
func rulesByID(lists ...[]Rule) map[string]Rule {
	out := map[string]Rule{}
	for _, rs := range lists {
		for _, r := range rs {
			if _, dup := out[r.ID]; dup {
				panic("synth: duplicate rule " + r.ID)
			}
			out[r.ID] = r
		}
	}
	return out
}

// WorldRules returns the rules only the synthetic worlds have, by id order.
func WorldRules() []Rule {
	out := make([]Rule, 0, len(worldRules))
	for _, r := range worldRules {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Rule) int { return strings.Compare(a.ID, b.ID) })
	return out
}
