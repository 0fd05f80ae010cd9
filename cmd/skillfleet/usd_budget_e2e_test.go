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

// TestDollarBudgetStopsAndResumes: budget.max_usd, priced with --prices,
// stops the run cleanly (exit 3, naming the budget and the price table);
// resuming with a larger budget ends exactly like an unbudgeted run. A
// model the table cannot price is refused before any call.
func TestDollarBudgetStopsAndResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo")
	}
	skill, events := reference(t)
	prices := filepath.Join(t.TempDir(), "prices.yaml")
	// $10 per million tokens: the demo's ~0.7M tokens cost about $7.
	if err := os.WriteFile(prices, []byte("as_of: \"2026-11-22\"\ncurrency: USD\nmodels:\n  sim-*: {input: 10, output: 10}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "usd")
	out, err := trainDemo(t, dir, nil, "--prices", prices, "--set", "budget.max_usd=2.5")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitBudget {
		t.Fatalf("budgeted run: want exit %d, got %v\n%s", exitBudget, err, out)
	}
	if !strings.Contains(out, "budget.max_usd") || !strings.Contains(out, "2026-11-22") || !strings.Contains(out, "resume") {
		t.Errorf("budget message does not name the budget, the prices and how to resume:\n%s", out)
	}
	if out, err := trainDemo(t, dir, nil, "--prices", prices, "--set", "budget.max_usd=1000"); err != nil {
		t.Fatalf("resume with a larger budget: %v\n%s", err, out)
	}
	if got := readFile(t, filepath.Join(dir, "best_skill.md")); !bytes.Equal(got, skill) {
		t.Error("best_skill.md differs from the unbudgeted run")
	}
	if got := readFile(t, filepath.Join(dir, "events.jsonl")); !bytes.Equal(got, events) {
		t.Error("events.jsonl differs from the unbudgeted run")
	}

	unpriced := filepath.Join(t.TempDir(), "none.yaml")
	if err := os.WriteFile(unpriced, []byte("as_of: \"2026-11-22\"\ncurrency: USD\nmodels:\n  gpt-5: {input: 1.25, output: 10}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err = trainDemo(t, filepath.Join(t.TempDir(), "x"), nil, "--prices", unpriced, "--set", "budget.max_usd=1")
	if !errors.As(err, &ee) || ee.ExitCode() != exitUsage || !strings.Contains(out, `no price for model "sim-`) {
		t.Errorf("unpriced model: want exit %d naming the model, got %v\n%s", exitUsage, err, out)
	}
}
