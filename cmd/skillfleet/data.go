package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/skillfleet/skillfleet/pkg/bench"
)

func runData(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprintln(stderr, "Usage: skillfleet data check [--id-field id] DIR")
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return nil
		}
		return usageError{errors.New("data: want `data check DIR`")}
	}
	fs := newFlagSet("data check", "data check [--id-field F] DIR", stderr)
	idField := fs.String("id-field", "id", "item field holding the id")
	if err := fs.Parse(args[1:]); err != nil {
		return usageError{err}
	}
	if fs.NArg() != 1 {
		return usageError{errors.New("data check: want exactly one DIR")}
	}
	dir := fs.Arg(0)
	s, err := bench.LoadSplitDir(dir, bench.LoadOptions{IDFields: []string{*idField}})
	if err != nil {
		return err
	}
	counts := map[string]int{"train": len(s.Train), "val": len(s.Val), "test": len(s.Test)}
	if data, err := os.ReadFile(filepath.Join(dir, "split_manifest.json")); err == nil {
		var m struct {
			Counts map[string]int `json:"counts"`
		}
		if err := json.Unmarshal(data, &m); err != nil {
			return fmt.Errorf("%s: %w", filepath.Join(dir, "split_manifest.json"), err)
		}
		for k, want := range m.Counts {
			if got, ok := counts[k]; ok && got != want {
				return fmt.Errorf("%s: split %s has %d items, manifest says %d", dir, k, got, want)
			}
		}
	} else {
		fmt.Fprintf(stdout, "note: no split_manifest.json in %s\n", dir)
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
	fmt.Fprintln(stdout, "ok: ids present and unique across splits")
	return nil
}
