package ui

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/pkg/pricing"
	"github.com/skillfleet/skillfleet/pkg/report"
	"github.com/skillfleet/skillfleet/pkg/usage"
)

// RunView is what the Run page shows, built from the run dir's files only
// (pkg/report's loaders and types, plus state.json, progress.json and the
// step directories). Everything in it that came from the run is data for
// the page to insert as text.
//
// It has two parts, sent to an open page separately: RunBase changes when
// a decision is recorded (once a step), RunLive whenever progress.json or
// state.json does (about once a second while a run is live).
type RunView struct {
	RunBase
	RunLive
}

// RunBase is the part of the view that changes with each decision.
type RunBase struct {
	Name      string `json:"name"`
	RunID     string `json:"run_id"`
	Benchmark string `json:"benchmark,omitempty"`
	Dir       string `json:"dir"`
	// Finished is true once summary.json exists.
	Finished bool `json:"finished"`

	Selection Series `json:"selection"`
	// Promoted is the final promotion of the best skill, when the run
	// ended by promoting its final skill over its best (summary.json).
	Promoted  *Promotion        `json:"promoted,omitempty"`
	Rollout   Series            `json:"rollout"`
	Test      map[string]TestAt `json:"test,omitempty"`
	SpendOver SpendCurve        `json:"spend_curve"`
	Steps     []StepRow         `json:"steps"`
	// Rejected is the rejected-edit buffer: the ranked edits of the steps
	// rejected in the current epoch, as the optimizer sees them.
	Rejected []RejectedStep `json:"rejected"`
	Decided  struct {
		Accepted int `json:"accepted"`
		Rejected int `json:"rejected"`
		Skipped  int `json:"skipped"`
	} `json:"decided"`
	// Stop is true when this server may write the STOP file.
	Stop bool `json:"stop"`
}

// RunLive is the part of the view that follows the run between decisions.
type RunLive struct {
	// Live is true while progress.json is fresh (its writer updated it
	// within the last minute) and the run has not finished.
	Live     bool      `json:"live"`
	Progress *Progress `json:"progress,omitempty"`
	// Phase, Epoch, LastStep and the scores are state.json's.
	Phase      string  `json:"phase,omitempty"`
	Epoch      int     `json:"epoch,omitempty"`
	LastStep   int     `json:"last_step"`
	TotalSteps int     `json:"total_steps,omitempty"`
	Current    float64 `json:"current_score"`
	Best       float64 `json:"best_score"`
	BestStep   int     `json:"best_step"`
	// ETASeconds estimates the time to the last step from the mean step
	// wall time (nil when it cannot be estimated).
	ETASeconds *float64  `json:"eta_s,omitempty"`
	Spend      SpendView `json:"spend"`
	// Failures are retries and failures by cause, per stage.
	Failures []FailureRow `json:"failures"`
	Notes    []string     `json:"notes,omitempty"`
}

// Series are curves over steps; X[i] is the step (0 = baseline) and a nil
// value is a gap.
type Series struct {
	X      []int                 `json:"x"`
	Values map[string][]*float64 `json:"values"`
	Labels map[string][]string   `json:"labels,omitempty"`
}

// Promotion is the end of a run whose final skill, measured again on the
// selection split, beat the best: the chart draws it half a step after the
// last step, where the current line rises to the new best.
type Promotion struct {
	// X is where it is drawn: the last step plus one half.
	X float64 `json:"x"`
	// Step is the step the promoted skill is recorded at (the best step).
	Step  int     `json:"step"`
	Score float64 `json:"score"`
	// From is the current score before the final measure.
	From float64 `json:"from"`
}

// TestAt is one test-split score.
type TestAt struct {
	Hard float64  `json:"hard"`
	Soft *float64 `json:"soft,omitempty"`
}

// SpendCurve is the spend over steps: X are step numbers, Tokens[stage]
// the cumulative input + output tokens at the end of each step, USD the
// cumulative dollars (nil without prices or a model for each stage).
type SpendCurve struct {
	X      []int              `json:"x"`
	Tokens map[string][]int64 `json:"tokens"`
	USD    []*float64         `json:"usd,omitempty"`
}

// SpendView is the spend so far per stage × role × model.
type SpendView struct {
	// Rows are the stage × role × model totals, from tokens.json when the
	// run has finished, else from progress.json.
	Rows []SpendRow `json:"rows"`
	// Total over Rows (or the step records without them).
	TotalTokens int64    `json:"total_tokens"`
	TotalCalls  int64    `json:"total_calls"`
	TotalUSD    *float64 `json:"total_usd,omitempty"`
	Source      string   `json:"source"`
	PricesAsOf  string   `json:"prices_as_of,omitempty"`
}

// SpendRow is one stage × role × model.
type SpendRow struct {
	Stage  string   `json:"stage"`
	Role   string   `json:"role"`
	Model  string   `json:"model"`
	Calls  int64    `json:"calls"`
	Input  int64    `json:"input_tokens"`
	Output int64    `json:"output_tokens"`
	USD    *float64 `json:"usd,omitempty"`
}

// StepRow is one step's decision and edit counts.
type StepRow struct {
	Step      int      `json:"step"`
	Epoch     int      `json:"epoch"`
	Kind      string   `json:"kind"`
	Action    string   `json:"action"`
	Verdict   string   `json:"verdict,omitempty"`
	Candidate *float64 `json:"candidate,omitempty"`
	Note      string   `json:"note,omitempty"`
	Current   float64  `json:"current"`
	Best      float64  `json:"best"`
	Merged    int      `json:"merged"`
	Ranked    int      `json:"ranked"`
	Applied   int      `json:"applied"`
	Skipped   int      `json:"skipped_edits"`
	Tokens    int64    `json:"tokens"`
	WallS     float64  `json:"wall_s"`
}

// RejectedStep is a rejected step's edits.
type RejectedStep struct {
	Step  int               `json:"step"`
	Edits []json.RawMessage `json:"edits"`
}

// FailureRow counts what went wrong in a stage.
type FailureRow struct {
	Stage        string `json:"stage"`
	Tasks        int64  `json:"tasks"`
	FailedTasks  int64  `json:"failed_tasks"`
	FailedCalls  int64  `json:"failed_calls"`
	Retries      int64  `json:"retries"`
	RateLimited  int64  `json:"rate_limited"`
	InvalidReply int64  `json:"invalid_replies"`
	// Causes are the failed call attempts by cause (tokens.json's
	// failure_causes), when the run records them.
	Causes []CauseCount `json:"causes,omitempty"`
}

// CauseCount is one cause of failed call attempts.
type CauseCount struct {
	Cause string `json:"cause"`
	N     int64  `json:"n"`
}

// stateFile is the part of state.json the page shows.
type stateFile struct {
	Phase      string  `json:"phase"`
	Epoch      int     `json:"epoch"`
	Step       int     `json:"last_completed_step"`
	TotalSteps int     `json:"total_steps"`
	Current    float64 `json:"current_score"`
	Best       float64 `json:"best_score"`
	BestStep   int     `json:"best_step"`
	Done       bool    `json:"done"`
}

// liveWindow is how recent progress.json must be for a run to count as live.
const liveWindow = time.Minute

// LoadRun builds the view of a run dir. prices may be nil (no dollars).
func LoadRun(dir string, prices *pricing.Table) (*RunView, error) {
	v, _, _, err := newRunLoader(dir, prices).load()
	return v, err
}

// runLoader builds a run's views and keeps what it read: while a run is
// live it reads only the new lines of events.jsonl, the new steps' files
// and the small state.json and progress.json, so following a run costs
// little more than the run writes. Once summary.json or tokens.json exist
// (the run has finished) the run dir is read whole with report.Load.
type runLoader struct {
	dir    string
	prices *pricing.Table

	// incremental reading of a run in progress
	runID   string
	evFP    string
	evOff   int64
	events  []report.Event
	steps   map[int]report.StepRecord
	ranked  map[int][]json.RawMessage
	finalFP string

	rep      *report.Report
	base     *RunBase
	modelKey string

	// state.json and progress.json as last read, with their fingerprints
	stateFP, progFP string
	state           *stateFile
	prog            *Progress

	// last is the view last built, returned again while no file changed.
	last *RunView
	// now is the clock liveness is judged by (tests set it).
	now func() time.Time
}

func newRunLoader(dir string, prices *pricing.Table) *runLoader {
	return &runLoader{dir: dir, prices: prices, now: time.Now}
}

// finalFiles, when present, hold the finished run's totals.
var finalFiles = []string{"summary.json", "tokens.json", "events.jsonl"}

// report brings l.rep up to date; changed reports whether it changed.
func (l *runLoader) report() (changed bool, err error) {
	ffp := fingerprint(l.dir, finalFiles[:2]...)
	if ffp != "-;-;" {
		// Finished (or finishing): read it whole, once per change.
		if fp := fingerprint(l.dir, finalFiles...); fp != l.finalFP || l.rep == nil {
			rep, err := report.Load(l.dir, l.prices)
			if err != nil {
				return false, err
			}
			l.rep, l.finalFP = rep, fp
			return true, nil
		}
		return false, nil
	}
	l.finalFP = ""
	fp := fingerprint(l.dir, "events.jsonl")
	if l.rep != nil && fp == l.evFP {
		return false, nil
	}
	if l.runID == "" {
		if b, err := os.ReadFile(filepath.Join(l.dir, "run_id")); err == nil {
			l.runID = strings.TrimSpace(string(b))
		}
	}
	if err := l.readEvents(); err != nil {
		return false, err
	}
	l.evFP = fp
	l.rep = &report.Report{RunID: l.runID, Events: l.events, Steps: l.steps}
	return true, nil
}

// readEvents reads the lines added to events.jsonl since the last call
// (all of it if the file shrank: a resumed run cuts a torn last line) and
// the new steps' records.
func (l *runLoader) readEvents() error {
	path := filepath.Join(l.dir, "events.jsonl")
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("ui: %w (is this a run directory?)", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("ui: %w", err)
	}
	if fi.Size() < l.evOff || l.steps == nil {
		l.evOff, l.events = 0, nil
		l.steps, l.ranked = map[int]report.StepRecord{}, map[int][]json.RawMessage{}
	}
	if _, err := f.Seek(l.evOff, 0); err != nil {
		return fmt.Errorf("ui: %s: %w", path, err)
	}
	data, err := io.ReadAll(f)
	if err != nil {
		return fmt.Errorf("ui: %s: %w", path, err)
	}
	for {
		nl := bytes.IndexByte(data, '\n')
		if nl < 0 {
			break // a line still being written
		}
		line := bytes.TrimSpace(data[:nl])
		data = data[nl+1:]
		l.evOff += int64(nl + 1)
		if len(line) == 0 {
			continue
		}
		var ev report.Event
		if err := json.Unmarshal(line, &ev); err != nil {
			return fmt.Errorf("ui: %s: %w", path, err)
		}
		l.events = append(l.events, ev)
		if ev.Type != "step" {
			continue
		}
		// A step's record is written before its event.
		var rec report.StepRecord
		if err := readJSON(filepath.Join(l.dir, stepDir(ev.Step), "record.json"), &rec); err == nil {
			l.steps[ev.Step] = rec
		}
	}
	return nil
}

// load returns the view, whether its base changed since the last call
// and whether anything did (when nothing did, the view is the last one).
// Each of the run's files is stat'ed once per call and read only when it
// changed.
func (l *runLoader) load() (v *RunView, baseChanged, anyChanged bool, err error) {
	changed, err := l.report()
	if err != nil {
		return nil, false, false, err
	}
	stateFP, progFP := fingerprint(l.dir, "state.json"), fingerprint(l.dir, ProgressFileName)
	// A live run whose progress.json has not been written for liveWindow
	// is no longer live: that too is a change.
	expired := l.last != nil && l.last.Live && l.prog != nil && l.now().Sub(l.prog.Updated) >= liveWindow
	if !changed && !expired && l.last != nil && stateFP == l.stateFP && progFP == l.progFP {
		return l.last, false, false, nil
	}
	rep := l.rep
	var live RunLive
	if fp := stateFP; fp != l.stateFP {
		var st stateFile
		switch err := readJSON(filepath.Join(l.dir, "state.json"), &st); {
		case err == nil:
			l.state = &st
		case errors.Is(err, fs.ErrNotExist):
			l.state = nil
		default:
			return nil, false, false, err
		}
		l.stateFP = fp
	}
	if fp := progFP; fp != l.progFP {
		p, ok := ReadProgress(l.dir)
		switch {
		case ok:
			l.prog, l.progFP = &p, fp
		case fp == "-;":
			l.prog, l.progFP = nil, fp
		default:
			// Caught mid-write (or damaged): keep the last good record
			// and read it again on the next poll.
		}
	}
	if l.prog != nil {
		p := *l.prog
		live.Progress = &p
	}
	tf, source := tokenFile(rep, live.Progress)
	models := stageModels(tf)
	if key := modelKey(models); changed || l.base == nil || key != l.modelKey {
		b := &RunBase{Name: filepath.Base(l.dir), RunID: rep.RunID, Benchmark: rep.Benchmark, Dir: l.dir, Finished: rep.Summary != nil,
			Steps: []StepRow{}, Rejected: []RejectedStep{}}
		a, r, s := rep.Decisions()
		b.Decided.Accepted, b.Decided.Rejected, b.Decided.Skipped = a, r, s
		b.buildCurves(rep)
		b.buildRejected(l.dir, rep, l.ranked)
		b.SpendOver = spendCurve(rep, models, l.prices)
		l.base, l.modelKey, changed = b, key, true
	}
	v = &RunView{RunBase: *l.base, RunLive: live}
	if st := l.state; st != nil {
		v.Phase, v.Epoch, v.LastStep, v.TotalSteps = st.Phase, st.Epoch, st.Step, st.TotalSteps
		v.Current, v.Best, v.BestStep = st.Current, st.Best, st.BestStep
	} else if sel := v.Selection; len(sel.X) > 0 {
		// Before state.json exists, the last decision tells the scores.
		last := len(sel.X) - 1
		v.LastStep, v.Current, v.Best = sel.X[last], *sel.Values["current"][last], *sel.Values["best"][last]
	}
	if p := v.Progress; p != nil {
		v.Live = !v.Finished && l.now().Sub(p.Updated) < liveWindow
		if v.TotalSteps == 0 {
			v.TotalSteps = p.Steps
		}
	}
	if rep.Summary != nil {
		v.TotalSteps = rep.Summary.TotalSteps
		v.Best, v.BestStep = rep.Summary.BestScore, rep.Summary.BestStep
	}
	for _, n := range rep.Notes {
		// While the run is live these say only that it has not finished.
		if v.Live && (strings.HasPrefix(n, "summary.json is missing") || strings.HasPrefix(n, "tokens.json is missing")) {
			continue
		}
		v.Notes = append(v.Notes, n)
	}
	if !v.Finished && !v.Live {
		v.Notes = append(v.Notes, "the run is not running (no progress.json written in the last minute) and has not finished: it was stopped, or runs without --ui")
	}
	v.buildSpend(rep, tf, source, l.prices)
	if v.Progress != nil {
		// Its spend is digested into Spend; the page does not need it twice.
		p := *v.Progress
		p.Spend = nil
		v.Progress = &p
	}
	v.buildETA(rep)
	l.last = v
	return v, changed, true, nil
}

func stepDir(step int) string { return fmt.Sprintf("steps/step_%04d", step) }

func fptr(f float64) *float64 { return &f }

func (v *RunBase) buildCurves(rep *report.Report) {
	v.Selection = Series{Values: map[string][]*float64{"current": {}, "best": {}, "candidate": {}}, Labels: map[string][]string{"action": {}}}
	v.Rollout = Series{Values: map[string][]*float64{"hard": {}, "soft": {}}}
	for _, row := range rep.Rows() {
		switch row.Kind {
		case "baseline", "step":
		case "final":
			v.Promoted = &Promotion{X: float64(row.Step) + 0.5, Step: row.Step, Score: row.Best, From: 0}
			if n := len(v.Selection.X); n > 0 {
				v.Promoted.From = *v.Selection.Values["current"][n-1]
			}
			if s := rep.Summary; s != nil {
				v.Promoted.Step = s.BestStep
			}
			continue
		default:
			continue
		}
		v.Selection.X = append(v.Selection.X, row.Step)
		v.Selection.Values["current"] = append(v.Selection.Values["current"], fptr(row.Current))
		v.Selection.Values["best"] = append(v.Selection.Values["best"], fptr(row.Best))
		v.Selection.Values["candidate"] = append(v.Selection.Values["candidate"], row.Candidate)
		v.Selection.Labels["action"] = append(v.Selection.Labels["action"], row.Action)
		if row.Kind != "step" {
			continue
		}
		sr := StepRow{Step: row.Step, Epoch: row.Epoch, Kind: row.Kind, Action: row.Action, Verdict: row.Verdict,
			Candidate: row.Candidate, Note: row.CandidateNote, Current: row.Current, Best: row.Best, Tokens: row.Tokens}
		if rec, ok := rep.Steps[row.Step]; ok {
			v.Rollout.X = append(v.Rollout.X, row.Step)
			v.Rollout.Values["hard"] = append(v.Rollout.Values["hard"], fptr(rec.RolloutHard))
			v.Rollout.Values["soft"] = append(v.Rollout.Values["soft"], fptr(rec.RolloutSoft))
			sr.WallS = rec.WallTime
			sr.Merged, sr.Ranked = rec.NMerged, rec.NRanked
			for k, n := range rec.EditApply {
				if strings.HasPrefix(k, "applied") {
					sr.Applied += n
				} else {
					sr.Skipped += n
				}
			}
		}
		v.Steps = append(v.Steps, sr)
	}
	if s := rep.Summary; s != nil && len(s.TestHard) > 0 {
		v.Test = map[string]TestAt{}
		for k, h := range s.TestHard {
			t := TestAt{Hard: h}
			if soft, ok := s.TestSoft[k]; ok {
				t.Soft = fptr(soft)
			}
			v.Test[k] = t
		}
	}
}

// tokenFile is the run's spend per stage × role × model: tokens.json once
// written, else progress.json's (nil when neither has it).
func tokenFile(rep *report.Report, p *Progress) (*report.TokenFile, string) {
	if rep.Tokens != nil {
		return rep.Tokens, "tokens.json"
	}
	if p != nil && len(p.Spend) > 0 {
		var rows []ProgressRow
		if json.Unmarshal(p.Spend, &rows) == nil {
			t := &report.TokenFile{}
			for _, r := range rows {
				t.Rows = append(t.Rows, r.tokenRow())
			}
			return t, "progress.json"
		}
	}
	return nil, "step records"
}

// stageModels names the model that spent most in each stage.
func stageModels(tf *report.TokenFile) map[string]string {
	out := map[string]string{}
	if tf == nil {
		return out
	}
	most := map[string]int64{}
	for _, r := range tf.Rows {
		if n, ok := most[r.Stage]; !ok || r.Tokens() > n {
			most[r.Stage], out[r.Stage] = r.Tokens(), r.Model
		}
	}
	return out
}

// modelKey is a stable text of stageModels, to notice a change.
func modelKey(m map[string]string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k + "=" + m[k] + ";")
	}
	return b.String()
}

// spendCurve spreads the step records' per-stage tokens over steps and
// prices each stage's tokens at the price of its model.
func spendCurve(rep *report.Report, models map[string]string, prices *pricing.Table) SpendCurve {
	sc := SpendCurve{Tokens: map[string][]int64{}}
	var steps []int
	for s := range rep.Steps {
		steps = append(steps, s)
	}
	sort.Ints(steps)
	cum := map[string]int64{}
	var usd float64
	usdOK := prices != nil && len(models) > 0
	for _, s := range steps {
		rec := rep.Steps[s]
		sc.X = append(sc.X, s)
		for stage, t := range rec.Tokens {
			cum[stage] += t.Tokens()
			if _, ok := sc.Tokens[stage]; !ok {
				sc.Tokens[stage] = make([]int64, len(sc.X)-1)
			}
			if usdOK && t.Tokens() > 0 {
				m, ok := models[stage]
				if !ok {
					usdOK = false
				} else if c, err := prices.CostTokens(m, pricing.Row{Input: t.Input, Output: t.Output, CacheRead: t.CacheRead, CacheWrite: t.CacheWrite}.Tokens()); err == nil {
					usd += c
				} else {
					usdOK = false
				}
			}
		}
		for stage := range sc.Tokens {
			sc.Tokens[stage] = append(sc.Tokens[stage], cum[stage])
		}
		sc.USD = append(sc.USD, fptr(usd))
	}
	if !usdOK {
		sc.USD = nil
	}
	return sc
}

// buildSpend fills the spend per stage × role × model and the failures by
// stage, from tf (or, without it, the step records).
func (v *RunView) buildSpend(rep *report.Report, tf *report.TokenFile, source string, prices *pricing.Table) {
	sp := SpendView{Rows: []SpendRow{}, Source: source}
	fails := map[string]*usage.Totals{}
	add := func(stage string, t usage.Totals) {
		f := fails[stage]
		if f == nil {
			f = &usage.Totals{}
			fails[stage] = f
		}
		f.Add(t)
	}
	if tf != nil {
		rows := make([]pricing.Row, 0, len(tf.Rows))
		for _, r := range tf.Rows {
			rows = append(rows, pricing.Row{Stage: r.Stage, Role: r.Role, Model: r.Model, Calls: r.Calls,
				Input: r.Input, Output: r.Output, CacheRead: r.CacheRead, CacheWrite: r.CacheWrite})
		}
		var b *pricing.Breakdown
		if prices != nil {
			bb := prices.Price(rows)
			b = &bb
			sp.PricesAsOf = bb.AsOf
		}
		var total float64
		priced := b != nil
		for i, r := range tf.Rows {
			row := SpendRow{Stage: r.Stage, Role: r.Role, Model: r.Model, Calls: r.Calls, Input: r.Input, Output: r.Output}
			if b != nil && i < len(b.Lines) && b.Lines[i].Priced {
				row.USD = fptr(b.Lines[i].USD)
				total += b.Lines[i].USD
			} else if b != nil {
				priced = false
			}
			sp.Rows = append(sp.Rows, row)
			sp.TotalTokens += r.Tokens()
			sp.TotalCalls += r.Calls
			add(r.Stage, r.Totals)
		}
		if priced {
			sp.TotalUSD = fptr(total)
		}
		sort.Slice(sp.Rows, func(i, j int) bool {
			a, b := sp.Rows[i], sp.Rows[j]
			if a.Stage != b.Stage {
				return a.Stage < b.Stage
			}
			if a.Role != b.Role {
				return a.Role < b.Role
			}
			return a.Model < b.Model
		})
	} else {
		for _, rec := range rep.Steps {
			for stage, t := range rec.Tokens {
				sp.TotalTokens += t.Tokens()
				sp.TotalCalls += t.Calls
				add(stage, t)
			}
		}
	}
	v.Failures = []FailureRow{}
	for stage, f := range fails {
		row := FailureRow{Stage: stage, Tasks: f.Tasks, FailedTasks: f.FailedTasks, FailedCalls: f.FailedCalls,
			Retries: f.Retries, RateLimited: f.RateLimited, InvalidReply: f.InvalidReply}
		for _, c := range f.Causes.Named() {
			row.Causes = append(row.Causes, CauseCount{Cause: c.Name, N: c.Count})
		}
		v.Failures = append(v.Failures, row)
	}
	sort.Slice(v.Failures, func(i, j int) bool { return v.Failures[i].Stage < v.Failures[j].Stage })
	v.Spend = sp
}

// buildRejected lists the ranked edits of the rejected steps in the epoch
// of the latest decision (the coordinator's step buffer keeps the same
// within an epoch).
func (v *RunBase) buildRejected(dir string, rep *report.Report, cache map[int][]json.RawMessage) {
	epoch := 0
	for _, ev := range rep.Events {
		if ev.Type == "step" && ev.Epoch > epoch {
			epoch = ev.Epoch
		}
	}
	for _, ev := range rep.Events {
		if ev.Type != "step" || ev.Epoch != epoch || !strings.Contains(ev.Action, "reject") {
			continue
		}
		items, ok := cache[ev.Step]
		if !ok {
			var err error
			if items, _, err = readItems(filepath.Join(dir, stepDir(ev.Step), "ranked_edits.json")); err != nil {
				continue
			}
			if cache != nil {
				cache[ev.Step] = items
			}
		}
		v.Rejected = append(v.Rejected, RejectedStep{Step: ev.Step, Edits: items})
	}
}

// buildETA estimates the time left from the mean wall time of the steps
// recorded so far.
func (v *RunView) buildETA(rep *report.Report) {
	if v.Finished || v.TotalSteps == 0 || len(rep.Steps) == 0 {
		return
	}
	var wall float64
	for _, rec := range rep.Steps {
		wall += rec.WallTime
	}
	mean := wall / float64(len(rep.Steps))
	left := float64(v.TotalSteps - v.LastStep)
	if left < 0 {
		left = 0
	}
	v.ETASeconds = fptr(mean * left)
}

// readItems reads a step file holding {"<payload key>": [items]}: the
// items and the key ("edits", "revise_suggestions", "skill_candidates").
func readItems(path string) ([]json.RawMessage, string, error) {
	var m map[string]json.RawMessage
	if err := readJSON(path, &m); err != nil {
		return nil, "", err
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var items []json.RawMessage
		if json.Unmarshal(m[k], &items) == nil {
			return items, k, nil
		}
	}
	return nil, "", fmt.Errorf("%s: no list of items", path)
}

func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
