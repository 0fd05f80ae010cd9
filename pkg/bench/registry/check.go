package registry

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench"
)

// ErrUnknown is the error for a benchmark name no benchmark has.
var ErrUnknown = errors.New("unknown benchmark")

// DirCheck is what [CheckDir] found in a split directory that passed.
type DirCheck struct {
	// Dir is the split directory.
	Dir string
	// Benchmark is the benchmark whose item format was checked ("" when
	// neither the caller nor the manifest named one).
	Benchmark string
	// Manifest says whether split_manifest.json was there; Counts, whether
	// it gave item counts (then every split's count matched).
	Manifest, Counts bool
	// Splits are the items as the benchmark's loader read them.
	Splits *bench.Splits
	// Fields says in words what the benchmark's item checks verified; ""
	// when it has none beyond its loader's.
	Fields string
}

// CheckDir verifies a split directory as a run would read it: every item
// has an id, unique across splits; each split holds the number of items
// its split_manifest.json gives; every item passes its benchmark's item
// checks. name is the benchmark ("" = the manifest's "benchmark", else
// none); idField, when set, is the one item field holding the id. An
// unknown name fails with [ErrUnknown].
func CheckDir(dir, name, idField string) (*DirCheck, error) {
	var m struct {
		Benchmark string         `json:"benchmark"`
		Counts    map[string]int `json:"counts"`
	}
	c := &DirCheck{Dir: dir, Benchmark: name}
	manifest := filepath.Join(dir, "split_manifest.json")
	data, err := os.ReadFile(manifest)
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &m); err != nil {
			return nil, fmt.Errorf("%s: %w", manifest, err)
		}
		c.Manifest, c.Counts = true, len(m.Counts) > 0
	case !errors.Is(err, fs.ErrNotExist):
		return nil, err
	}
	if c.Benchmark == "" {
		c.Benchmark = m.Benchmark
	}
	opts := bench.LoadOptions{}
	if c.Benchmark != "" {
		if !Known(c.Benchmark) {
			return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknown, c.Benchmark, strings.Join(Names(), ", "))
		}
		opts = LoadOptions(c.Benchmark, 0)
	}
	if idField != "" {
		opts.IDFields = []string{idField}
	}
	if c.Splits, err = bench.LoadSplitDir(dir, opts); err != nil {
		return nil, err
	}
	counts := map[string]int{"train": len(c.Splits.Train), "val": len(c.Splits.Val), "test": len(c.Splits.Test)}
	for _, k := range []string{"train", "val", "test"} {
		if want, ok := m.Counts[k]; ok && counts[k] != want {
			return nil, fmt.Errorf("%s: split %s has %d items (%s), manifest says %d", dir, k, counts[k], c.Splits.Files[k], want)
		}
	}
	if c.Fields, err = CheckItems(c.Benchmark, dir, c.Splits); err != nil {
		return nil, err
	}
	return c, nil
}

// WriteText reports the check: the benchmark, each split's items by task
// type, and what was verified.
func (c *DirCheck) WriteText(w io.Writer) error {
	var b strings.Builder
	if !c.Manifest {
		fmt.Fprintf(&b, "note: no split_manifest.json in %s: counts not checked\n", c.Dir)
	}
	if c.Benchmark != "" {
		fmt.Fprintf(&b, "benchmark %s\n", c.Benchmark)
	}
	for _, sp := range []struct {
		name  string
		items []bench.Item
	}{{"train", c.Splits.Train}, {"val", c.Splits.Val}, {"test", c.Splits.Test}} {
		types := map[string]int{}
		for _, it := range sp.items {
			types[cmp.Or(it.TaskType, "(none)")]++
		}
		names := make([]string, 0, len(types))
		for k := range types {
			names = append(names, k)
		}
		sort.Strings(names)
		fmt.Fprintf(&b, "%-5s %5d items:", sp.name, len(sp.items))
		for _, k := range names {
			fmt.Fprintf(&b, " %s=%d", k, types[k])
		}
		b.WriteString("\n")
	}
	switch {
	case c.Fields != "":
		fmt.Fprintf(&b, "ok: every item has %s\n", c.Fields)
	case c.Benchmark != "":
		fmt.Fprintf(&b, "note: no field checks for %s beyond its loader's\n", c.Benchmark)
	}
	b.WriteString("ok: ids present and unique across splits")
	if c.Counts {
		b.WriteString("; counts match the manifest")
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}
