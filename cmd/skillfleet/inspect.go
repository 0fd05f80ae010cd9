package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/skillfleet/skillfleet/internal/inspect"
)

// runInspect lists a run's per-item results, filtered, shows them whole
// or exports them as JSONL (package inspect).
func runInspect(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("inspect", "inspect RUN_DIR [--step N] [--stage S] [--item ID] [--outcome O] [--failed] [--min-score X] [--max-score X] [--show | --jsonl FILE]", stderr)
	var f inspect.Filter
	step := fs.Int("step", -1, "only results of this step (0: the baseline and evaluations outside steps)")
	fs.StringVar(&f.Stage, "stage", "", "only results of this stage: rollout, gate, baseline, test_best, eval_skill, ... (the list shows them)")
	fs.StringVar(&f.Item, "item", "", "only results of this item id")
	fs.StringVar(&f.Outcome, "outcome", "", "only results with this outcome: ok, model_error, timeout, ...")
	fs.BoolVar(&f.Failed, "failed", false, "only results that did not score full marks (hard < 1) or were not scored")
	minScore := fs.Float64("min-score", -1, "only results whose hard score is at least this")
	maxScore := fs.Float64("max-score", -1, "only results whose hard score is at most this")
	show := fs.Bool("show", false, "show each selected result whole: prompt, skill version, conversation, answer, score, the analysts' patches")
	jsonl := fs.String("jsonl", "", "write the selected results with their trajectories as JSON lines to FILE (- for stdout)")
	pos, help, err := parseInterspersed(fs, args)
	if help || err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{errors.New("inspect: want exactly one RUN_DIR (`skillfleet inspect --help` lists the filters)")}
	}
	if *show && *jsonl != "" {
		return usageError{errors.New("inspect: --show and --jsonl exclude each other")}
	}
	if *step >= 0 {
		f.Step = step
	}
	if *minScore >= 0 {
		f.MinScore = minScore
	}
	if *maxScore >= 0 {
		f.MaxScore = maxScore
	}
	run, err := inspect.Load(pos[0])
	if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	preds := run.Select(f)
	if len(preds) == 0 {
		return fmt.Errorf("inspect: no result matches (stages in %s: %s)", pos[0], strings.Join(run.Stages(), ", "))
	}
	if !*show && *jsonl == "" {
		return inspect.WriteList(stdout, preds)
	}
	rd, err := inspect.NewReader(pos[0], preds)
	if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	if *show {
		for _, p := range preds {
			if err := inspect.WriteTrajectory(stdout, rd.Trajectory(p)); err != nil {
				return err
			}
		}
		return nil
	}
	w := stdout
	if *jsonl != "-" {
		file, err := os.Create(*jsonl)
		if err != nil {
			return fmt.Errorf("inspect: --jsonl: %w", err)
		}
		defer file.Close()
		w = file
	}
	if err := rd.WriteJSONL(w, preds); err != nil {
		return fmt.Errorf("inspect: --jsonl: %w", err)
	}
	if *jsonl != "-" {
		fmt.Fprintf(stdout, "wrote %d results to %s\n", len(preds), *jsonl)
	}
	return nil
}
