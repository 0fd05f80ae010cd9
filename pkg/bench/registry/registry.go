// Package registry maps a benchmark name (env.name) to its implementation.
// It is the one place that knows every benchmark; workers and the
// coordinator ask it by name, exactly as SkillOpt's configs pick an env.
package registry

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/alfworld"
	"github.com/skillfleet/skillfleet/pkg/bench/docvqa"
	"github.com/skillfleet/skillfleet/pkg/bench/envserver"
	"github.com/skillfleet/skillfleet/pkg/bench/envserver/textgame"
	"github.com/skillfleet/skillfleet/pkg/bench/jsonl"
	"github.com/skillfleet/skillfleet/pkg/bench/livemath"
	"github.com/skillfleet/skillfleet/pkg/bench/officeqa"
	"github.com/skillfleet/skillfleet/pkg/bench/searchqa"
	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/bench/spreadsheet"
	"github.com/skillfleet/skillfleet/pkg/nightly"
)

type entry struct {
	// idFields are the item fields holding the id, in order.
	idFields []string
	// files are the item-file patterns of a split directory, in order of
	// preference (default *.json); see bench.LoadOptions.Files.
	files []string
	// normalize maps one raw item object to the benchmark's item schema.
	normalize func(map[string]any) (map[string]any, error)
	newEnv    func(cfg json.RawMessage) (bench.Env, error)
	// notes are the benchmark's additions to the analyst prompts (its
	// failure taxonomy).
	notes string
	// items is what `skillfleet data check` verifies of an item.
	items bench.ItemCheck
	// generate, for a benchmark that makes its own world, writes the split
	// directory its config names under root and returns it.
	generate func(cfg json.RawMessage, root string) (string, error)
}

// known holds every benchmark by name: the one place to look for what
// env.name may be.
var known = map[string]entry{
	alfworld.Name: {items: alfworld.Items, notes: envserver.Notes, idFields: []string{"id"}, normalize: alfworld.Normalize,
		newEnv: configured(alfworld.Name, func(c envserver.Config) (bench.Env, error) { return alfworld.New(c) })},
	docvqa.Name: {items: docvqa.Items, notes: (&docvqa.Env{}).AnalystNotes(), idFields: []string{"id", "questionId"}, files: []string{"*.csv"},
		normalize: docvqa.Normalize,
		newEnv:    configured(docvqa.Name, func(c docvqa.Config) (bench.Env, error) { return docvqa.New(c), nil })},
	jsonl.Name: {idFields: []string{"id"}, files: []string{"*.jsonl", "*.json"},
		newEnv: configured(jsonl.Name, func(c jsonl.Config) (bench.Env, error) { return jsonl.New(c) })},
	livemath.Name: {items: livemath.Items, notes: (&livemath.Env{}).AnalystNotes(), idFields: []string{"id"},
		newEnv: configured(livemath.Name, func(c livemath.Config) (bench.Env, error) { return livemath.New(c), nil })},
	officeqa.Name: {items: officeqa.Items, notes: (&officeqa.Env{}).AnalystNotes(), idFields: []string{"id", "uid"}, files: []string{"*.csv", "*.json"},
		normalize: officeqa.Normalize,
		newEnv:    configured(officeqa.Name, func(c officeqa.Config) (bench.Env, error) { return officeqa.New(c) })},
	searchqa.Name: {items: searchqa.Items, notes: (&searchqa.Env{}).AnalystNotes(), idFields: []string{"id"},
		newEnv: configured(searchqa.Name, func(c searchqa.Config) (bench.Env, error) { return searchqa.New(c), nil })},
	simbench.Name: {idFields: []string{"id"},
		newEnv:   configured(simbench.Name, func(c simbench.Config) (bench.Env, error) { return simbench.New(c), nil }),
		generate: generateSim},
	// The replay benchmark of skillfleet sleep: its items are mined tasks,
	// sent by a night's coordinator, never read from a split directory.
	nightly.EnvName: {idFields: []string{"id"},
		newEnv: configured(nightly.EnvName, func(c nightly.EnvConfig) (bench.Env, error) { return nightly.NewEnv(c), nil })},
	spreadsheet.Name: {items: spreadsheet.Items, notes: (&spreadsheet.Env{}).AnalystNotes(), idFields: []string{"id"},
		newEnv: configured(spreadsheet.Name, func(c spreadsheet.Config) (bench.Env, error) { return spreadsheet.New(c) })},
	"textgame": {items: textgame.Items, notes: envserver.Notes, idFields: []string{"id"}, normalize: textgame.NormalizeItem,
		newEnv: configured("textgame", func(c envserver.Config) (bench.Env, error) { return envserver.New("textgame", c, envserver.Notes) })},
}

// generateSim writes the sim world a config names (preset and seed) under
// root, once: a later run on the same root reads what is there.
func generateSim(cfg json.RawMessage, root string) (string, error) {
	var c simbench.Config
	if err := bench.DecodeConfig(cfg, &c); err != nil {
		return "", fmt.Errorf("%s benchmark config: %w", simbench.Name, err)
	}
	dir := filepath.Join(root, fmt.Sprintf("sim_%s_seed%d", c.PresetName(), c.WorldSeed()))
	if _, err := os.Stat(filepath.Join(dir, "split_manifest.json")); err == nil {
		return dir, nil
	}
	if err := simbench.WriteSplits(dir, c.PresetName(), c.WorldSeed()); err != nil {
		return "", fmt.Errorf("generate sim splits: %w", err)
	}
	return dir, nil
}

// GenerateSplits writes, for a benchmark that makes its own world, the
// split directory its config (JSON) names under root and returns it; ""
// for a benchmark whose items come from files.
func GenerateSplits(name string, cfg json.RawMessage, root string) (string, error) {
	e, ok := entries()[name]
	if !ok || e.generate == nil {
		return "", nil
	}
	return e.generate(cfg, root)
}

func entries() map[string]entry { return known }

// Names lists the known benchmarks.
func Names() []string {
	var out []string
	for k := range entries() {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// New builds a benchmark by name from its env config (JSON).
func New(name string, cfg json.RawMessage) (bench.Env, error) {
	e, ok := entries()[name]
	if !ok {
		return nil, fmt.Errorf("unknown benchmark %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return e.newEnv(cfg)
}

// LoadOptions returns how a benchmark's split directories are read: its
// id fields, item-file patterns (with *.json last, so a split that ratio
// mode generated from the benchmark's raw data is read too) and item
// normalisation.
func LoadOptions(name string, limit int) bench.LoadOptions {
	e, ok := entries()[name]
	if !ok {
		return bench.LoadOptions{Limit: limit}
	}
	files := append([]string(nil), e.files...)
	if len(files) == 0 || files[len(files)-1] != "*.json" {
		files = append(files, "*.json")
	}
	return bench.LoadOptions{IDFields: e.idFields, Files: files, Normalize: e.normalize, Limit: limit}
}

// LoadSplits reads a benchmark's split directory.
func LoadSplits(name, dir string, limit int) (*bench.Splits, error) {
	return LoadSplitsIDField(name, dir, limit, "")
}

// LoadSplitsIDField is LoadSplits reading ids from idField only
// (env.id_field; "" = the benchmark's id fields).
func LoadSplitsIDField(name, dir string, limit int, idField string) (*bench.Splits, error) {
	if _, ok := entries()[name]; !ok {
		return nil, fmt.Errorf("unknown benchmark %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	o := LoadOptions(name, limit)
	o.IDField = idField
	return bench.LoadSplitDir(dir, o)
}

// AnalystNotes returns every benchmark's analyst-prompt additions by name.
func AnalystNotes() map[string]string {
	out := map[string]string{}
	for name, e := range entries() {
		if e.notes != "" {
			out[name] = e.notes
		}
	}
	return out
}

// Known reports whether a benchmark is registered.
func Known(name string) bool {
	_, ok := entries()[name]
	return ok
}

// IDFields returns the item fields that hold a benchmark's item ids.
func IDFields(name string) []string {
	if e, ok := entries()[name]; ok {
		return e.idFields
	}
	return []string{"id"}
}

// configured returns a constructor that decodes a benchmark's config JSON
// into its config type C and builds the benchmark from it.
func configured[C any](name string, build func(C) (bench.Env, error)) func(json.RawMessage) (bench.Env, error) {
	configTypes[name] = reflect.TypeFor[C]() // the keys it reads (keys.go)
	return func(cfg json.RawMessage) (bench.Env, error) {
		var c C
		if err := bench.DecodeConfig(cfg, &c); err != nil {
			return nil, fmt.Errorf("%s benchmark config: %w", name, err)
		}
		return build(c)
	}
}

// CheckItems runs a benchmark's item checks (see [bench.ItemCheck]) on
// every split of the split directory dir, as loaded into s, and names the
// first bad item's file, id and field. It returns what was checked, in
// words; "" for a benchmark without item checks.
func CheckItems(name, dir string, s *bench.Splits) (string, error) {
	e, ok := entries()[name]
	if !ok || e.items.Check == nil {
		return e.items.Fields, nil
	}
	for _, sp := range []struct {
		name  string
		items []bench.Item
	}{{"train", s.Train}, {"val", s.Val}, {"test", s.Test}} {
		for _, it := range sp.items {
			var m map[string]any
			if err := json.Unmarshal(it.Raw, &m); err != nil {
				return "", fmt.Errorf("%s: item %s: %w", s.Files[sp.name], it.ID, err)
			}
			if err := e.items.Check(dir, sp.name, m); err != nil {
				return "", fmt.Errorf("%s: item %s: %w", s.Files[sp.name], it.ID, err)
			}
		}
	}
	return e.items.Fields, nil
}
