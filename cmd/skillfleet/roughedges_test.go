package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/coordinator/trainer"
)

// TestBadFlagIsOneLineWithoutUsage: a mistaken flag is one line on stderr
// (the error and where the flags are listed), not the page of usage; a
// duration without a unit gets the hint; --help still prints the usage.
func TestBadFlagIsOneLineWithoutUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want []string
	}{
		{"duration without unit", []string{"train", "--ack-wait", "5"}, []string{"-ack-wait", "a duration takes a unit", "skillfleet train --help"}},
		{"unknown flag", []string{"coordinator", "--no-such-flag"}, []string{"no-such-flag", "skillfleet coordinator --help"}},
		{"bad int", []string{"eval", "--workers", "two"}, []string{"-workers", "skillfleet eval --help"}},
		{"data check", []string{"data", "check", "--nope", "x"}, []string{"nope", "skillfleet data check --help"}},
		{"migrate", []string{"migrate", "--nope"}, []string{"nope", "skillfleet migrate --help"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tc.args, &stdout, &stderr); code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			msg := strings.TrimSpace(stderr.String())
			if strings.Contains(msg, "\n") || strings.Contains(msg, "Usage") {
				t.Errorf("stderr is not one line without usage:\n%s", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("stderr %q lacks %q", msg, w)
				}
			}
			if strings.Contains(tc.name, "int") && strings.Contains(msg, "duration") {
				t.Errorf("an int flag got the duration hint: %q", msg)
			}
		})
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"train", "--help"}, &stdout, &stderr); code != exitOK || !strings.Contains(stderr.String(), "Usage: skillfleet train") || !strings.Contains(stderr.String(), "-ack-wait") {
		t.Errorf("train --help: exit %d, stderr %q; want the usage", code, stderr.String())
	}
}

// TestBudgetMessageNamesTheBudgetReached: the advice of a budget stop
// names the budget that was reached, not always max_tokens.
func TestBudgetMessageNamesTheBudgetReached(t *testing.T) {
	for key, msg := range map[string]string{
		"budget.max_calls":  "budget reached: budget.max_calls (12 calls made, limit 10)",
		"budget.max_usd":    "budget reached: budget.max_usd ($1.20 spent, limit $1.00)",
		"budget.max_tokens": "budget reached: budget.max_tokens (5 tokens spent, limit 4)",
	} {
		err := classifyRunError(fmt.Errorf("%w: %s", trainer.ErrBudget, strings.TrimPrefix(msg, "budget reached: ")), "runs/x", false)
		if got := err.Error(); !strings.Contains(got, "raise "+key+" (--set "+key+"=N)") {
			t.Errorf("%s: %q", key, got)
		}
		for _, other := range []string{"budget.max_calls", "budget.max_usd", "budget.max_tokens"} {
			if other != key && strings.Contains(err.Error(), "raise "+other) {
				t.Errorf("%s: advice names %s: %q", key, other, err)
			}
		}
	}
}

// TestSleepPersonaDefaultStateDir: without --state-dir, a persona's night,
// its status and its adoption share the default state dir (under the
// home), so status finds the night that run made; they used to each get
// a new temporary dir.
func TestSleepPersonaDefaultStateDir(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	if code, out, errOut := runCLI(t, "sleep", "run", "--persona", "researcher", "--backend", "sim"); code != exitOK {
		t.Fatalf("run exit %d\n%s\n%s", code, out, errOut)
	}
	box := filepath.Join(home, ".skillfleet-sleep", "persona-researcher")
	if _, err := os.Stat(box); err != nil {
		t.Fatalf("the persona's sandbox is not in the default state dir: %v", err)
	}
	code, out, errOut := runCLI(t, "sleep", "status", "--persona", "researcher")
	if code != exitOK || !strings.Contains(out, "night 1") {
		t.Fatalf("status exit %d, want night 1:\n%s\n%s", code, out, errOut)
	}
}

// TestResumeHintNamesTheChosenDir: a run without --out gets a new dir, so
// its start names the dir to pass with --out to resume it, and a stop
// (here its budget) says to re-run with that --out; with --out the hint
// is the same command.
func TestResumeHintNamesTheChosenDir(t *testing.T) {
	root := repoRoot(t)
	t.Chdir(t.TempDir())
	args := []string{"train", "--config", filepath.Join(root, "configs", "demo.yaml"), "--no-fsync",
		"--set", "env.skill_init=" + filepath.Join(root, "configs", "skills", "sim_demo_seed.md"), "--set", "budget.max_calls=30"}
	var stdout, stderr bytes.Buffer
	if code := run(args, &stdout, &stderr); code != exitBudget {
		t.Fatalf("exit %d, want %d (budget)\n%s", code, exitBudget, stderr.String())
	}
	dirs, _ := filepath.Glob(filepath.Join("runs", "sim-*"))
	if len(dirs) != 1 {
		t.Fatalf("run dirs %v, want one", dirs)
	}
	dir, _ := filepath.Abs(dirs[0])
	msg := stderr.String()
	if !strings.Contains(msg, "no --out: this run's dir is "+dir+"; to resume it after a stop, re-run with --out "+dir) {
		t.Errorf("start lacks the dir to resume:\n%s", msg)
	}
	if !strings.Contains(msg, "re-run the same command with --out "+dir+" to resume") {
		t.Errorf("budget stop lacks --out DIR:\n%s", msg)
	}
	err := classifyRunError(trainer.ErrStopped, "runs/x", false)
	if !strings.Contains(err.Error(), "re-run the same command to resume") || strings.Contains(err.Error(), "--out") {
		t.Errorf("with --out: %q", err)
	}
}
