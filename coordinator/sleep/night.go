package sleep

import (
	"context"
	"errors"
	"log/slog"
	"sync"

	"github.com/skillfleet/skillfleet/coordinator/gate"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/nightly"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// ErrBudget is returned when a night stops at its token or dollar budget.
var ErrBudget = errors.New("night budget reached")

// Actions a night ends with.
const (
	ActionAccept           = "accept"
	ActionAcceptUngated    = "accept_ungated"
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
	// GateMetric (hard, soft or mixed) and MixedWeight, the weight of the
	// soft score in mixed, are the trainer's evaluation.gate_metric and
	// evaluation.gate_mixed_weight: a replay is scored by
	// coordinator/gate's [gate.Score]. No metric at all is mixed at
	// weight 0.5, SkillOpt-Sleep's default.
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
	// Shared, when set, is the night's spend shared with consolidations
	// running at once (a multi-skill night's skills): every charge goes to
	// it too, and the budget is checked against it instead of this
	// consolidation's own spend.
	Shared *SharedSpend
	// Preferences are the user's house rules, shown to the reflector.
	Preferences string
	// StopOnFailure ends the night at the first replay that failed for
	// infrastructure, with an [*AgentFailure], instead of leaving it out of
	// the scores: an agent CLI target that fails (auth, a missing binary,
	// a timeout, a broken stream, a non-zero exit) fails every replay
	// alike, and a night must not learn from a wave it did not measure.
	StopOnFailure bool
	// DreamRollouts is how many attempts each train task gets in a train
	// wave (0 or 1: one). With more, a task fails when its worst attempt
	// does, and the reflector sees its best attempt beside the worst.
	DreamRollouts int
	// GateOff keeps every edit that applies, whatever the val score
	// (gate_mode off): the trials still measure it, the final check still
	// runs, and the night is accepted as [ActionAcceptUngated].
	GateOff bool
	// Lessons are the slow memory shown to the reflector, one line each.
	Lessons []string
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
	// Pending, when set, is asked after each replay wave whether model
	// calls of the wave wait for answers (a handoff night): its error
	// stops the consolidation before the wave is scored.
	Pending func() error
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
	// Extra is the part of Spend the night's dream and recall settings
	// added: "rollouts" (a real task's train attempts after its first),
	// "dream" and "recall" (every replay of a task of that origin).
	Extra map[string]Spend `json:"extra_spend,omitempty"`
	// GateOff says edits were kept without the gate (gate_mode off).
	GateOff bool     `json:"gate_off,omitempty"`
	Replays []Replay `json:"-"`
}

// night is one consolidation's working state; its phases are the step_*
// files: baseline, then per document the train replays, the reflection and
// one gate trial per edit, then the final fresh check.
type night struct {
	s      Settings
	d      Deps
	metric gate.Metric
	weight float64
	out    *Outcome

	mu       sync.Mutex
	perTask  float64 // tokens per replay seen so far
	replayed int
}

// Consolidate runs a night's one gated epoch. With a budget error it
// returns the outcome so far (action stopped_budget, nothing accepted)
// together with an error wrapping [ErrBudget].
func Consolidate(ctx context.Context, s Settings, d Deps, in Input) (*Outcome, error) {
	if s.EditBudget <= 0 {
		s.EditBudget = 4
	}
	metric, weight, err := s.gateMetric()
	if err != nil {
		return &Outcome{Spend: s.Spent, ProposedSkill: in.Skill, ProposedMemory: in.Memory, Package: in.Package}, err
	}
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	n := &night{s: s, d: d, metric: metric, weight: weight, out: &Outcome{Spend: s.Spent, ProposedSkill: in.Skill, ProposedMemory: in.Memory, Package: in.Package, GateOff: s.GateOff}}
	if s.GateOff {
		d.Logger.Warn("GATE OFF: gate_mode off keeps every proposed edit without the val gate; the night's proposal is not verified: review it before you adopt it")
	}
	out, err := n.run(ctx, in)
	if errors.Is(err, ErrBudget) {
		out.Action, out.Reason, out.Accepted = ActionStoppedBudget, err.Error(), false
		out.ProposedSkill, out.ProposedMemory, out.SkillChanged, out.MemoryChanged = in.Skill, in.Memory, false, false
	}
	return out, err
}

func (n *night) run(ctx context.Context, in Input) (*Outcome, error) {
	sp := splitTasks(in.Tasks)
	out := n.out
	if len(sp.train)+len(sp.val) == 0 {
		out.Action, out.Reason = ActionNoTasks, "no tasks to replay"
		return out, nil
	}
	out.Train, out.Val, out.Leaked = len(sp.train), len(sp.val), sp.leaked
	cur, err := n.baseline(ctx, in, sp.val)
	if err != nil {
		return out, err
	}
	docs := docState{skill: in.Skill, memory: in.Memory}
	anyFailures := false
	for _, doc := range n.documents() {
		failed, err := n.evolve(ctx, in, doc, sp, &docs, &cur)
		if err != nil {
			return out, err
		}
		anyFailures = anyFailures || failed
	}
	if docs.skill == in.Skill && docs.memory == in.Memory {
		if anyFailures {
			out.Action, out.Reason = ActionNoEdits, "no proposed edit passed the gate"
		} else {
			out.Action, out.Reason = ActionNoFailures, "every train replay passed; nothing to learn"
		}
		return out, nil
	}
	return out, n.final(ctx, in, sp, docs)
}

// splits are a night's tasks by split. With no val tasks the train tasks
// stand in for them (and the other way round): the night is then leaked,
// and its gain unverified.
type splits struct {
	train, val, test []nightly.Task
	leaked           bool
}

func splitTasks(tasks []nightly.Task) splits {
	var sp splits
	for _, t := range tasks {
		if !nightly.IsHeldOutOrigin(t.Origin) {
			// Recalled and dream tasks are train only, whatever their split
			// says (nightly.Task.Validate refuses one in val or test).
			t.Split = nightly.SplitTrain
		}
		switch t.Split {
		case nightly.SplitVal:
			sp.val = append(sp.val, t)
		case nightly.SplitTest:
			sp.test = append(sp.test, t)
		default:
			sp.train = append(sp.train, t)
		}
	}
	switch {
	case len(sp.train)+len(sp.val) == 0:
	case len(sp.val) == 0:
		// The stand-in val holds the real train tasks only: a dream or
		// recalled task is never scored by the gate.
		for _, t := range sp.train {
			if nightly.IsHeldOutOrigin(t.Origin) {
				sp.val = append(sp.val, t)
			}
		}
		sp.leaked = true
	case len(sp.train) == 0:
		sp.train, sp.leaked = sp.val, true
	}
	return sp
}

// docState is the documents as the night's accepted edits left them.
type docState struct{ skill, memory string }

func (d docState) text(doc string) string {
	if doc == "memory" {
		return d.memory
	}
	return d.skill
}

// with returns the documents with doc replaced by text.
func (d docState) with(doc, text string) docState {
	if doc == "memory" {
		d.memory = text
	} else {
		d.skill = text
	}
	return d
}

func (d docState) composed() string { return nightly.ComposeDocs(d.skill, d.memory) }

// documents are the documents the night evolves, in order.
func (n *night) documents() []string {
	var docs []string
	if n.s.EvolveSkill {
		docs = append(docs, "skill")
	}
	if n.s.EvolveMemory {
		docs = append(docs, "memory")
	}
	return docs
}

// SettingsFromConfig returns the consolidation settings of a sleep config
// (the spend so far, the price function and the budget stop are the
// caller's to add).
func SettingsFromConfig(c nightly.Config) Settings {
	s := Settings{
		EditBudget: c.EditBudget, GateMetric: c.GateMetric, MixedWeight: c.GateMixedWeight, NoRegression: c.GateNoRegression,
		MaxTokens: c.MaxTokens, MaxUSD: c.MaxUSD, Preferences: c.Preferences, DreamRollouts: c.DreamRollouts,
		GateOff: c.GateMode == nightly.GateOff,
	}
	if c.EvolveSkill != nil {
		s.EvolveSkill = *c.EvolveSkill
	}
	if c.EvolveMemory != nil {
		s.EvolveMemory = *c.EvolveMemory
	}
	return s
}
