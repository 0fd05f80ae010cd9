package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench/registry"
	"github.com/skillfleet/skillfleet/pkg/bench/synth"
)

func runData(_ context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "synth" {
		return runDataSynth(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "materialize" {
		return runDataMaterialize(args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "check" {
		fmt.Fprintln(stderr, "Usage: skillfleet data check [--bench NAME] [--id-field id] DIR\n       skillfleet data synth --bench NAME --out DIR [--preset small|paper] [--seed N]\n       skillfleet data materialize searchqa --manifest DIR --source PATH --out DIR")
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			return nil
		}
		return usageError{errors.New("data: want `data check DIR` or `data synth --bench NAME --out DIR`")}
	}
	flags := newFlagSet("data check", "data check [--bench NAME] [--id-field F] DIR", stderr)
	idField := flags.String("id-field", "", "item field holding the id (default: the benchmark's, else id)")
	benchName := flags.String("bench", "", "benchmark whose item format to check (default: the manifest's \"benchmark\")")
	if help, err := parseFlags(flags, args[1:]); help || err != nil {
		return err
	}
	if flags.NArg() != 1 {
		return usageError{errors.New("data check: want exactly one DIR")}
	}
	c, err := registry.CheckDir(flags.Arg(0), *benchName, *idField)
	if errors.Is(err, registry.ErrUnknown) {
		return usageError{fmt.Errorf("data check: %w", err)}
	}
	if err != nil {
		return err
	}
	return c.WriteText(stdout)
}

// runDataSynth writes a synthetic world (pkg/bench/synth) in a
// benchmark's own on-disk format.
func runDataSynth(args []string, stdout, stderr io.Writer) error {
	flags := newFlagSet("data synth", "data synth --bench NAME --out DIR [--preset small|paper] [--seed N]", stderr)
	name := flags.String("bench", "", "benchmark whose world to write: "+strings.Join(synth.Benchmarks(), ", "))
	out := flags.String("out", "", "directory to write the split directory into")
	preset := flags.String("preset", synth.PresetSmall, "world size: small (tests, demos) or paper (SkillOpt's split sizes)")
	seed := flags.Int64("seed", 0, "world seed: the same seed writes the same world")
	if help, err := parseFlags(flags, args); help || err != nil {
		return err
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
