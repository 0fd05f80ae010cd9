package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sort"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

func runEval(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o trainOpts
	fs := newFlagSet("eval", "eval --config FILE --skill FILE [--split test] [--baseline] [flags]", stderr)
	o.register(fs, false)
	skillPath := fs.String("skill", "", "skill file, or skill package directory, to score (required)")
	split := fs.String("split", "test", "split: train, val or test")
	baseline := fs.Bool("baseline", false, "also score the empty (no-skill) and the seed skill (env.skill_init), side by side")
	if help, err := parse(fs, args); help || err != nil {
		return err
	}
	if *skillPath == "" {
		return usageError{errors.New("eval: --skill is required")}
	}
	return evalSkill(ctx, o, *skillPath, *split, *baseline, stdout, stderr)
}

// evalSkill scores the skill file on a split (with the no-skill and seed
// baselines when baseline is set) and writes eval_summary.json in the run dir.
func evalSkill(ctx context.Context, o trainOpts, skillPath, split string, baseline bool, stdout, stderr io.Writer) error {
	// A skill file verbatim, or a skill package directory as its bundle.
	text, err := skillpkg.ReadInit(skillPath, skillpkg.Limits{})
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
	if o.out == "" {
		o.out = filepath.Join("runs", "eval-"+cfg.Env.Name)
	}
	rc, err := o.runConfig(cfg, log)
	if err != nil {
		return err
	}
	rc.Eval = &coordinator.Eval{Split: split, Names: []string{"skill"}, Skills: []string{string(text)}, WithBaselines: baseline}
	rc.Progress = coordinator.NewProgress(stdout, isTTY(stdout))
	run, err := coordinator.Start(ctx, rc, o.runDeps(log))
	if err != nil {
		return startError(err)
	}
	out, err := run.Wait()
	if err != nil {
		return err
	}
	res := out.Eval
	types := map[string]bool{}
	for _, r := range res {
		for k := range r.ByType {
			types[k] = true
		}
	}
	var tt []string
	for k := range types {
		if k != "overall" {
			tt = append(tt, k)
		}
	}
	sort.Strings(tt)
	tt = append(tt, "overall")
	fmt.Fprintf(stdout, "\n%-24s", "task type ("+split+")")
	for _, r := range res {
		fmt.Fprintf(stdout, " %12s", r.Name)
	}
	fmt.Fprintln(stdout)
	for _, k := range tt {
		fmt.Fprintf(stdout, "%-24s", k)
		for _, r := range res {
			fmt.Fprintf(stdout, " %12s", evalCell(r.ByType[k]))
		}
		fmt.Fprintln(stdout)
	}
	fmt.Fprintf(stdout, "\nwritten: %s\n", filepath.Join(run.Dir(), "eval_summary.json"))
	return nil
}

// evalCell is one cell of the eval table: the hard accuracy over the
// scored items and how many there were; items that could not be scored
// (infrastructure failures) show as scored/total, and a row with none
// scored has no accuracy at all rather than 0.
func evalCell(ts trainer.TypeScore) string {
	switch {
	case ts.Scored == 0 && ts.Total > 0:
		return fmt.Sprintf("- (0/%d)", ts.Total)
	case ts.Scored < ts.Total:
		return fmt.Sprintf("%.3f (%d/%d)", ts.Hard, ts.Scored, ts.Total)
	default:
		return fmt.Sprintf("%.3f (%d)", ts.Hard, ts.Total)
	}
}
