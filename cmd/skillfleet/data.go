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
	"github.com/skillfleet/skillfleet/pkg/bench/spreadsheet"
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
	fields, err := checkFields(name, dir, s)
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

// fieldCheck is what `data check` verifies of one benchmark's items
// beyond their ids (spec §4.2), on the items as the benchmark's loader
// left them; fields lists it for the report.
type fieldCheck struct {
	fields string
	check  func(dir, split string, item map[string]any) error
}

// fieldChecks are the benchmarks' item checks. The loaders' own
// normalisation runs first: DocVQA's (question, answer|ground_truth, a
// "document_path:" suffix moved to image_path), OfficeQA's (question,
// ground_truth|answer, source_files), ALFWorld's (gamefile) and the text
// game's (game) refuse an item without those.
var fieldChecks = map[string]fieldCheck{
	"searchqa": {"question and context (strings), answers (a non-empty list of strings)", func(_, _ string, it map[string]any) error {
		if err := needString(it, "question"); err != nil {
			return err
		}
		if _, ok := it["context"].(string); !ok {
			return errors.New("field context: want a string")
		}
		return needStrings(it, "answers")
	}},
	"livemath": {"question, choices (labels A-G, each once, with text), correct_choice.label one of them", func(_, _ string, it map[string]any) error {
		if err := needString(it, "question"); err != nil {
			return err
		}
		cs, _ := it["choices"].([]any)
		if len(cs) < 2 {
			return errors.New("field choices: want a list of at least two {label, text}")
		}
		labels := map[string]bool{}
		for i, c := range cs {
			m, _ := c.(map[string]any)
			l, _ := m["label"].(string)
			if len(l) != 1 || l[0] < 'A' || l[0] > 'G' || labels[l] {
				return fmt.Errorf("field choices[%d].label: %q is not a new label A-G", i, l)
			}
			if err := needString(m, "text"); err != nil {
				return fmt.Errorf("choices[%d]: %w", i, err)
			}
			labels[l] = true
		}
		cc, _ := it["correct_choice"].(map[string]any)
		if l, _ := cc["label"].(string); !labels[l] {
			return fmt.Errorf("field correct_choice.label: %q is not one of the choices", l)
		}
		return nil
	}},
	"docvqa": {"question, answers (non-empty), image_path (a file under DIR, else its parent)", func(dir, _ string, it map[string]any) error {
		if err := needStrings(it, "answers"); err != nil {
			return err
		}
		p, _ := it["image_path"].(string)
		if p == "" {
			return errors.New("field image_path: empty (and no document_path: suffix in the question)")
		}
		return existsUnder(dir, p, false)
	}},
	"officeqa": {"question, ground_truth (or answer), source_files (non-empty)", nil},
	"spreadsheet": {"instruction, instruction_type, answer_position (parsed as ranges), answer_sheet (a string if present), spreadsheet_path (a directory under DIR's parent, else DIR, holding at least one input/answer pair)", func(dir, _ string, it map[string]any) error {
		for _, f := range []string{"instruction", "instruction_type", "answer_position", "spreadsheet_path"} {
			if err := needString(it, f); err != nil {
				return err
			}
		}
		if v, ok := it["answer_sheet"]; ok {
			if _, isStr := v.(string); !isStr {
				return errors.New("field answer_sheet: want a string")
			}
		}
		if _, err := spreadsheet.ParsePositions(it["answer_position"].(string)); err != nil {
			return fmt.Errorf("field answer_position: %w", err)
		}
		p := it["spreadsheet_path"].(string)
		for _, root := range []string{filepath.Dir(dir), dir} {
			d := filepath.Join(root, filepath.FromSlash(p))
			if st, err := os.Stat(d); err == nil && st.IsDir() {
				cases, err := spreadsheet.Cases(d)
				if err != nil {
					return fmt.Errorf("field spreadsheet_path: %w", err)
				}
				if len(cases) == 0 {
					return fmt.Errorf("field spreadsheet_path: no N_<id>_input.xlsx/N_<id>_answer.xlsx (or init/golden) pair in %s", d)
				}
				return nil
			}
		}
		return fmt.Errorf("field spreadsheet_path: no directory %s under %s or %s", p, filepath.Dir(dir), dir)
	}},
	"alfworld": {"gamefile (non-empty), task_type; ids train:N in train, valid_seen:N in val, valid_unseen:N in test", func(_, split string, it map[string]any) error {
		if err := needString(it, "task_type"); err != nil {
			return err
		}
		want := map[string]string{"train": "train:", "val": "valid_seen:", "test": "valid_unseen:"}[split]
		if id, _ := it["id"].(string); !strings.HasPrefix(id, want) {
			return fmt.Errorf("field id: %q in split %s does not start with %q (ALFWorld's convention)", id, split, want)
		}
		return nil
	}},
	"textgame": {"game (non-empty)", nil},
}

func needString(m map[string]any, f string) error {
	if s, ok := m[f].(string); !ok || strings.TrimSpace(s) == "" {
		return fmt.Errorf("field %s: want a non-empty string", f)
	}
	return nil
}

func needStrings(m map[string]any, f string) error {
	l, ok := m[f].([]any)
	if !ok || len(l) == 0 {
		return fmt.Errorf("field %s: want a non-empty list of strings", f)
	}
	for i, v := range l {
		if _, ok := v.(string); !ok {
			return fmt.Errorf("field %s[%d]: want a string", f, i)
		}
	}
	return nil
}

// existsUnder checks that a relative path names a file (or a directory)
// under dir or its parent.
func existsUnder(dir, p string, wantDir bool) error {
	if filepath.IsAbs(p) {
		if st, err := os.Stat(p); err == nil && st.IsDir() == wantDir {
			return nil
		}
		return fmt.Errorf("%s: not found", p)
	}
	for _, root := range []string{dir, filepath.Dir(dir)} {
		if st, err := os.Stat(filepath.Join(root, filepath.FromSlash(p))); err == nil && st.IsDir() == wantDir {
			return nil
		}
	}
	return fmt.Errorf("%s: not found under %s or %s", p, dir, filepath.Dir(dir))
}

// checkFields runs a benchmark's item checks on every split and names the
// first bad item's file, id and field.
func checkFields(name, dir string, s *bench.Splits) (string, error) {
	fc, ok := fieldChecks[name]
	if !ok {
		return "", nil
	}
	if fc.check == nil {
		return fc.fields, nil
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
			if err := fc.check(dir, sp.name, m); err != nil {
				return "", fmt.Errorf("%s: item %s: %w", s.Files[sp.name], it.ID, err)
			}
		}
	}
	return fc.fields, nil
}
