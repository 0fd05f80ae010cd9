// Package materialize turns SkillOpt's released ID-only split manifests
// (data/<bench>_id_split: train/val/test items.json holding ids, plus a
// split_manifest.json naming the source dataset) and a local copy of that
// source dataset into runnable split directories, the layout that
// `skillfleet data check` and the benchmark loaders read.
package materialize

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/skillfleet/skillfleet/internal/atomicfile"
)

// Splits are the split names of a manifest, in the order they are written.
var Splits = []string{"train", "val", "test"}

// Manifest is an ID-only split manifest: the ids of each split in order,
// and the fields of its split_manifest.json that name the source.
type Manifest struct {
	Dir       string
	Benchmark string
	SourceID  string // the source dataset's field that holds the ids
	IDs       map[string][]string
	// Items holds each id's manifest entry (its lookup hints, such as
	// DocVQA's image_path).
	Items map[string]map[string]any
}

// ReadManifest reads DIR/{train,val,test}/items.json (lists of objects
// with an "id") and DIR/split_manifest.json. It refuses an id that appears
// in two splits or twice in one, naming the first few.
func ReadManifest(dir string) (*Manifest, error) {
	m := &Manifest{Dir: dir, IDs: map[string][]string{}, Items: map[string]map[string]any{}}
	if b, err := os.ReadFile(filepath.Join(dir, "split_manifest.json")); err == nil {
		var head struct {
			Benchmark     string `json:"benchmark"`
			ManifestType  string `json:"manifest_type"`
			SourceIDField string `json:"source_id_field"`
		}
		if err := json.Unmarshal(b, &head); err != nil {
			return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "split_manifest.json"), err)
		}
		if head.ManifestType != "" && head.ManifestType != "id_split" {
			return nil, fmt.Errorf("%s: manifest_type is %q, not an ID-only manifest (id_split)", filepath.Join(dir, "split_manifest.json"), head.ManifestType)
		}
		m.Benchmark, m.SourceID = head.Benchmark, head.SourceIDField
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	seen := map[string]string{}
	var dups []string
	for _, split := range Splits {
		path := filepath.Join(dir, split, "items.json")
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("manifest %s: %w", dir, err)
		}
		var items []map[string]any
		if err := json.Unmarshal(b, &items); err != nil {
			return nil, fmt.Errorf("%s: want a JSON list of {\"id\": ...}: %w", path, err)
		}
		ids := make([]string, 0, len(items))
		for i, it := range items {
			id, ok := idString(it["id"])
			if !ok {
				return nil, fmt.Errorf("%s: item %d has no id", path, i)
			}
			if prev, ok := seen[id]; ok {
				dups = append(dups, fmt.Sprintf("%s (%s and %s)", id, prev, split))
				continue
			}
			seen[id] = split
			ids = append(ids, id)
			m.Items[id] = it
		}
		m.IDs[split] = ids
	}
	if len(dups) > 0 {
		return nil, fmt.Errorf("manifest %s: %d id(s) listed twice, first: %s", dir, len(dups), strings.Join(first(dups, 5), ", "))
	}
	return m, nil
}

// Wanted is the set of every id the manifest lists.
func (m *Manifest) Wanted() map[string]bool {
	w := map[string]bool{}
	for _, ids := range m.IDs {
		for _, id := range ids {
			w[id] = true
		}
	}
	return w
}

// Counts is how many items each split got.
type Counts map[string]int

// write lays out out/<split>/items.json in manifest order from the
// selected rows, and out/split_manifest.json recording where they came
// from. Every id must have a row.
func (m *Manifest) write(out string, rows map[string]map[string]any, fields []string, sources []string, benchmark string) (Counts, error) {
	var missing []string
	for _, split := range Splits {
		for _, id := range m.IDs[split] {
			if _, ok := rows[id]; !ok {
				missing = append(missing, id)
			}
		}
	}
	if len(missing) > 0 {
		sort.Strings(missing)
		return nil, fmt.Errorf("the source has no row for %d of the manifest's ids, first: %s", len(missing), strings.Join(first(missing, 5), ", "))
	}
	counts := Counts{}
	for _, split := range Splits {
		items := make([]map[string]any, 0, len(m.IDs[split]))
		for _, id := range m.IDs[split] {
			items = append(items, rows[id])
		}
		b, err := json.MarshalIndent(items, "", "  ")
		if err != nil {
			return nil, err
		}
		if err := os.MkdirAll(filepath.Join(out, split), 0o755); err != nil {
			return nil, err
		}
		if err := atomicfile.WriteFile(filepath.Join(out, split, "items.json"), append(b, '\n'), 0o644); err != nil {
			return nil, err
		}
		counts[split] = len(items)
	}
	abs := func(p string) string {
		if a, err := filepath.Abs(p); err == nil {
			return a
		}
		return p
	}
	srcs := make([]string, len(sources))
	for i, s := range sources {
		srcs[i] = abs(s)
	}
	manifest := map[string]any{
		"benchmark":           benchmark,
		"manifest_type":       "materialized",
		"source_manifest_dir": abs(m.Dir),
		"source_files":        srcs,
		"counts":              counts,
		"item_fields":         fields,
	}
	b, err := json.MarshalIndent(manifest, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := atomicfile.WriteFile(filepath.Join(out, "split_manifest.json"), append(b, '\n'), 0o644); err != nil {
		return nil, err
	}
	return counts, nil
}

func idString(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, x != ""
	case float64:
		return fmt.Sprint(x), true
	case json.Number:
		return x.String(), true
	}
	return "", false
}

func first(s []string, n int) []string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
