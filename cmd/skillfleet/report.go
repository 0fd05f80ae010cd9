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
	"strings"

	"github.com/skillfleet/skillfleet/coordinator"
)

func runReport(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("report", "report RUN_DIR", stderr)
	if err := fs.Parse(args); err != nil {
		if strings.Contains(err.Error(), "help") {
			return nil
		}
		return usageError{err}
	}
	if fs.NArg() != 1 {
		return usageError{errors.New("report: want exactly one RUN_DIR")}
	}
	dir := fs.Arg(0)
	events, err := readEvents(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "run %s\n\n", dir)
	fmt.Fprintf(stdout, "%-6s %-6s %-16s %10s %10s %10s\n", "step", "epoch", "action", "candidate", "current", "best")
	for _, ev := range events {
		switch ev.Type {
		case "baseline":
			fmt.Fprintf(stdout, "%-6s %-6s %-16s %10s %10.3f %10.3f\n", "0", "-", "baseline", "-", ev.CurrentScore, ev.BestScore)
		case "step", "slow_update":
			cand := "-"
			switch {
			case ev.CandidateScore != nil:
				cand = fmt.Sprintf("%.3f", *ev.CandidateScore)
			case ev.EarlyStopped:
				cand = "stopped"
			case ev.Unchanged:
				cand = "unchanged"
			}
			name := ev.Action
			if ev.Type == "slow_update" {
				name = "slow:" + ev.Action
			}
			fmt.Fprintf(stdout, "%-6d %-6d %-16s %10s %10.3f %10.3f\n", ev.Step, ev.Epoch, name, cand, ev.CurrentScore, ev.BestScore)
		}
	}
	var tok struct {
		ByStage map[string]coordinator.Totals `json:"by_stage"`
		Total   coordinator.Totals            `json:"total"`
	}
	if data, err := os.ReadFile(filepath.Join(dir, "tokens.json")); err == nil && json.Unmarshal(data, &tok) == nil {
		fmt.Fprintf(stdout, "\n%-22s %8s %8s %12s %12s\n", "stage", "tasks", "calls", "input", "output")
		var ks []string
		for k := range tok.ByStage {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		for _, k := range ks {
			t := tok.ByStage[k]
			fmt.Fprintf(stdout, "%-22s %8d %8d %12d %12d\n", k, t.Tasks, t.Calls, t.Input, t.Output)
		}
		fmt.Fprintf(stdout, "%-22s %8d %8d %12d %12d\n", "total", tok.Total.Tasks, tok.Total.Calls, tok.Total.Input, tok.Total.Output)
	}
	var sum coordinator.Summary
	if data, err := os.ReadFile(filepath.Join(dir, "summary.json")); err == nil && json.Unmarshal(data, &sum) == nil && sum.TestHard != nil {
		fmt.Fprintf(stdout, "\ntest hard: baseline %.3f, best %.3f, final %.3f\n", sum.TestHard["baseline"], sum.TestHard["best"], sum.TestHard["final"])
	}
	return nil
}

func readEvents(path string) ([]coordinator.Event, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	var out []coordinator.Event
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if line == "" {
			continue
		}
		var ev coordinator.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, i+1, err)
		}
		out = append(out, ev)
	}
	return out, nil
}
