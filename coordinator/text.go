package coordinator

import (
	"fmt"
	"io"
	"path/filepath"
	"sort"
	"strings"

	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/pkg/usage"
)

// WriteStart writes the line that opens a training run's output: what is
// trained on which model, the split sizes and the run dir.
func (r *Run) WriteStart(w io.Writer) error {
	s, sp := r.Settings(), r.Splits()
	_, err := fmt.Fprintf(w, "skillfleet: training %s on %s (%d train / %d val / %d test items); run dir %s\n",
		s.Bench, s.Target.GetModel(), len(sp.Train), len(sp.Val), len(sp.Test), r.Dir())
	return err
}

// WriteText writes what a finished run produced, for people: a training
// run's scores, steps and spend (and its rollout cache's traffic), or an
// evaluation's table of accuracy by task type. dir is the run dir.
func (res Result) WriteText(w io.Writer, dir string) error {
	var b strings.Builder
	if res.Summary != nil {
		writeSummary(&b, res.Summary, dir)
	}
	if c := res.Cache; c != nil && res.Summary != nil {
		t := res.Totals
		fmt.Fprintf(&b, "rollout cache: %d hits, %d misses; %d calls and %s tokens saved\n",
			c.Hits, c.Misses, t.SavedCalls, usage.FormatCount(t.SavedInput+t.SavedOutput))
	}
	if res.Summary == nil && len(res.Eval) > 0 {
		writeEval(&b, res.Eval, dir)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeSummary(b *strings.Builder, sum *trainer.Summary, dir string) {
	b.WriteString("\n")
	fmt.Fprintf(b, "%-10s %10s %10s\n", "skill", "selection", "test")
	row := func(name string, sel *float64, test float64, ok bool) {
		s, t := "-", "-"
		if sel != nil {
			s = fmt.Sprintf("%.3f", *sel)
		}
		if ok {
			t = fmt.Sprintf("%.3f", test)
		}
		fmt.Fprintf(b, "%-10s %10s %10s\n", name, s, t)
	}
	base, best := sum.BaselineScore, sum.BestScore
	tb, okb := sum.TestHard["baseline"]
	tbest, okbest := sum.TestHard["best"]
	tf, okf := sum.TestHard["final"]
	row("baseline", &base, tb, okb)
	row("best", &best, tbest, okbest)
	row("final", sum.FinalScore, tf, okf)
	fmt.Fprintf(b, "\nsteps %d: %d accepted, %d rejected, %d skipped; %d model calls, %s tokens; %.1fs\n",
		sum.TotalSteps, sum.Accepts, sum.Rejects, sum.Skips, sum.Tokens.Calls, usage.FormatCount(sum.Tokens.Tokens()), sum.WallTime)
	fmt.Fprintf(b, "best skill: %s\n", filepath.Join(dir, "best_skill.md"))
}

// writeEval writes an evaluation's accuracy by task type (rows, overall
// last) and skill (columns).
func writeEval(b *strings.Builder, res []trainer.EvalResult, dir string) {
	types := map[string]bool{}
	for _, r := range res {
		for k := range r.ByType {
			types[k] = true
		}
	}
	var rows []string
	for k := range types {
		if k != "overall" {
			rows = append(rows, k)
		}
	}
	sort.Strings(rows)
	rows = append(rows, "overall")
	several := false
	for _, r := range res {
		several = several || r.Split != res[0].Split
	}
	if several {
		// eval --split all: a column per skill and split.
		fmt.Fprintf(b, "\n%-24s", "task type")
		for _, r := range res {
			fmt.Fprintf(b, " %18s", r.Name+" ("+r.Split+")")
		}
		b.WriteString("\n")
		for _, k := range rows {
			fmt.Fprintf(b, "%-24s", k)
			for _, r := range res {
				fmt.Fprintf(b, " %18s", evalCell(r.ByType[k]))
			}
			b.WriteString("\n")
		}
		fmt.Fprintf(b, "\nwritten: %s\n", filepath.Join(dir, "eval_summary.json"))
		return
	}
	fmt.Fprintf(b, "\n%-24s", "task type ("+res[0].Split+")")
	for _, r := range res {
		fmt.Fprintf(b, " %12s", r.Name)
	}
	b.WriteString("\n")
	for _, k := range rows {
		fmt.Fprintf(b, "%-24s", k)
		for _, r := range res {
			fmt.Fprintf(b, " %12s", evalCell(r.ByType[k]))
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(b, "\nwritten: %s\n", filepath.Join(dir, "eval_summary.json"))
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
