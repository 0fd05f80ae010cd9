package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench/materialize"
)

// runDataMaterialize turns an ID-only split manifest of SkillOpt's and a
// local copy of its source dataset into a runnable split directory.
func runDataMaterialize(args []string, stdout, stderr io.Writer) error {
	const synopsis = "data materialize searchqa|officeqa|spreadsheet|docvqa|livemath --manifest DIR --source PATH [--source PATH...] --out DIR"
	flags := newFlagSet("data materialize", synopsis, stderr)
	manifest := flags.String("manifest", "", "the ID-only manifest directory (SkillOpt's data/<benchmark>_id_split)")
	out := flags.String("out", "", "directory to write the runnable split into (train/, val/, test/, split_manifest.json)")
	var sources multiFlag
	flags.Var(&sources, "source", "a file or directory of the source dataset as published (.parquet, .jsonl[.gz], .json, .csv; SpreadsheetBench: the unpacked Verified 400); repeatable")
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(stderr, "Usage: skillfleet "+synopsis)
			return nil
		}
		return usageError{errors.New("data materialize: name the benchmark first: searchqa, officeqa, spreadsheet, docvqa or livemath")}
	}
	bench := args[0]
	if err := flags.Parse(args[1:]); err != nil {
		return usageError{err}
	}
	switch {
	case materializers[bench].run == nil:
		return usageError{fmt.Errorf("data materialize: no materializer for %q (have searchqa, officeqa, spreadsheet, docvqa and livemath; SkillOpt's ALFWorld manifest is runnable as it is)", bench)}
	case flags.NArg() != 0:
		return usageError{fmt.Errorf("data materialize: unexpected argument %q", flags.Arg(0))}
	case *manifest == "":
		return usageError{errors.New("data materialize: --manifest is required")}
	case len(sources) == 0:
		return usageError{errors.New("data materialize: --source is required")}
	case *out == "":
		return usageError{errors.New("data materialize: --out is required")}
	}
	mt := materializers[bench]
	counts, err := mt.run(*manifest, sources, *out)
	if err != nil {
		return fmt.Errorf("data materialize %s: %w", bench, err)
	}
	fmt.Fprintf(stdout, "wrote %s to %s: %d train, %d val, %d test items\n", mt.name, *out, counts["train"], counts["val"], counts["test"])
	fmt.Fprintf(stdout, "check it with: skillfleet data check --bench %s %s\n", bench, *out)
	return nil
}

// materializers are the benchmarks whose ID-only manifests skillfleet
// fills, by the name `data check --bench` knows them by.
var materializers = map[string]struct {
	name string
	run  func(manifestDir string, sources []string, out string) (materialize.Counts, error)
}{
	"searchqa":    {"SearchQA", materialize.SearchQA},
	"officeqa":    {"OfficeQA", materialize.OfficeQA},
	"spreadsheet": {"SpreadsheetBench", materialize.SpreadsheetBench},
	"docvqa":      {"DocVQA", materialize.DocVQA},
	"livemath":    {"LiveMathematicianBench", materialize.LiveMath},
}
