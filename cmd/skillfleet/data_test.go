package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
)

func TestDataCheck(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "sim")
	if err := simbench.WriteSplits(dir, simbench.PresetDemo, 3); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"data", "check", dir}, &stdout, &stderr); code != exitOK {
		t.Fatalf("data check exit %d: %s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"benchmark sim", "train ", "val ", "test ", "counts match the manifest"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// A split that lost an item no longer matches its manifest; the error
	// names the split and the file.
	items := filepath.Join(dir, "val", "items.json")
	data, err := os.ReadFile(items)
	if err != nil {
		t.Fatal(err)
	}
	var all []json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		t.Fatal(err)
	}
	data, _ = json.Marshal(all[:len(all)-1])
	if err := os.WriteFile(items, data, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"data", "check", dir}, &stdout, &stderr); code == exitOK {
		t.Fatalf("truncated val accepted:\n%s", stdout.String())
	}
	if msg := stderr.String(); !strings.Contains(msg, "split val has") || !strings.Contains(msg, "manifest says") {
		t.Errorf("error = %q", msg)
	}

	// Unknown benchmark names are refused with the known ones listed.
	stderr.Reset()
	if code := run([]string{"data", "check", "--bench", "nosuch", dir}, &stdout, &stderr); code != exitUsage {
		t.Errorf("unknown bench exit %d", code)
	}
	if !strings.Contains(stderr.String(), "sim") {
		t.Errorf("error does not list known benchmarks: %s", stderr.String())
	}
}

// TestEstimateMakesNoCallAndWritesNothing: --estimate prints the stage
// table for the demo config and creates no run directory.
func TestEstimateMakesNoCallAndWritesNothing(t *testing.T) {
	root := repoRoot(t)
	out := filepath.Join(t.TempDir(), "never")
	var stdout, stderr bytes.Buffer
	t.Chdir(root)
	if code := run([]string{"train", "--config", "configs/demo.yaml", "--out", out, "--estimate"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("--estimate created the run dir")
	}
	// Demo: 60 train items, batch 20 → 3 steps an epoch, 3 epochs: 9 steps
	// × 20 rollouts = 180; baseline = the 40 selection items; slow update
	// after epochs 2 and 3: 2 × (2×20 + 1) = 82.
	for _, want := range []string{"baseline", "rollout", "gate", "slow_update", "assumptions:"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout.String())
		}
	}
	fields := func(stage string) []string {
		for _, l := range strings.Split(stdout.String(), "\n") {
			if f := strings.Fields(l); len(f) > 4 && f[0] == stage {
				return f
			}
		}
		return nil
	}
	if f := fields("rollout"); f == nil || f[3] != "180" {
		t.Errorf("rollout row %q, want expected 180", f)
	}
	if f := fields("baseline"); f == nil || f[3] != "40" {
		t.Errorf("baseline row %q, want 40", f)
	}
	if f := fields("slow_update"); f == nil || f[3] != "82" {
		t.Errorf("slow_update row %q, want 82", f)
	}
}

// TestDataCheckSkillOptALFWorldSplit: SkillOpt's own ALFWorld split
// (data/alfworld_path_split: ids train:N, val:N, test:N, a manifest naming
// the benchmark "ALFWorld") passes `data check`; an id of another split is
// refused naming the file, the item and the prefixes accepted.
func TestDataCheckSkillOptALFWorldSplit(t *testing.T) {
	dir := t.TempDir()
	games := map[string]string{"train": "train", "val": "valid_seen", "test": "valid_unseen"}
	write := func(split, id string) {
		t.Helper()
		items := `[{"id": "` + id + `", "gamefile": "json_2.1.1/` + games[split] + `/pick_and_place_simple-Mug-None-Cabinet-1/trial_T1/game.tw-pddl", "task_type": "pick_and_place_simple"}]`
		if err := os.MkdirAll(filepath.Join(dir, split), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, split, "items.json"), []byte(items), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, sp := range []string{"train", "val", "test"} {
		write(sp, sp+":0000")
	}
	manifest := `{"benchmark": "ALFWorld", "manifest_type": "path_split", "counts": {"train": 1, "val": 1, "test": 1}, "item_fields": ["id", "gamefile", "task_type"]}`
	if err := os.WriteFile(filepath.Join(dir, "split_manifest.json"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"data", "check", "--bench", "alfworld", dir}, &stdout, &stderr); code != exitOK {
		t.Fatalf("SkillOpt's ALFWorld split: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	write("val", "train:0007")
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"data", "check", "--bench", "alfworld", dir}, &stdout, &stderr); code == exitOK {
		t.Fatalf("a train id in val accepted:\n%s", stdout.String())
	}
	msg := stdout.String() + stderr.String()
	for _, want := range []string{filepath.Join("val", "items.json"), "train:0007", `"val:" or "valid_seen:"`} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
}
