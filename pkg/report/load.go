// Package report builds the report of a run directory: a terminal summary
// (scores, decisions, calls, tokens and dollars per stage) and a
// self-contained HTML page with score curves and spend over steps.
//
// It reads only files (events.jsonl, summary.json, tokens.json,
// steps/step_NNNN/record.json, run_id), so it works on a finished run, a
// stopped one, and one still in progress. File names and the records
// (events, step records, summary) are pkg/rundir's and the counters
// pkg/usage's, all shared with the coordinator, which writes them. A field
// an older run dir lacks reads as its zero value.
package report

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/pricing"
	"github.com/skillfleet/skillfleet/pkg/rundir"
	"github.com/skillfleet/skillfleet/pkg/usage"
)

// Event is one line of events.jsonl (pkg/rundir's record, the one the
// coordinator writes).
type Event = rundir.Event

// Totals are the counters of tokens.json and of a step record's tokens.
type Totals = usage.Totals

// TokenRow is one row of tokens.json: a stage × role × model.
type TokenRow struct {
	Stage string `json:"stage"`
	Role  string `json:"role"`
	Model string `json:"model"`
	Totals
}

// TokenFile is tokens.json.
type TokenFile struct {
	Rows    []TokenRow        `json:"rows"`
	ByStage map[string]Totals `json:"by_stage"`
	Total   Totals            `json:"total"`
}

// StepRecord is steps/step_NNNN/record.json (pkg/rundir's record).
type StepRecord = rundir.StepRecord

// Summary is summary.json (pkg/rundir's record).
type Summary = rundir.Summary

// Step actions, as the coordinator writes them.
const (
	actAcceptNewBest = "accept_new_best"
	actAccept        = "accept"
	actForceAccept   = "force_accept"
	actReject        = "reject"
)

// Verdict groups a step action: "accepted", "rejected" or "skipped".
func Verdict(action string) string {
	switch action {
	case actAcceptNewBest, actAccept, actForceAccept:
		return "accepted"
	case actReject:
		return "rejected"
	default:
		return "skipped"
	}
}

// Report is everything read from one run dir.
type Report struct {
	RunID     string
	Benchmark string
	Events    []Event
	// Steps are the step records, by step number.
	Steps map[int]StepRecord
	// Summary is nil until the run has finished.
	Summary *Summary
	// Tokens is nil until tokens.json is written.
	Tokens *TokenFile
	// Cost prices Tokens; nil when Tokens is or no table was given.
	Cost *pricing.Breakdown
	// Notes are things the reader should know (missing files, unpriced models).
	Notes []string
	// Packages are the package diffs of a skill-package run's steps
	// (packagediff.go); nil for a single-file run.
	Packages []PackageStep
	// Eval is a finished evaluation's scores (eval_summary.json), one per
	// skill scored; nil for a training run.
	Eval []EvalResult
}

// EvalResult is one skill's scores in eval_summary.json, which `skillfleet
// eval` writes when it finishes.
type EvalResult struct {
	Name      string                      `json:"name"`
	SkillHash string                      `json:"skill_hash"`
	Split     string                      `json:"split"`
	ByType    map[string]rundir.TypeScore `json:"by_task_type"`
}

// EvalSummaryFile is the scores a finished `skillfleet eval` writes in its
// run dir.
const EvalSummaryFile = "eval_summary.json"

// Load reads the run dir. prices may be nil (no dollars).
func Load(dir string, prices *pricing.Table) (*Report, error) {
	if err := rundir.CheckReadable(dir); err != nil {
		return nil, err
	}
	r := &Report{Steps: map[int]StepRecord{}}
	evs, err := readEvents(filepath.Join(dir, rundir.EventsFile))
	if err != nil {
		return nil, err
	}
	r.Events = evs

	var sum Summary
	switch err := readJSON(filepath.Join(dir, rundir.SummaryFile), &sum); {
	case err == nil:
		r.Summary = &sum
		r.RunID, r.Benchmark = sum.RunID, sum.Bench
	case errors.Is(err, fs.ErrNotExist):
		// An evaluation's dir has eval_summary.json instead, once it has
		// finished.
		switch err := readJSON(filepath.Join(dir, EvalSummaryFile), &r.Eval); {
		case err == nil:
		case errors.Is(err, fs.ErrNotExist):
			r.Notes = append(r.Notes, "summary.json is missing: the run has not finished (scores so far are shown)")
		default:
			return nil, err
		}
	default:
		return nil, err
	}
	if r.RunID == "" {
		if b, err := os.ReadFile(filepath.Join(dir, rundir.RunIDFile)); err == nil {
			r.RunID = strings.TrimSpace(string(b))
		}
	}

	var tok TokenFile
	switch err := readJSON(filepath.Join(dir, rundir.TokensFile), &tok); {
	case err == nil:
		r.Tokens = &tok
	case errors.Is(err, fs.ErrNotExist):
		r.Notes = append(r.Notes, "tokens.json is missing: spend comes from the step records, without models or dollars")
	default:
		return nil, err
	}

	recs, err := filepath.Glob(filepath.Join(dir, rundir.StepRecordGlob))
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	for _, p := range recs {
		var rec StepRecord
		if err := readJSON(p, &rec); err != nil {
			return nil, err
		}
		r.Steps[rec.Step] = rec
	}
	r.loadPackageDiffs(dir)

	if r.Tokens != nil && prices != nil {
		rows := make([]pricing.Row, len(r.Tokens.Rows))
		for i, tr := range r.Tokens.Rows {
			rows[i] = pricing.Row{Stage: tr.Stage, Role: tr.Role, Model: tr.Model, Calls: tr.Calls,
				Input: tr.Input, Output: tr.Output, CacheRead: tr.CacheRead, CacheWrite: tr.CacheWrite}
		}
		b := prices.Price(rows)
		r.Cost = &b
		for _, u := range b.Unpriced {
			r.Notes = append(r.Notes, fmt.Sprintf("no price for model %q (%d calls, %s tokens): add it to the price table; dollar totals leave it out", u.Model, u.Calls, count(u.Tokens)))
		}
	}
	return r, nil
}

func readEvents(path string) ([]Event, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("report: %w (is this a run directory?)", err)
	}
	var out []Event
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var ev Event
		if err := json.Unmarshal(line, &ev); err != nil {
			if !sc.Scan() {
				break // a torn last line of a run still being written
			}
			return nil, fmt.Errorf("report: %s:%d: %w", path, n, err)
		}
		out = append(out, ev)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("report: %s: %w", path, err)
	}
	return out, nil
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("report: %s: %w", path, err)
	}
	return nil
}

// StepRow is one decision, as the report lists it: a step, the baseline
// (Step 0), a slow update, or the final promotion of the best skill (Kind
// "final", after the last step).
type StepRow struct {
	Kind      string // "baseline", "step", "slow_update"
	Step      int
	Epoch     int
	Action    string
	Verdict   string // accepted, rejected, skipped ("" for others)
	Rollout   *float64
	Candidate *float64
	// CandidateNote explains a missing candidate score: "stopped early",
	// "unchanged", "cached".
	CandidateNote string
	Current       float64
	Best          float64
	Tokens        int64 // input + output during the step (-1: unknown)
}

// Rows lists the decisions in order.
func (r *Report) Rows() []StepRow {
	var out []StepRow
	for _, ev := range r.Events {
		switch ev.Type {
		case "baseline":
			out = append(out, StepRow{Kind: "baseline", Action: "baseline", Current: ev.CurrentScore, Best: ev.BestScore, Tokens: r.stageTokens("baseline")})
		case "step":
			row := StepRow{Kind: "step", Step: ev.Step, Epoch: ev.Epoch, Action: ev.Action, Verdict: Verdict(ev.Action),
				Candidate: ev.CandidateScore, Current: ev.CurrentScore, Best: ev.BestScore, Tokens: -1}
			switch {
			case ev.CandidateScore != nil:
			case ev.EarlyStopped:
				row.CandidateNote = "stopped early"
			case ev.Unchanged:
				row.CandidateNote = "unchanged"
			}
			if rec, ok := r.Steps[ev.Step]; ok {
				v := rec.RolloutHard
				row.Rollout = &v
				var n int64
				for _, t := range rec.Tokens {
					n += t.Tokens()
				}
				row.Tokens = n
			}
			out = append(out, row)
		case "slow_update":
			out = append(out, StepRow{Kind: "slow_update", Step: ev.Step, Epoch: ev.Epoch, Action: ev.Action, Current: ev.CurrentScore, Best: ev.BestScore, Tokens: -1})
		}
	}
	// At the end of a run whose current skill is not its best, the best
	// is promoted: the skill the run ends with jumps to the best's score.
	if s := r.Summary; s != nil && s.Promoted && len(out) > 0 {
		last := out[len(out)-1]
		out = append(out, StepRow{Kind: "final", Step: last.Step, Epoch: last.Epoch, Action: ActionPromote,
			CandidateNote: fmt.Sprintf("from %.4f", last.Current), Current: s.BestScore, Best: s.BestScore, Tokens: -1})
	}
	return out
}

// ActionPromote is the action of the final row of a run whose best skill
// was promoted over its current one at the end.
const ActionPromote = "final: best skill promoted"

// stageTokens is a stage's tokens from tokens.json (-1 without it).
func (r *Report) stageTokens(stage string) int64 {
	if r.Tokens == nil {
		return -1
	}
	t := r.Tokens.ByStage[stage]
	return t.Tokens()
}

// Decisions counts accepted, rejected and skipped steps.
func (r *Report) Decisions() (accepted, rejected, skipped int) {
	for _, ev := range r.Events {
		if ev.Type != "step" {
			continue
		}
		switch Verdict(ev.Action) {
		case "accepted":
			accepted++
		case "rejected":
			rejected++
		default:
			skipped++
		}
	}
	return
}

// StageSpend is one stage's totals and cost.
type StageSpend struct {
	Stage string
	Totals
	USD float64
	// Priced is false when some of the stage's tokens have no price.
	Priced bool
}

// Spend lists totals by stage (sorted by stage name) and their sum. Without
// tokens.json it sums the step records and nothing is priced.
func (r *Report) Spend() (stages []StageSpend, total StageSpend) {
	by := map[string]Totals{}
	if r.Tokens != nil {
		for k, v := range r.Tokens.ByStage {
			by[k] = v
		}
	} else {
		for _, rec := range r.Steps {
			for k, v := range rec.Tokens {
				t := by[k]
				t.Add(v)
				by[k] = t
			}
		}
	}
	unpricedStage := map[string]bool{}
	if r.Cost != nil {
		for _, ln := range r.Cost.Lines {
			if !ln.Priced {
				unpricedStage[ln.Stage] = true
			}
		}
	}
	total = StageSpend{Stage: "total", Priced: r.Cost != nil && r.Cost.Complete()}
	for k, v := range by {
		s := StageSpend{Stage: k, Totals: v, Priced: r.Cost != nil && !unpricedStage[k]}
		if r.Cost != nil {
			s.USD = r.Cost.ByStage[k]
		}
		stages = append(stages, s)
		total.Add(v)
		total.USD += s.USD
	}
	sort.Slice(stages, func(i, j int) bool { return stages[i].Stage < stages[j].Stage })
	return stages, total
}

// count formats n with thousands separators.
func count(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	if neg {
		s = s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
