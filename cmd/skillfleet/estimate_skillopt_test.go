package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// skilloptConfigs is SkillOpt's configs/ as published (MIT; see its
// README), copied unchanged.
const skilloptConfigs = "pkg/config/testdata/skillopt"

// skilloptCheckout lays out a directory the way SkillOpt's configs expect
// to be run from (the root of a SkillOpt checkout): each env's initial
// skill under skillopt/envs/<env>/skills/ and its data under data/, here
// the benchmarks' own split fixtures.
func skilloptCheckout(t *testing.T, root string) string {
	t.Helper()
	dir := t.TempDir()
	link := func(target, name string) {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(root, target), p); err != nil {
			t.Fatal(err)
		}
	}
	for _, env := range []string{"alfworld", "docvqa", "livemathematicianbench", "officeqa", "searchqa", "spreadsheetbench"} {
		p := filepath.Join(dir, "skillopt", "envs", env, "skills", "initial.md")
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("# "+env+"\n\nRead the task carefully and answer exactly what is asked.\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link("pkg/bench/alfworld/testdata/split", "data/alfworld_path_split")
	link("pkg/bench/docvqa/testdata/split", "data/docvqa/splits")
	link("pkg/bench/livemath/testdata/split", "data/livemathematicianbench_split")
	link("pkg/bench/officeqa/testdata/split", "data/officeqa_split")
	link("pkg/bench/officeqa/testdata/docs", "data/officeqa_docs_official")
	link("pkg/bench/searchqa/testdata/split", "data/searchqa_split")
	link("pkg/bench/spreadsheet/testdata/split", "data/spreadsheetbench_split")
	link("pkg/bench/spreadsheet/testdata/spreadsheet", "data/spreadsheetbench_verified_400")
	return dir
}

// TestEstimateSkillOptConfigs: every config of SkillOpt's configs/ loads
// unchanged (MiniMax keys included) and `train --estimate` exits 0 on it.
// The two bases (_base_/default.yaml and features/soft_gate.yaml) name no
// benchmark, as in SkillOpt where the env comes from the command line;
// they are given one with --set.
func TestEstimateSkillOptConfigs(t *testing.T) {
	root := repoRoot(t)
	var files []string
	err := filepath.WalkDir(filepath.Join(root, skilloptConfigs), func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 8 {
		t.Fatalf("found %d SkillOpt configs, want 8: %v", len(files), files)
	}
	t.Chdir(skilloptCheckout(t, root))
	for _, f := range files {
		t.Run(strings.TrimPrefix(f, filepath.Join(root, skilloptConfigs)+"/"), func(t *testing.T) {
			args := []string{"train", "--config", f, "--estimate"}
			base := strings.Contains(f, "/_base_/") || strings.Contains(f, "/features/")
			if base {
				args = append(args, "--set", "env.name=searchqa",
					"--set", "env.skill_init=skillopt/envs/searchqa/skills/initial.md",
					"--set", "env.split_mode=split_dir", "--set", "env.split_dir=data/searchqa_split")
			}
			var stdout, stderr bytes.Buffer
			if code := run(args, &stdout, &stderr); code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			out := stdout.String()
			if !strings.Contains(out, "estimate for "+f) || !strings.Contains(out, "total") {
				t.Errorf("no estimate table:\n%s", out)
			}
			// The env's own benchmark is the one estimated (SkillOpt's two
			// longer names read as skillfleet's).
			if !base {
				env := filepath.Base(filepath.Dir(f))
				if n, ok := map[string]string{"livemathematicianbench": "livemath", "spreadsheetbench": "spreadsheet"}[env]; ok {
					env = n
				}
				if !strings.Contains(out, ": "+env+" on ") {
					t.Errorf("estimate is not for %s:\n%s", env, out)
				}
			}
		})
	}
}

// TestEstimateJSONLWithoutIDs: a JSONL file without ids splits and loads
// (ids by row); with env.id_field naming a field one row lacks, the error
// names the user's file and line, not the generated split.
func TestEstimateJSONLWithoutIDs(t *testing.T) {
	root := repoRoot(t)
	dir := t.TempDir()
	var rows []string
	for i := range 20 {
		rows = append(rows, fmt.Sprintf(`{"qid":"Q%d","question":"What is %d+1?","answer":"%d"}`, i, i, i+1))
	}
	noIDs := strings.ReplaceAll(strings.Join(rows, "\n"), `"qid":`, `"n":`)
	data := filepath.Join(dir, "my_task.jsonl")
	if err := os.WriteFile(data, []byte(noIDs+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	args := func(extra ...string) []string {
		return append([]string{"train", "--config", filepath.Join(root, "configs/jsonl.yaml"), "--estimate",
			"--set", "env.data_path=" + data, "--set", "env.skill_init=" + filepath.Join(root, "configs/skills/generic_seed.md"),
			"--set", "env.split_output_dir=" + filepath.Join(dir, "split")}, extra...)
	}
	var stdout, stderr bytes.Buffer
	if code := run(args(), &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if !strings.Contains(stdout.String(), "(4 train / 2 val / 14 test items)") {
		t.Errorf("estimate:\n%s", stdout.String())
	}

	rows[12] = `{"question":"no qid","answer":"x"}`
	if err := os.WriteFile(data, []byte(strings.Join(rows, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	stderr.Reset()
	args2 := args("--set", "env.id_field=qid", "--set", "env.split_output_dir="+filepath.Join(dir, "split2"))
	if code := run(args2, &stdout, &stderr); code == exitOK {
		t.Fatalf("row without qid accepted:\n%s", stdout.String())
	}
	if msg := stderr.String(); !strings.Contains(msg, data+":13: missing qid (env.id_field)") || strings.Contains(msg, "split2") {
		t.Errorf("error = %q, want it to name %s:13 and not the generated split", msg, data)
	}
}
