package sleep

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"

	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/nightly"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// ErrBudget is returned when a night stops at its token or dollar budget.
var ErrBudget = errors.New("night budget reached")

// Actions a night ends with.
const (
	ActionAccept           = "accept"
	ActionReject           = "reject"
	ActionRejectUnverified = "reject_unverified"
	ActionNoFailures       = "no_failures"
	ActionNoEdits          = "no_edits"
	ActionNoTasks          = "no_tasks"
	ActionStoppedBudget    = "stopped_budget"
)

// FreshSample is the first sample index of the final check: its replays
// are new attempts (new task ids, new seeds), never a result measured
// before in the night (SkillOpt's B22: its "fresh" final replay is a cache
// hit of the same prompt).
const FreshSample = 1000

// Settings of one consolidation.
type Settings struct {
	// EditBudget caps the edits one reflection proposes (default 4).
	EditBudget int
	// GateMetric is hard, soft or mixed (default mixed, weighted by
	// MixedWeight, default 0.5, on hard).
	GateMetric  string
	MixedWeight float64
	// NoRegression also refuses an edit under which any val task scores
	// lower than before it.
	NoRegression bool
	EvolveSkill  bool
	EvolveMemory bool
	// MaxTokens and MaxUSD bound the night's spend (0 = no bound). Spent
	// counts what was already spent tonight (mining). Cost prices a usage
	// of a role's model ("target" or "optimizer") in dollars.
	MaxTokens int64
	MaxUSD    float64
	Spent     Spend
	Cost      func(role string, u llm.Usage) float64
	// Preferences are the user's house rules, shown to the reflector.
	Preferences string
}

// Spend is what a night has spent.
type Spend struct {
	Tokens int64   `json:"tokens"`
	USD    float64 `json:"usd"`
	Calls  int     `json:"calls"`
}

// Deps are a consolidation's collaborators.
type Deps struct {
	Replayer      Replayer
	Optimizer     llm.Model
	OptimizerName string
	Logger        *slog.Logger
}

// Input is the night's tasks (with splits) and live documents.
type Input struct {
	Tasks  []nightly.Task
	Skill  string
	Memory string
	// Package says the skill is a skill package carried as its bundle
	// (a plain SKILL.md text for a package of one file): the replays give
	// the target the package, and edits may also create or append
	// reference files within PackageLimits (zero fields: skillpkg's
	// defaults).
	Package       bool
	PackageLimits skillpkg.Limits
}

// Score is a gate measurement.
type Score struct {
	Value float64 `json:"score"`
	Hard  float64 `json:"hard"`
	Soft  float64 `json:"soft"`
	N     int     `json:"n"`
	Infra int     `json:"infra_failures"`
}

// Trial is one edit's gate trial.
type Trial struct {
	Document string       `json:"document"`
	Edit     nightly.Edit `json:"edit"`
	Before   float64      `json:"before"`
	After    float64      `json:"after"`
	Accepted bool         `json:"accepted"`
	Why      string       `json:"why"`
}

// Outcome is what a night decided.
type Outcome struct {
	Action     string              `json:"action"`
	Reason     string              `json:"reason"`
	Accepted   bool                `json:"accepted"`
	Leaked     bool                `json:"leaked,omitempty"`
	Train, Val int                 `json:"-"`
	Baseline   Score               `json:"baseline"`
	Final      *Score              `json:"final_fresh,omitempty"`
	Test       *Score              `json:"test,omitempty"`
	Trials     []Trial             `json:"trials"`
	Unmatched  []nightly.Unmatched `json:"unmatched,omitempty"`
	// Refused are the edits refused before any trial, with why;
	// RefusedByReason counts them.
	Refused         []nightly.Refusal `json:"refused,omitempty"`
	RefusedByReason map[string]int    `json:"refused_by_reason,omitempty"`
	// Package says the skill was a package; FilesChanged lists the
	// package files an accepted night changes.
	Package        bool     `json:"package,omitempty"`
	FilesChanged   []string `json:"files_changed,omitempty"`
	ProposedSkill  string   `json:"-"`
	ProposedMemory string   `json:"-"`
	SkillChanged   bool     `json:"skill_changed"`
	MemoryChanged  bool     `json:"memory_changed"`
	Spend          Spend    `json:"spend"`
	Replays        []Replay `json:"-"`
}

type night struct {
	s   Settings
	d   Deps
	out *Outcome

	mu       sync.Mutex
	perTask  float64 // tokens per replay seen so far
	replayed int
}

func (n *night) charge(role string, u llm.Usage, calls int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.out.Spend.Tokens += u.InputTokens + u.OutputTokens
	n.out.Spend.Calls += calls
	if n.s.Cost != nil {
		n.out.Spend.USD += n.s.Cost(role, u)
	}
}

// afford refuses work the budget cannot pay for: est is its expected
// tokens (0 = unknown: only the spend so far is checked).
func (n *night) afford(stage, role string, est int64) error {
	sp := n.out.Spend
	if n.s.MaxTokens > 0 && sp.Tokens+est > n.s.MaxTokens {
		return fmt.Errorf("%w: max_tokens_per_night %d: %d tokens spent, the %s stage needs about %d more", ErrBudget, n.s.MaxTokens, sp.Tokens, stage, est)
	}
	if n.s.MaxUSD > 0 {
		next := 0.0
		if n.s.Cost != nil {
			next = n.s.Cost(role, llm.Usage{InputTokens: est})
		}
		if sp.USD+next > n.s.MaxUSD || sp.USD >= n.s.MaxUSD {
			return fmt.Errorf("%w: max_usd_per_night $%.4f: $%.4f spent, the %s stage needs about $%.4f more", ErrBudget, n.s.MaxUSD, sp.USD, stage, next)
		}
	}
	return nil
}

func (n *night) metric(hard, soft float64) float64 {
	switch n.s.GateMetric {
	case "hard":
		return hard
	case "soft":
		return soft
	}
	return n.s.MixedWeight*hard + (1-n.s.MixedWeight)*soft
}

// replay runs one wave after checking the budget can pay for it.
func (n *night) replay(ctx context.Context, stage, doc string, tasks []nightly.Task, sample int) ([]Replay, error) {
	if len(tasks) == 0 {
		return nil, nil
	}
	skill, memory := nightly.SplitDocs(doc)
	var est int64
	for _, t := range tasks {
		est += nightly.EstimateReplay(t, skill, memory)
	}
	est = max(est, int64(n.perTask*float64(len(tasks))))
	if err := n.afford(stage, "target", est); err != nil {
		return nil, err
	}
	rs, err := n.d.Replayer.Replay(ctx, ReplayRequest{Stage: stage, Doc: doc, Tasks: tasks, Sample: sample})
	if err != nil {
		return nil, err
	}
	var tok int64
	for _, r := range rs {
		n.charge("target", r.Usage, r.Calls)
		tok += r.Usage.InputTokens + r.Usage.OutputTokens
	}
	n.mu.Lock()
	n.perTask = (n.perTask*float64(n.replayed) + float64(tok)) / float64(n.replayed+len(rs))
	n.replayed += len(rs)
	n.mu.Unlock()
	n.out.Replays = append(n.out.Replays, rs...)
	return rs, nil
}

func (n *night) score(rs []Replay) (Score, map[string]float64) {
	var s Score
	per := map[string]float64{}
	for _, r := range rs {
		if r.Err != "" {
			s.Infra++
			continue
		}
		s.N++
		s.Hard += r.Hard
		s.Soft += r.Soft
		per[r.TaskID] = n.metric(r.Hard, r.Soft)
	}
	if s.N > 0 {
		s.Hard /= float64(s.N)
		s.Soft /= float64(s.N)
	}
	s.Value = n.metric(s.Hard, s.Soft)
	return s, per
}

// Consolidate runs a night's one gated epoch. With a budget error it
// returns the outcome so far (action stopped_budget, nothing accepted)
// together with an error wrapping [ErrBudget].
func Consolidate(ctx context.Context, s Settings, d Deps, in Input) (*Outcome, error) {
	if s.EditBudget <= 0 {
		s.EditBudget = 4
	}
	if s.MixedWeight == 0 {
		s.MixedWeight = 0.5
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	n := &night{s: s, d: d, out: &Outcome{Spend: s.Spent, ProposedSkill: in.Skill, ProposedMemory: in.Memory, Package: in.Package}}
	out, err := n.run(ctx, in)
	if errors.Is(err, ErrBudget) {
		out.Action, out.Reason, out.Accepted = ActionStoppedBudget, err.Error(), false
		out.ProposedSkill, out.ProposedMemory, out.SkillChanged, out.MemoryChanged = in.Skill, in.Memory, false, false
	}
	return out, err
}

func (n *night) run(ctx context.Context, in Input) (*Outcome, error) {
	out := n.out
	var train, val, test []nightly.Task
	for _, t := range in.Tasks {
		switch t.Split {
		case nightly.SplitVal:
			val = append(val, t)
		case nightly.SplitTest:
			test = append(test, t)
		default:
			train = append(train, t)
		}
	}
	if len(train)+len(val) == 0 {
		out.Action, out.Reason = ActionNoTasks, "no tasks to replay"
		return out, nil
	}
	switch {
	case len(val) == 0:
		val, out.Leaked = train, true
	case len(train) == 0:
		train, out.Leaked = val, true
	}
	out.Train, out.Val = len(train), len(val)
	if err := n.afford("baseline", "target", 0); err != nil {
		return out, err
	}
	skill, memory := in.Skill, in.Memory
	rs, err := n.replay(ctx, "baseline", nightly.ComposeDocs(skill, memory), val, 0)
	if err != nil {
		return out, err
	}
	base, basePer := n.score(rs)
	out.Baseline = base
	if base.N == 0 {
		return out, fmt.Errorf("baseline: all %d val replays failed (infrastructure); first error: %s", len(rs), firstErr(rs))
	}
	cur, curPer := base, basePer
	anyFailures := false
	docs := []string{}
	if n.s.EvolveSkill {
		docs = append(docs, "skill")
	}
	if n.s.EvolveMemory {
		docs = append(docs, "memory")
	}
	for _, doc := range docs {
		trs, err := n.replay(ctx, "train_"+doc, nightly.ComposeDocs(skill, memory), train, 0)
		if err != nil {
			return out, err
		}
		var fails []nightly.Failure
		byID := map[string]nightly.Task{}
		for _, t := range train {
			byID[t.ID] = t
		}
		for _, r := range trs {
			if r.Err != "" || r.Hard >= 1 {
				continue
			}
			t := byID[r.TaskID]
			fails = append(fails, nightly.Failure{TaskID: t.ID, Intent: t.Intent, Wanted: wanted(t.Judge), Got: r.Answer, Why: r.FailReason})
		}
		if len(fails) == 0 {
			n.d.Logger.InfoContext(ctx, "no failures to learn from", "stage", doc)
			continue
		}
		anyFailures = true
		text := skill
		if doc == "memory" {
			text = memory
		}
		if err := n.afford("reflect_"+doc, "optimizer", reflectEstimate(text, fails)); err != nil {
			return out, err
		}
		pkg := in.Package && doc == "skill"
		ri := nightly.ReflectInput{Document: doc, Current: nightly.LearnedLines(text), Failures: fails, Budget: n.s.EditBudget, Preferences: n.s.Preferences}
		if pkg {
			ri.Current, ri.Package = nightly.LearnedLines(nightly.SkillEntry(text)), nightly.ViewPackage(text)
		}
		edits, u, calls, err := nightly.Reflect(ctx, n.d.Optimizer, n.d.OptimizerName, ri)
		n.charge("optimizer", u, calls)
		if err != nil {
			return out, fmt.Errorf("reflect on the %s: %w", doc, err)
		}
		for _, ed := range edits {
			trial, applied, unmatched, refused, err := nightly.ApplyDocEdits(doc, text, []nightly.Edit{ed}, pkg, in.PackageLimits)
			if err != nil {
				return out, fmt.Errorf("%s: %w", doc, err)
			}
			out.Unmatched = append(out.Unmatched, unmatched...)
			for _, r := range refused {
				out.Refused = append(out.Refused, r)
				if out.RefusedByReason == nil {
					out.RefusedByReason = map[string]int{}
				}
				out.RefusedByReason[r.Reason]++
				n.d.Logger.InfoContext(ctx, "edit refused", "stage", doc, "op", r.Edit.Op, "file", r.Edit.File, "reason", r.Reason)
			}
			if len(applied) == 0 {
				continue
			}
			ts, tm := skill, memory
			if doc == "skill" {
				ts = trial
			} else {
				tm = trial
			}
			vrs, err := n.replay(ctx, "gate_"+doc, nightly.ComposeDocs(ts, tm), val, 0)
			if err != nil {
				return out, err
			}
			cand, candPer := n.score(vrs)
			tr := Trial{Document: doc, Edit: ed, Before: cur.Value, After: cand.Value}
			switch {
			case cand.Infra > 0:
				tr.Why = fmt.Sprintf("not measured: %d val replays failed (infrastructure)", cand.Infra)
			case !(cand.Value > cur.Value):
				tr.Why = fmt.Sprintf("val score %.4f does not beat %.4f", cand.Value, cur.Value)
			case n.s.NoRegression && regressed(curPer, candPer) != "":
				tr.Why = "no-regression rule: task " + regressed(curPer, candPer) + " scores lower"
			default:
				tr.Accepted, tr.Why = true, fmt.Sprintf("val score %.4f → %.4f", cur.Value, cand.Value)
				text, cur, curPer = trial, cand, candPer
				skill, memory = ts, tm
			}
			out.Trials = append(out.Trials, tr)
			n.d.Logger.InfoContext(ctx, "gate trial", "stage", doc, "op", ed.Op, "file", ed.File, "accepted", tr.Accepted, "before", tr.Before, "after", tr.After)
		}
	}
	changed := skill != in.Skill || memory != in.Memory
	if !changed {
		if anyFailures {
			out.Action, out.Reason = ActionNoEdits, "no proposed edit passed the gate"
		} else {
			out.Action, out.Reason = ActionNoFailures, "every train replay passed; nothing to learn"
		}
		return out, nil
	}
	// The final check: new attempts of the val tasks under the final
	// documents (fresh samples, never a result measured before).
	frs, err := n.replay(ctx, "final_fresh", nightly.ComposeDocs(skill, memory), val, FreshSample)
	if err != nil {
		return out, err
	}
	for _, r := range frs {
		if !r.Fresh {
			return out, fmt.Errorf("final check: the replay of task %s was not a fresh sample", r.TaskID)
		}
	}
	final, _ := n.score(frs)
	out.Final = &final
	if len(test) > 0 {
		if trs, err := n.replay(ctx, "test", nightly.ComposeDocs(skill, memory), test, FreshSample); err == nil {
			ts, _ := n.score(trs)
			out.Test = &ts
		} else {
			return out, err
		}
	}
	switch {
	case final.Infra > 0:
		out.Action, out.Reason = ActionReject, fmt.Sprintf("final check: %d fresh replays failed (infrastructure)", final.Infra)
	case !(final.Value > base.Value):
		out.Action, out.Reason = ActionReject, fmt.Sprintf("fresh final score %.4f does not beat the baseline %.4f", final.Value, base.Value)
	case out.Leaked:
		out.Action, out.Reason = ActionRejectUnverified, "val and train overlap (too few tasks): the gain is not verified on held-out tasks"
	default:
		out.Action, out.Accepted = ActionAccept, true
		out.Reason = fmt.Sprintf("val score %.4f → %.4f on fresh replays", base.Value, final.Value)
	}
	if out.Accepted {
		out.ProposedSkill, out.ProposedMemory = skill, memory
		out.SkillChanged, out.MemoryChanged = skill != in.Skill, memory != in.Memory
		if in.Package && out.SkillChanged {
			out.FilesChanged = nightly.PackageFiles(in.Skill, skill)
		}
	} else {
		for i := range out.Trials {
			if out.Trials[i].Accepted {
				out.Trials[i].Accepted = false
				out.Trials[i].Why += "; rolled back: " + out.Reason
			}
		}
	}
	return out, nil
}

// regressed names a task whose score dropped (or went missing).
func regressed(before, after map[string]float64) string {
	for id, b := range before {
		a, ok := after[id]
		if !ok || math.IsNaN(a) || a < b-1e-9 {
			return id
		}
	}
	return ""
}

func wanted(j nightly.Judge) string {
	var parts []string
	if j.Reference != "" {
		parts = append(parts, "the answer "+j.Reference)
	}
	for _, c := range j.Checks {
		parts = append(parts, c.Op+" "+c.Arg)
	}
	if j.Kind == nightly.JudgeRubric {
		parts = append(parts, "rubric: "+j.Rubric)
	}
	return strings.Join(parts, "; ")
}

func firstErr(rs []Replay) string {
	for _, r := range rs {
		if r.Err != "" {
			return r.Err
		}
	}
	return ""
}

// reflectEstimate is a reflection's expected tokens: its document, the
// failures shown (at most 8) and a reply allowance.
func reflectEstimate(doc string, fails []nightly.Failure) int64 {
	n := len(doc) + 1200
	for i, f := range fails {
		if i == 8 {
			break
		}
		n += min(len(f.Intent), 400) + min(len(f.Wanted), 400) + min(len(f.Got), 600) + min(len(f.Why), 300) + 80
	}
	return int64(n/4) + 800
}
