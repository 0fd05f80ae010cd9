package sleep

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/nightly"
)

// ErrStopped is returned when a night's context ends during its replays:
// nothing was staged and the state is unchanged.
var ErrStopped = errors.New("stopped on request")

// Night is one night's resolved setup: the config and every path the
// command resolved from its flags.
type Night struct {
	Config nightly.Config
	// StatePath is the state file (locked for the night).
	StatePath string
	// Project is the project whose sessions are learned from.
	Project string
	// SkillPath is the live skill file; with SkillDir set, the night trains
	// that package directory and SkillPath is its SKILL.md. MemoryPath is
	// the live memory file.
	SkillPath, SkillDir, MemoryPath string
	// StagingRoot is where the night's proposal is staged.
	StagingRoot string
	// The agents' homes the harvest reads ("" = the default).
	ClaudeHome, CodexHome, CursorHome string
	// TasksFile replaces the harvest with a reviewed tasks file.
	TasksFile string
	// Persona names a built-in persona whose sessions (written into
	// ClaudeHome when it holds none) and starting package the night uses.
	Persona string
	// DryRun stages nothing and leaves the state as it was.
	DryRun bool
	// TargetModel and OptimizerModel name the two roles' models.
	TargetModel, OptimizerModel string
	// Cost prices a role's usage for max_usd_per_night (nil: no dollar
	// budget).
	Cost func(role string, u llm.Usage) float64
	// AdoptCmd is the command line that adopts this night's proposal.
	AdoptCmd string
	// AllowedRoots are the directories auto-adopt may write under.
	AllowedRoots []string
	// SkillRoot, when set, is a directory of skills: the night trains
	// each skill its tasks exercise, one consolidation and one staged
	// proposal per skill (under StagingRoot/skill-<name>).
	SkillRoot string
	// OptimizerOptions are the optimizer's backend options
	// (--optimizer-option).
	OptimizerOptions map[string]string
	// AgentTarget says the target is an agent CLI (the exec backend): the
	// replays give it the skill as a package to install, and a replay it
	// fails stops the night ([AgentFailure]).
	AgentTarget bool
	// HarvestSnapshot, when set (a handoff night), is the file the
	// night's harvest and start time are kept in between its rounds: a
	// round finding one for this night and project mines those sessions
	// instead of harvesting again.
	HarvestSnapshot string
}

// NightDeps are a night's collaborators.
type NightDeps struct {
	// Optimizer mines, reflects and judges.
	Optimizer llm.Model
	// Fleet starts what the replays run on for the night (numbered n,
	// started at start), with the sleep benchmark's config; stop ends it.
	Fleet  func(ctx context.Context, n int, start time.Time, benchConfig []byte) (r Replayer, stop func(), err error)
	Logger *slog.Logger
	// Pending, when set, says whether model calls wait for answers (a
	// handoff night): it is asked after mining and after each replay
	// wave, and before anything is staged or saved; its error stops the
	// night there, with nothing staged and the state as it was.
	Pending func() error
}

// RunNight runs one night under the state file's lock: the tasks (a
// harvest and mining, or a tasks file), the live documents, the
// consolidation on the fleet, then, unless a dry run, the staged proposal,
// the state and an opted-in adoption. The report is returned whenever the
// night got as far as deciding, also with a budget error (wrapping
// [ErrBudget]: nothing accepted, the sessions left for the next night) or
// an auto-adopt error. A locked state is [nightly.ErrLocked]; a context
// ended during the replays is [ErrStopped]; an agent CLI target that
// failed a replay is an [*AgentFailure] (nothing staged, the state as it
// was).
func RunNight(ctx context.Context, n Night, d NightDeps) (*Report, error) {
	if d.Logger == nil {
		d.Logger = slog.New(slog.DiscardHandler)
	}
	unlock, err := nightly.LockState(n.StatePath)
	if err != nil {
		return nil, err
	}
	defer unlock()
	st, err := nightly.LoadState(n.StatePath)
	if err != nil {
		return nil, err
	}
	started := time.Now().UTC()
	var snap *harvestSnapshot
	if n.HarvestSnapshot != "" && n.TasksFile == "" {
		if snap, err = loadSnapshot(n.HarvestSnapshot, n.Project, st.Night+1); err != nil {
			return nil, err
		}
		if snap != nil {
			started = snap.Started
		}
	}
	rep := &Report{Night: st.Night + 1, Project: n.Project, Started: started, Backend: n.Config.Backend, Model: n.TargetModel,
		DryRun: n.DryRun, SkillPath: n.SkillPath, SkillDir: n.SkillDir, MemoryPath: n.MemoryPath, Splits: map[string]int{}, AdoptCmd: n.AdoptCmd}
	if n.Config.Backend == backends.BackendHandoff {
		rep.UsageEstimated = handoffUsageNote
	}
	if key := n.modelKey(); st.LastModelKey != "" && st.LastModelKey != key {
		d.Logger.Warn("the backend or model changed since the last night; scores do not compare across models", "was", st.LastModelKey, "now", key)
	}
	if n.Persona != "" {
		if err := n.preparePersona(started); err != nil {
			return nil, err
		}
	}
	tasks, spent, err := n.tasks(ctx, d, st, rep, snap)
	if d.Pending != nil {
		if perr := d.Pending(); perr != nil {
			return nil, perr
		}
	}
	if errors.Is(err, ErrBudget) {
		out := &Outcome{Action: ActionStoppedBudget, Reason: err.Error(), Spend: spent}
		return rep, n.finish(st, rep, out, nil, nil, err)
	}
	if err != nil {
		return nil, err
	}
	if n.SkillRoot != "" {
		return n.runSkills(ctx, d, st, rep, tasks, spent)
	}
	docs, err := n.readDocs(d.Logger)
	if err != nil {
		return nil, err
	}
	if len(tasks) == 0 {
		out := &Outcome{Action: ActionNoTasks, Reason: "no new sessions with tasks to learn from", Spend: spent}
		return rep, n.finish(st, rep, out, nil, nil, nil)
	}
	out, err := n.consolidate(ctx, d, rep.Night, started, tasks, docs, spent, st.Lessons)
	if err != nil && !errors.Is(err, ErrBudget) {
		return nil, err
	}
	if d.Pending != nil {
		if perr := d.Pending(); perr != nil {
			return nil, perr
		}
	}
	return rep, n.finish(st, rep, out, docs.proposals(n, out), tasks, err)
}

// modelKey names the backend and models in the state, to warn when they
// change between nights.
func (n Night) modelKey() string {
	return n.Config.Backend + "/" + n.TargetModel + "/" + cmp.Or(n.OptimizerModel, n.TargetModel)
}

// consolidate starts the fleet and runs the night's gated epoch on it.
func (n Night) consolidate(ctx context.Context, d NightDeps, night int, started time.Time, tasks []nightly.Task, docs liveDocs, spent Spend, lessons []nightly.Lesson) (*Outcome, error) {
	benchCfg, err := json.Marshal(nightly.EnvConfig{JudgeModel: n.OptimizerModel, AgentTarget: n.AgentTarget})
	if err != nil {
		return nil, err
	}
	replayer, stop, err := d.Fleet(ctx, night, started, benchCfg)
	if err != nil {
		return nil, err
	}
	s := SettingsFromConfig(n.Config)
	s.Spent, s.Cost, s.StopOnFailure = spent, n.Cost, n.AgentTarget
	for _, l := range lessons {
		s.Lessons = append(s.Lessons, l.Text())
	}
	if n.Config.Scope == nightly.ScopeAll && s.EvolveMemory {
		// The memory file is one project's: other projects' sessions must
		// not write into it.
		s.EvolveMemory = false
		d.Logger.Info("scope all: the memory file is not evolved (it belongs to one project)", "memory_path", n.MemoryPath)
	}
	out, err := Consolidate(ctx, s, Deps{Replayer: replayer, Optimizer: d.Optimizer, OptimizerName: n.OptimizerModel, Logger: d.Logger, Pending: d.Pending},
		Input{Tasks: tasks, Skill: docs.skill, Memory: docs.memory, Package: docs.pkg != nil})
	stop()
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("night %d %w; nothing was staged and the state is unchanged", night, ErrStopped)
	}
	return out, err
}

// preparePersona writes the persona's sessions when its Claude home holds
// none yet, its project directory, and its starting package.
func (n Night) preparePersona(started time.Time) error {
	if ents, _ := os.ReadDir(filepath.Join(n.ClaudeHome, "projects")); len(ents) == 0 {
		if err := nightly.WritePersonaTranscripts(n.Persona, n.ClaudeHome, n.Project, started); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(n.Project, 0o755); err != nil {
		return err
	}
	return nightly.SeedPersonaPackage(n.Persona, n.SkillDir)
}
