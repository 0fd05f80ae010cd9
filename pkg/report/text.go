package report

import (
	"bufio"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
)

// WriteText writes the terminal summary.
func (r *Report) WriteText(w io.Writer) error {
	bw := bufio.NewWriter(w)
	p := func(format string, args ...any) { fmt.Fprintf(bw, format, args...) }

	// Heading.
	id := r.RunID
	if id == "" {
		id = "(unnamed run)"
	}
	p("run %s", id)
	if r.Benchmark != "" {
		p(" · benchmark %s", r.Benchmark)
	}
	if len(r.Eval) > 0 {
		if sp := evalSplits(r.Eval); len(sp) > 1 {
			p(" · evaluation on the %s splits\n", strings.Join(sp, ", "))
		} else {
			p(" · evaluation on the %s split\n", sp[0])
		}
		writeEvalTable(p, r.Eval)
	} else {
		r.writeTraining(p)
	}

	// Spend.
	stages, total := r.Spend()
	if len(stages) > 0 {
		p("\nspend by stage")
		if r.Cost != nil {
			p(" (prices: %s, as of %s)", r.Cost.Source, r.Cost.AsOf)
		}
		p("\n%-16s %7s %6s %7s %5s %12s %11s %11s %10s\n", "stage", "calls", "failed", "retries", "429s", "input", "cached", "output", "USD")
		for _, s := range append(stages, total) {
			p("%-16s %7s %6s %7s %5s %12s %11s %11s %10s\n", s.Stage, count(s.Calls), count(s.FailedCalls), count(s.Retries), count(s.RateLimited),
				count(s.Input), count(s.CacheRead), count(s.Output), r.usd(s))
		}
		if c := total.Causes; c.Total() > 0 {
			p("\nfailed and retried call attempts by cause:")
			for _, nc := range c.Named() {
				p(" %s %s", nc.Name, count(nc.Count))
			}
			p("\n")
		}
		for _, s := range stages {
			if s.Stage == hedgedStage && total.Calls > 0 {
				usd := ""
				if r.Cost != nil {
					usd = ", " + r.usd(s)
				}
				p("\nhedging: %s calls on the losing attempts of hedged tasks (%.1f%% of the calls%s)\n",
					count(s.Calls), 100*float64(s.Calls)/float64(total.Calls), usd)
			}
		}
		if total.CacheHits > 0 {
			p("\nrollout cache: %s results reused from earlier runs, saving %s calls and %s tokens\n",
				count(total.CacheHits), count(total.SavedCalls), count(total.SavedInput+total.SavedOutput))
		}
		if r.Tokens != nil && len(r.Tokens.Rows) > 0 {
			p("\nby model\n")
			type m struct{ calls, tok int64 }
			by := map[string]*m{}
			for _, row := range r.Tokens.Rows {
				if row.Model == "" && row.Tokens() == 0 {
					continue
				}
				x := by[row.Model]
				if x == nil {
					x = &m{}
					by[row.Model] = x
				}
				x.calls += row.Calls
				x.tok += row.Tokens()
			}
			var names []string
			for k := range by {
				names = append(names, k)
			}
			sort.Strings(names)
			for _, k := range names {
				usd := "-"
				if r.Cost != nil {
					if v, ok := r.Cost.ByModel[k]; ok {
						usd = dollars(v)
					} else if by[k].tok > 0 {
						usd = "unpriced"
					}
				}
				name := k
				if name == "" {
					name = "(unnamed)"
				}
				p("  %-34s %7s calls %14s tokens %10s\n", name, count(by[k].calls), count(by[k].tok), usd)
			}
		}
	}

	if len(r.Packages) > 0 {
		p("\npackage changes per step (candidate against the skill the step started from)\n")
		for _, ps := range r.Packages {
			p("step %d (%s, %s): %d file(s)\n", ps.Step, ps.Verdict, ps.Action, len(ps.Files))
			for _, f := range ps.Files {
				p("  %s\n", f.Summary())
				for _, l := range f.Shown() {
					p("      %s\n", l)
				}
				if more := f.Hidden(); more > 0 {
					p("      … %d more line(s)\n", more)
				}
			}
		}
	}

	if len(r.Notes) > 0 {
		p("\n")
		for _, n := range r.Notes {
			p("note: %s\n", n)
		}
	}
	return bw.Flush()
}

// usd formats a stage's dollars: "-" without prices, a "≥" lower bound
// when some of its tokens have no price.
// hedgedStage is the stage of tokens.json that counts the losing attempts
// of hedged tasks (runtime.hedge).
const hedgedStage = "hedged"

func (r *Report) usd(s StageSpend) string {
	if r.Cost == nil {
		return "-"
	}
	if !s.Priced {
		if s.USD == 0 {
			return "unpriced"
		}
		return "≥" + dollars(s.USD)
	}
	return dollars(s.USD)
}

func dollars(v float64) string { return fmt.Sprintf("$%.4f", v) }

func triple(m map[string]float64) string {
	var parts []string
	for _, k := range []string{"baseline", "best", "final"} {
		if v, ok := m[k]; ok {
			parts = append(parts, fmt.Sprintf("%s %.4f", k, v))
		}
	}
	return strings.Join(parts, "   ")
}

func score(v *float64) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.4f", *v)
}

func candidate(row StepRow) string {
	if row.Candidate != nil {
		return fmt.Sprintf("%.4f", *row.Candidate)
	}
	switch row.CandidateNote {
	case "stopped early":
		return "stopped"
	case "":
		return "-"
	default:
		return row.CandidateNote
	}
}

func tokens(n int64) string {
	if n < 0 {
		return "-"
	}
	return count(n)
}

// writeTraining writes a training run's decisions and scores.
func (r *Report) writeTraining(p func(string, ...any)) {
	acc, rej, skip := r.Decisions()
	p(" · %d steps\n", acc+rej+skip)
	p("decisions: %d accepted, %d rejected, %d skipped\n", acc, rej, skip)

	// Scores.
	p("\nscores (selection split)\n")

	if s := r.Summary; s != nil {
		p("  baseline %.4f   best %.4f (step %d, %s)", s.BaselineScore, s.BestScore, s.BestStep, s.BestOrigin)
		if s.FinalScore != nil {
			p("   final %.4f (%s)", *s.FinalScore, s.CurrentOrigin)
		}
		if s.Promoted {
			p("   final promoted to best")
		}
		p("\n")
		if len(s.TestHard) > 0 {
			p("  test hard: %s", triple(s.TestHard))
			if s.DeltaBestHard != nil && s.DeltaFinalHard != nil {
				p("   Δbest %+.4f   Δfinal %+.4f", *s.DeltaBestHard, *s.DeltaFinalHard)
			}
			p("\n")
		}
		if len(s.TestSoft) > 0 {
			p("  test soft: %s\n", triple(s.TestSoft))
		}
	} else if rows := r.Rows(); len(rows) > 0 {
		last := rows[len(rows)-1]
		p("  baseline %.4f   current %.4f   best %.4f (run not finished)\n", rows[0].Current, last.Current, last.Best)
	}

	// Decisions.
	p("\n%5s %5s  %-32s %8s %10s %8s %8s %12s\n", "step", "epoch", "action", "rollout", "candidate", "current", "best", "tokens")
	for _, row := range r.Rows() {
		step, epoch := fmt.Sprint(row.Step), fmt.Sprint(row.Epoch)
		action := row.Action
		switch row.Kind {
		case "baseline":
			epoch = "-"
		case "slow_update":
			step = "·"
			action = "slow update: " + row.Action
		case "final":
			step, epoch = "final", "-"
		}
		p("%5s %5s  %-32s %8s %10s %8.4f %8.4f %12s\n", step, epoch, action, score(row.Rollout), candidate(row), row.Current, row.Best, tokens(row.Tokens))
	}
}

// writeEvalTable writes an evaluation's hard accuracy by task type, one
// column per skill scored: over the scored items, with their count;
// items that could not be scored show as scored/total.
func writeEvalTable(p func(string, ...any), res []EvalResult) {
	rows := evalTypes(res)
	w := 14
	for _, e := range res {
		w = max(w, len(evalColumn(e, res)))
	}
	p("\n%-24s", "task type")
	for _, e := range res {
		p(" %*s", w, evalColumn(e, res))
	}
	p("\n")
	for _, k := range rows {
		p("%-24s", k)
		for _, e := range res {
			p(" %*s", w, evalCell(e, k))
		}
		p("\n")
	}
}

// evalSplits are the splits of an evaluation's results, in their order.
func evalSplits(res []EvalResult) []string {
	var out []string
	for _, e := range res {
		if !slices.Contains(out, e.Split) {
			out = append(out, e.Split)
		}
	}
	return out
}

// evalColumn names a result's column: the skill's name, with the split
// when the evaluation covered several.
func evalColumn(e EvalResult, res []EvalResult) string {
	if len(evalSplits(res)) > 1 {
		return e.Name + " (" + e.Split + ")"
	}
	return e.Name
}

// evalTypes are the task types of an evaluation, sorted, then "overall".
func evalTypes(res []EvalResult) []string {
	types := map[string]bool{}
	for _, e := range res {
		for k := range e.ByType {
			if k != "overall" {
				types[k] = true
			}
		}
	}
	return append(slices.Sorted(maps.Keys(types)), "overall")
}

// evalCell is a result's hard accuracy on a task type and its item
// count; "-" when no item could be scored, blank when it had none.
func evalCell(e EvalResult, typ string) string {
	ts, ok := e.ByType[typ]
	switch {
	case !ok:
		return ""
	case ts.Scored == 0 && ts.Total > 0:
		return fmt.Sprintf("- (0/%d)", ts.Total)
	case ts.Scored < ts.Total:
		return fmt.Sprintf("%.3f (%d/%d)", ts.Hard, ts.Scored, ts.Total)
	default:
		return fmt.Sprintf("%.3f (%d)", ts.Hard, ts.Total)
	}
}
