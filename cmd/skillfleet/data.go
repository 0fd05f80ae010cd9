package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench/registry"
	"github.com/skillfleet/skillfleet/pkg/bench/synth"

	"github.com/skillfleet/skillfleet/pkg/bench"
)

func runData(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "synth" {
		return runDataSynth(args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprintln(stderr, "Usage: skillfleet data check [--bench NAME] [--id-field id] DIR\n       skillfleet data synth --bench NAME --out DIR [--preset small|paper] [--seed N]")
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return nil
		}
		return usageError{errors.New("data: want `data check DIR` or `data synth --bench NAME --out DIR`")}
	}
	flags := newFlagSet("data check", "data check [--bench NAME] [--id-field F] DIR", stderr)
	idField := flags.String("id-field", "", "item field holding the id (default: the benchmark's, else id)")
	benchName := flags.String("bench", "", "benchmark whose item format to check (default: the manifest's \"benchmark\")")
	if err := flags.Parse(args[1:]); err != nil {
		return usageError{err}
	}
	if flags.NArg() != 1 {
		return usageError{errors.New("data check: want exactly one DIR")}
	}
	dir := flags.Arg(0)
	var m struct {
		Benchmark string         `json:"benchmark"`
		Counts    map[string]int `json:"counts"`
	}
	manifest := filepath.Join(dir, "split_manifest.json")
	data, err := os.ReadFile(manifest)
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("%s: %w", manifest, err)
		}
	case errors.Is(err, fs.ErrNotExist):
		fmt.Fprintf(stdout, "note: no split_manifest.json in %s: counts not checked\n", dir)
	default:
		return err
	}
	name := *benchName
	if name == "" {
		name = m.Benchmark
	}
	opts := bench.LoadOptions{}
	if name != "" {
		if !registry.Known(name) {
			return usageError{fmt.Errorf("data check: unknown benchmark %q (known: %s)", name, strings.Join(registry.Names(), ", "))}
		}
		opts = registry.LoadOptions(name, 0)
	}
	if *idField != "" {
		opts.IDFields = []string{*idField}
	}
	s, err := bench.LoadSplitDir(dir, opts)
	if err != nil {
		return err
	}
	counts := map[string]int{"train": len(s.Train), "val": len(s.Val), "test": len(s.Test)}
	for _, k := range []string{"train", "val", "test"} {
		if want, ok := m.Counts[k]; ok && counts[k] != want {
			return fmt.Errorf("%s: split %s has %d items (%s), manifest says %d", dir, k, counts[k], s.Files[k], want)
		}
	}
	fields, err := registry.CheckItems(name, dir, s)
	if err != nil {
		return err
	}
	if name != "" {
		fmt.Fprintf(stdout, "benchmark %s\n", name)
	}
	for _, sp := range []struct {
		name  string
		items []bench.Item
	}{{"train", s.Train}, {"val", s.Val}, {"test", s.Test}} {
		types := map[string]int{}
		for _, it := range sp.items {
			t := it.TaskType
			if t == "" {
				t = "(none)"
			}
			types[t]++
		}
		var ks []string
		for k := range types {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		fmt.Fprintf(stdout, "%-5s %5d items:", sp.name, len(sp.items))
		for _, k := range ks {
			fmt.Fprintf(stdout, " %s=%d", k, types[k])
		}
		fmt.Fprintln(stdout)
	}
	switch {
	case fields != "":
		fmt.Fprintf(stdout, "ok: every item has %s\n", fields)
	case name != "":
		fmt.Fprintf(stdout, "note: no field checks for %s beyond its loader's\n", name)
	}
	if len(m.Counts) > 0 {
		fmt.Fprintln(stdout, "ok: ids present and unique across splits; counts match the manifest")
	} else {
		fmt.Fprintln(stdout, "ok: ids present and unique across splits")
	}
	return nil
}

// runDataSynth writes a synthetic world (pkg/bench/synth) in a
// benchmark's own on-disk format.
func runDataSynth(args []string, stdout, stderr io.Writer) error {
	flags := newFlagSet("data synth", "data synth --bench NAME --out DIR [--preset small|paper] [--seed N]", stderr)
	name := flags.String("bench", "", "benchmark whose world to write: "+strings.Join(synth.Benchmarks(), ", "))
	out := flags.String("out", "", "directory to write the split directory into")
	preset := flags.String("preset", synth.PresetSmall, "world size: small (tests, demos) or paper (SkillOpt's split sizes)")
	seed := flags.Int64("seed", 0, "world seed: the same seed writes the same world")
	if err := flags.Parse(args); err != nil {
		return usageError{err}
	}
	switch {
	case flags.NArg() != 0:
		return usageError{fmt.Errorf("data synth: unexpected argument %q", flags.Arg(0))}
	case *name == "":
		return usageError{fmt.Errorf("data synth: --bench is required (one of %s)", strings.Join(synth.Benchmarks(), ", "))}
	case *out == "":
		return usageError{errors.New("data synth: --out is required")}
	}
	if !slices.Contains(synth.Benchmarks(), *name) {
		return usageError{fmt.Errorf("data synth: no synthetic world for benchmark %q (have %s)", *name, strings.Join(synth.Benchmarks(), ", "))}
	}
	if _, err := synth.SizeOf(*name, *preset); err != nil {
		return usageError{fmt.Errorf("data synth: --preset: %w", err)}
	}
	m, err := synth.Write(*name, *out, *preset, *seed)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote a synthetic %s world (preset %s, seed %d) to %s: %d train, %d val, %d test items; %d hidden rules; seed skill %s\n",
		*name, m.Preset, m.Seed, *out, m.Counts["train"], m.Counts["val"], m.Counts["test"], len(m.Rules), filepath.Join(*out, m.SeedSkill))
	return nil
}
