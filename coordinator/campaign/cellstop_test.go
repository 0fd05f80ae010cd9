package campaign

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/pkg/usage"
)

// TestCellStoppedByItsOwnBudgetIsNotRunAgain: a cell whose run stops on a
// budget of its own config (the campaign has none) ends stopped, is run
// once, and the campaign ends once the other cells are done; before, the
// campaign took the stopped cell again at once, forever.
func TestCellStoppedByItsOwnBudgetIsNotRunAgain(t *testing.T) {
	runs := newFakeRuns(2, time.Millisecond)
	run := func(ctx context.Context, r CellRun) error {
		if r.Cell.Name == "c1" {
			runs.mu.Lock()
			runs.started[r.Dir]++
			runs.mu.Unlock()
			return fmt.Errorf("%w: budget.max_calls (40 calls made, limit 1)", trainer.ErrBudget)
		}
		return runs.run(ctx, r)
	}
	dir := t.TempDir()
	c, err := New(Config{Spec: writeSpec(t, specOf(3, 2, "", "c1", "c0")), Dir: dir}, Deps{Run: run})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	f, err := c.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatal("the campaign did not end within a minute")
	}
	states := map[string]string{}
	for _, cs := range f.Cells {
		states[cs.Name] = cs.State
	}
	// The evaluation of c1's best skill waits for the campaign's next run,
	// as c1 does; c0's is made.
	if states["c0"] != StateDone || states["c2"] != StateDone || states["c1"] != StateStopped || states["x-c1"] != StateQueued || states["x-c0"] != StateDone {
		t.Errorf("states %v, want c0, c2 and x-c0 done, c1 stopped, x-c1 queued", states)
	}
	for _, cs := range f.Cells {
		if cs.Name == "c1" && !strings.Contains(cs.Error, "budget.max_calls") {
			t.Errorf("c1's error %q does not name its budget", cs.Error)
		}
	}
	if n := runs.started[filepath.Join(dir, "cells", "c1")]; n != 1 {
		t.Errorf("c1 ran %d times, want once", n)
	}
}

func TestCredentialsRefused(t *testing.T) {
	refused := usage.Totals{Tasks: 8, FailedTasks: 8, Calls: 8, FailedCalls: 8, Causes: usage.Causes{Auth: 8}}
	ok := usage.Totals{Tasks: 40, Calls: 40, Input: 1000}
	models := map[string]roleModel{"optimizer": {Model: "gpt-5.5", BaseURL: "https://api.example/v1", KeyEnv: "MY_KEY"}}
	for _, tc := range []struct {
		name string
		rows []trainer.Row
		want string // "" = nil
	}{
		{"refused optimizer", []trainer.Row{{Stage: "rollout", Role: "target", Totals: ok}, {Stage: "reflect", Role: "optimizer", Totals: refused}},
			"credentials refused: the optimizer's calls were refused (8 attempts answered HTTP 401/403, none of its 8 tasks succeeded) for model gpt-5.5 at https://api.example/v1: check the key in MY_KEY"},
		// Refused across stages still counts as one role.
		{"over stages", []trainer.Row{{Stage: "reflect", Role: "optimizer", Totals: refused}, {Stage: "merge", Role: "optimizer", Totals: refused}},
			"(16 attempts answered HTTP 401/403, none of its 16 tasks succeeded)"},
		// A role that succeeded once is left to its retries.
		{"succeeded before", []trainer.Row{{Stage: "reflect", Role: "optimizer", Totals: refused}, {Stage: "merge", Role: "optimizer", Totals: usage.Totals{Tasks: 1, Calls: 1}}}, ""},
		// Failures of other causes are not a refusal.
		{"server errors", []trainer.Row{{Stage: "reflect", Role: "optimizer", Totals: usage.Totals{Tasks: 4, FailedTasks: 4, Causes: usage.Causes{Server5xx: 12}}}}, ""},
		// A hedged loser's refusal is not a task of the role.
		{"hedged only", []trainer.Row{{Stage: trainer.HedgedStage, Role: "optimizer", Totals: refused}}, ""},
		{"nothing yet", nil, ""},
	} {
		err := credentialsRefused(tc.rows, models)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v, want nil", tc.name, err)
		case tc.want != "" && (err == nil || !errors.Is(err, ErrCredentialsRefused) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an ErrCredentialsRefused containing %q", tc.name, err, tc.want)
		}
	}
}

func TestSafeURL(t *testing.T) {
	for in, want := range map[string]string{
		"":                                      "",
		"http://127.0.0.1:8000/v1":              "http://127.0.0.1:8000/v1",
		"https://user:secret@host/v1?key=abc#x": "https://host/v1",
	} {
		if got := safeURL(in); got != want {
			t.Errorf("safeURL(%q) = %q, want %q", in, got, want)
		}
	}
}
