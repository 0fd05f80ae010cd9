package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/ui"
	"github.com/skillfleet/skillfleet/pkg/config"
	"github.com/skillfleet/skillfleet/pkg/pricing"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// runEval scores a skill on a split (with the no-skill and seed baselines
// when --baseline is set) and writes eval_summary.json in the run dir.
func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o trainOpts
	fs := newFlagSet("eval", "eval --config FILE --skill FILE [--split test] [--baseline] [flags]", stderr)
	o.register(fs, false)
	skillPath := fs.String("skill", "", "skill file, or skill package directory, to score (required)")
	split := fs.String("split", "test", "split: train, val, test, or all (each split that has items, one column per skill and split)")
	baseline := fs.Bool("baseline", false, "also score the empty (no-skill) and the seed skill (env.skill_init), side by side")
	if help, err := parse(fs, skillOptArgs(fs, args)); help || err != nil {
		return err
	}
	if *skillPath == "" {
		return usageError{errors.New("eval: --skill is required")}
	}
	// A skill file verbatim, or a skill package directory as its bundle.
	text, err := skillpkg.ReadInit(*skillPath, skillpkg.Limits{})
	if err != nil {
		return usageError{fmt.Errorf("eval: --skill: %w", err)}
	}
	log, err := newLogger(stderr, o.logFormat, o.logLevel)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(o.config, o.sets)
	if err != nil {
		return err
	}
	ev := coordinator.Eval{Split: *split, Names: []string{"skill"}, Skills: []string{string(text)}, WithBaselines: *baseline}
	if o.estimate {
		// Nothing is called or written: the calls, tokens and dollars of
		// the evaluation.
		prices, err := pricing.LoadOrDefault(o.prices)
		if err != nil {
			return usageError{fmt.Errorf("--prices: %w", err)}
		}
		if ev.Split != coordinator.EvalSplitAll {
			return startError(coordinator.WriteEvalEstimate(stdout, cfg, prices, ev))
		}
		// One estimate per split.
		for i, sp := range []string{"train", "val", "test"} {
			if i > 0 {
				fmt.Fprintln(stdout)
			}
			one := ev
			one.Split = sp
			if err := coordinator.WriteEvalEstimate(stdout, cfg, prices, one); err != nil {
				return startError(err)
			}
		}
		return nil
	}
	if o.out == "" {
		o.out = filepath.Join("runs", "eval-"+cfg.Env.Name)
	}
	rc, err := o.runConfig(cfg, log)
	if err != nil {
		return err
	}
	if err := o.preflight(ctx, map[string]*config.Config{"": cfg}); err != nil {
		return err
	}
	rc.Eval = &ev
	rc.Progress = coordinator.NewProgress(stdout, ui.IsTerminal(stdout))
	defer rc.Progress.Periodic(o.progressEvery)()
	run, err := coordinator.Start(ctx, rc, o.runDeps(log))
	if err != nil {
		return startError(err)
	}
	out, err := run.Wait()
	if err != nil {
		return err
	}
	return out.WriteText(stdout, run.Dir())
}
