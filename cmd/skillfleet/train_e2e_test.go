package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// repoRoot is where configs/ lives (tests run in cmd/skillfleet).
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// trainDemo runs `skillfleet train` on the demo config; env adds variables.
func trainDemo(t *testing.T, out string, env []string, extra ...string) (string, error) {
	t.Helper()
	args := append([]string{"train", "--config", "configs/demo.yaml", "--out", out, "--log-format", "json"}, extra...)
	cmd := exec.Command(binary, args...)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), env...)
	b, err := cmd.CombinedOutput()
	return string(b), err
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// reference is one uninterrupted demo run, shared by the tests below.
func reference(t *testing.T) (skill, events []byte) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ref")
	if out, err := trainDemo(t, dir, nil, "--workers", "2", "--assert-improves"); err != nil {
		t.Fatalf("reference run: %v\n%s", err, out)
	}
	return readFile(t, filepath.Join(dir, "best_skill.md")), readFile(t, filepath.Join(dir, "events.jsonl"))
}

func TestDemoIsDeterministicAcrossWorkerCounts(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo")
	}
	skill, events := reference(t)
	for _, w := range []string{"1", "4"} {
		dir := filepath.Join(t.TempDir(), "w"+w)
		if out, err := trainDemo(t, dir, nil, "--workers", w); err != nil {
			t.Fatalf("--workers %s: %v\n%s", w, err, out)
		}
		if got := readFile(t, filepath.Join(dir, "best_skill.md")); !bytes.Equal(got, skill) {
			t.Errorf("--workers %s: best_skill.md differs from the 2-worker run", w)
		}
		if got := readFile(t, filepath.Join(dir, "events.jsonl")); !bytes.Equal(got, events) {
			t.Errorf("--workers %s: events.jsonl differs from the 2-worker run:\n%s\nwant:\n%s", w, got, events)
		}
	}
}

// TestKilledRunResumesIdentically SIGKILLs a run in the middle of each
// phase, resumes it with the same command, and checks the result is the
// uninterrupted run's, byte for byte.
func TestKilledRunResumesIdentically(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo many times")
	}
	skill, events := reference(t)
	for _, at := range []string{"rollout:7", "reflect:2", "merge:1", "rank:2", "gate:5", "slow_update:9", "meta_skill:1", "test_:30"} {
		t.Run(strings.ReplaceAll(at, ":", "_"), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "run")
			out, err := trainDemo(t, dir, []string{"SKILLFLEET_CRASH_AT=" + at})
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != -1 {
				t.Fatalf("crash run at %s: want killed by a signal, got %v\n%s", at, err, out)
			}
			if out, err := trainDemo(t, dir, nil); err != nil {
				t.Fatalf("resume: %v\n%s", err, out)
			}
			if got := readFile(t, filepath.Join(dir, "best_skill.md")); !bytes.Equal(got, skill) {
				t.Errorf("resumed best_skill.md differs from the uninterrupted run")
			}
			if got := readFile(t, filepath.Join(dir, "events.jsonl")); !bytes.Equal(got, events) {
				t.Errorf("resumed events.jsonl differs:\n%s\nwant:\n%s", got, events)
			}
		})
	}
}

// A token budget stops the run cleanly (exit 3, a message naming the
// budget); resuming with a larger budget ends exactly like a run that had
// no budget.
func TestTokenBudgetStopsAndResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo")
	}
	skill, events := reference(t)
	dir := filepath.Join(t.TempDir(), "budget")
	out, err := trainDemo(t, dir, nil, "--set", "budget.max_tokens=250000")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitBudget {
		t.Fatalf("budgeted run: want exit %d, got %v\n%s", exitBudget, err, out)
	}
	if !strings.Contains(out, "budget.max_tokens") || !strings.Contains(out, "resume") {
		t.Errorf("budget message does not name the budget and how to resume:\n%s", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "state.json")); err != nil {
		t.Errorf("no checkpoint after the budget stop: %v", err)
	}
	if out, err := trainDemo(t, dir, nil, "--set", "budget.max_tokens=100000000"); err != nil {
		t.Fatalf("resume with a larger budget: %v\n%s", err, out)
	}
	if got := readFile(t, filepath.Join(dir, "best_skill.md")); !bytes.Equal(got, skill) {
		t.Error("best_skill.md differs from the unbudgeted run")
	}
	if got := readFile(t, filepath.Join(dir, "events.jsonl")); !bytes.Equal(got, events) {
		t.Error("events.jsonl differs from the unbudgeted run")
	}
}

func TestEvalWithBaselines(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the sim")
	}
	cmd := exec.Command(binary, "eval", "--config", "configs/demo.yaml", "--skill", "configs/skills/sim_demo_seed.md",
		"--split", "test", "--baseline", "--out", filepath.Join(t.TempDir(), "eval"))
	cmd.Dir = repoRoot(t)
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("eval: %v\n%s", err, b)
	}
	out := string(b)
	for _, want := range []string{"no_skill", "seed_skill", "skill", "overall", "eval_summary.json"} {
		if !strings.Contains(out, want) {
			t.Errorf("eval output lacks %q:\n%s", want, out)
		}
	}
}
