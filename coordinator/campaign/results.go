package campaign

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/pkg/pricing"
	"github.com/skillfleet/skillfleet/pkg/report"
	"github.com/skillfleet/skillfleet/pkg/rundir"
)

// EvalSummaryFile is the file an evaluation writes in its run dir.
const EvalSummaryFile = "eval_summary.json"

// NoSkillDir is the eval run, inside a training cell's dir, that measures
// the empty skill on the test split.
const NoSkillDir = "no_skill"

// Results are what a cell's run dirs say about it.
type Results struct {
	NoSkill, Seed, Best             *float64
	SelectionCurrent, SelectionBest *float64
	Accepted                        int
	Calls, Tokens                   int64
	// USD is nil unless the price table prices every model the cell used.
	USD *float64
}

// ReadResults reads a cell's results from its run dir: summary.json (or
// eval_summary.json for an eval-only cell), the no-skill evaluation and
// the spend of both from their tokens.json.
func ReadResults(cellDir string, cell Cell, prices *pricing.Table) Results {
	var r Results
	if cell.EvalFrom != "" {
		scores := readEvalScores(cellDir)
		r.NoSkill, r.Seed, r.Best = scores["no_skill"], scores["seed_skill"], scores["skill"]
	} else {
		if rep, err := report.Load(cellDir, nil); err == nil && rep.Summary != nil {
			sum := rep.Summary
			if v, ok := sum.TestHard["baseline"]; ok {
				r.Seed = &v
			}
			if v, ok := sum.TestHard["best"]; ok {
				r.Best = &v
			}
			best := sum.BestScore
			r.SelectionBest = &best
			r.SelectionCurrent = sum.FinalScore
			r.Accepted = sum.Accepts
		}
		if scores := readEvalScores(filepath.Join(cellDir, NoSkillDir)); scores["skill"] != nil {
			r.NoSkill = scores["skill"]
		}
	}
	for _, d := range []string{cellDir, filepath.Join(cellDir, NoSkillDir)} {
		s, ok := readSpend(d, prices)
		r.Calls += s.Calls
		r.Tokens += s.Tokens
		if ok {
			if r.USD == nil {
				r.USD = new(float64)
			}
			*r.USD += s.USD
		}
	}
	return r
}

func readEvalScores(dir string) map[string]*float64 {
	out := map[string]*float64{}
	b, err := os.ReadFile(filepath.Join(dir, EvalSummaryFile))
	if err != nil {
		return out
	}
	var res []trainer.EvalResult
	if json.Unmarshal(b, &res) != nil {
		return out
	}
	for _, e := range res {
		if ts, ok := e.ByType["overall"]; ok {
			v := ts.Hard
			out[e.Name] = &v
		}
	}
	return out
}

// Spend is what a run or a campaign has spent.
type Spend struct {
	Calls  int64
	Tokens int64
	USD    float64
}

// readSpend totals a run dir's tokens.json; priced is false unless the
// table prices every model in it.
func readSpend(dir string, prices *pricing.Table) (s Spend, priced bool) {
	b, err := os.ReadFile(filepath.Join(dir, rundir.TokensFile))
	if err != nil {
		return s, false
	}
	var tf report.TokenFile
	if json.Unmarshal(b, &tf) != nil {
		return s, false
	}
	s.Calls, s.Tokens = tf.Total.Calls, tf.Total.Tokens()
	if len(tf.Rows) == 0 || prices == nil {
		return s, false
	}
	rows := make([]pricing.Row, len(tf.Rows))
	for i, r := range tf.Rows {
		rows[i] = pricing.Row{Stage: r.Stage, Role: r.Role, Model: r.Model, Calls: r.Calls,
			Input: r.Input, Output: r.Output, CacheRead: r.CacheRead, CacheWrite: r.CacheWrite}
	}
	b2 := prices.Price(rows)
	if !b2.Complete() {
		return s, false
	}
	s.USD = b2.Total
	return s, true
}
