package sleep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/skillfleet/skillfleet/pkg/nightly"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// SkillNight is one skill's part of a multi-skill night (skill_root):
// its tasks, how they were resolved to it, its consolidation's outcome
// and its staging dir.
type SkillNight struct {
	Name     string         `json:"name"`
	Path     string         `json:"skill_path"`
	Tasks    int            `json:"tasks"`
	Resolved map[string]int `json:"resolved_by"`
	Outcome  *Outcome       `json:"outcome"`
	Staging  string         `json:"staging,omitempty"`
	// Package says the skill was trained as a skill package (its
	// directory holds files beside SKILL.md); PackageRefused says why a
	// directory that holds other files was trained as its SKILL.md alone.
	Package        bool   `json:"package,omitempty"`
	PackageRefused string `json:"package_refused,omitempty"`
}

// SkillStagingRoot is where a multi-skill night stages skill name's
// proposals (each skill has its own adopt receipts there).
func (n Night) SkillStagingRoot(name string) string {
	return filepath.Join(n.StagingRoot, "skill-"+name)
}

// runSkills is a multi-skill night: the tasks are resolved to the skills
// of skill_root ([nightly.AssignSkills]), and each skill with tasks gets
// its own gated consolidation on the one fleet (in name order, each
// starting from what the ones before spent, under the night's budget) and
// its own staged proposal. The memory file is not evolved: each proposal
// must be adoptable alone. The state moves once, for the whole night.
func (n Night) runSkills(ctx context.Context, d NightDeps, st *nightly.State, rep *Report, tasks []nightly.Task, spent Spend) (*Report, error) {
	skills, err := nightly.ListSkills(n.SkillRoot)
	if err != nil {
		return nil, UsageError{err}
	}
	by, none, how := nightly.AssignSkills(tasks, skills)
	for _, t := range none {
		rep.Unresolved = append(rep.Unresolved, TaskSummary{ID: t.ID, Split: t.Split, Judge: t.Judge.Kind, Origin: t.Origin, Intent: clipRunes(t.Intent, 120)})
	}
	total := &Outcome{Action: ActionNoTasks, Reason: "no task exercises a skill of " + n.SkillRoot, Spend: spent}
	rep.Outcome = total
	var cause error
	if len(by) > 0 {
		benchCfg, err := json.Marshal(nightly.EnvConfig{JudgeModel: n.OptimizerModel, AgentTarget: n.AgentTarget})
		if err != nil {
			return nil, err
		}
		replayer, stop, err := d.Fleet(ctx, rep.Night, rep.Started, benchCfg)
		if err != nil {
			return nil, err
		}
		defer stop()
		var jobs []skillJob
		for _, sk := range skills {
			if group := by[sk.Name]; len(group) > 0 {
				jobs = append(jobs, skillJob{ref: sk, tasks: group})
			}
		}
		pool := &SharedSpend{spend: spent}
		if err := n.consolidateSkills(ctx, d, st, replayer, jobs, how, pool, rep.Night); err != nil {
			return nil, err
		}
		for _, j := range jobs {
			if j.out == nil {
				continue // not started: the budget was spent first
			}
			rep.Skills = append(rep.Skills, j.night)
			rep.lives = append(rep.lives, j.live)
			if j.err != nil && cause == nil {
				cause = j.err
			}
		}
		total.Spend = pool.Total()
		total.Action, total.Reason = ActionMultiSkill, multiReason(rep.Skills)
		for _, sn := range rep.Skills {
			total.Accepted = total.Accepted || sn.Outcome.Accepted
		}
		if cause != nil {
			total.Action, total.Reason = ActionStoppedBudget, cause.Error()
		}
	}
	if d.Pending != nil {
		if err := d.Pending(); err != nil {
			return nil, err
		}
	}
	return rep, n.finishSkills(st, rep, tasks, cause)
}

// maxSkillsAtOnce bounds the skills of a multi-skill night consolidated
// at once: their replays share the night's fleet, and each holds its
// documents and replays in memory.
const maxSkillsAtOnce = 4

// skillJob is one skill of a multi-skill night: its tasks, and what its
// consolidation left (out nil: it did not start).
type skillJob struct {
	ref   nightly.SkillRef
	tasks []nightly.Task
	night SkillNight
	// live is the proposal the skill would stage, without its text: the
	// live file or package it replaces, pinned as the consolidation read it.
	live nightly.Proposal
	out  *Outcome
	err  error // a budget stop
}

// consolidateSkills runs the jobs' consolidations, at most
// maxSkillsAtOnce at once, started in the jobs' order, on one replayer
// and one spend (pool, which every consolidation charges and checks the
// night's budget against). A budget stop lets the running ones end (each
// stops at its own next check) and starts no other; any other error stops
// them all and is returned, naming the skill. A context ended by the
// caller is [ErrStopped].
func (n Night) consolidateSkills(ctx context.Context, d NightDeps, st *nightly.State, replayer Replayer, jobs []skillJob,
	how map[string]string, pool *SharedSpend, night int) error {
	gctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	next := make(chan int)
	go func() {
		defer close(next)
		for i := range jobs {
			select {
			case next <- i:
			case <-gctx.Done():
				return
			}
		}
	}()
	var (
		mu       sync.Mutex
		budget   bool
		firstErr error
		wg       sync.WaitGroup
	)
	atOnce := maxSkillsAtOnce
	if d.Pending != nil {
		// A handoff night: one skill at a time, so that the batch a
		// pending wave stops the night with is the same on every rerun
		// (skills at once would stop each other mid-wave).
		atOnce = 1
	}
	for range min(atOnce, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				mu.Lock()
				stop := budget || firstErr != nil
				mu.Unlock()
				if stop || gctx.Err() != nil {
					continue
				}
				j := &jobs[i]
				err := n.consolidateSkill(gctx, d, st, replayer, j, how, pool)
				mu.Lock()
				switch {
				case err == nil:
				case errors.Is(err, ErrBudget):
					budget = true
				case gctx.Err() != nil && ctx.Err() == nil && firstErr != nil:
					// Stopped by another skill's error.
				default:
					if firstErr == nil {
						firstErr = fmt.Errorf("skill %s: %w", j.ref.Name, err)
						cancel(firstErr)
					}
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return fmt.Errorf("night %d %w; nothing was staged and the state is unchanged", night, ErrStopped)
	}
	return firstErr
}

// consolidateSkill is one skill's gated consolidation (the memory file
// not evolved, the skill's own lessons shown), filling in j.
func (n Night) consolidateSkill(ctx context.Context, d NightDeps, st *nightly.State, replayer Replayer, j *skillJob,
	how map[string]string, pool *SharedSpend) error {
	sn := SkillNight{Name: j.ref.Name, Path: j.ref.Path, Tasks: len(j.tasks), Resolved: map[string]int{}}
	for _, t := range j.tasks {
		sn.Resolved[how[t.ID]]++
	}
	skill, live, err := readSkillOf(j.ref, &sn, d.Logger)
	if err != nil {
		return err
	}
	s := SettingsFromConfig(n.Config)
	s.Cost, s.StopOnFailure, s.EvolveMemory, s.Shared = n.Cost, n.AgentTarget, false, pool
	for _, l := range st.Lessons {
		if l.Document == "skill:"+j.ref.Name {
			s.Lessons = append(s.Lessons, l.Text())
		}
	}
	out, err := Consolidate(ctx, s, Deps{Replayer: replayer, Optimizer: d.Optimizer, OptimizerName: n.OptimizerModel, Logger: d.Logger.With("skill", j.ref.Name), Pending: d.Pending},
		Input{Tasks: j.tasks, Skill: skill, Memory: nightly.ScaffoldMemory(), Package: live.Package})
	if err != nil && !errors.Is(err, ErrBudget) {
		return err
	}
	sn.Outcome = out
	j.night, j.live, j.out, j.err = sn, live, out, err
	return err
}

// readSkillOf reads a skill of skill_root as a single-skill night reads
// its skill: a directory holding any file beside SKILL.md is a skill
// package (its bundle, every file pinned), else its SKILL.md alone. A
// package skillpkg refuses (a binary or hidden file, a file too large) is
// trained as its SKILL.md alone, with why in sn and the log: the other
// skills' night goes on. It returns the skill's text with a learned block
// and the proposal it would stage, without its text.
func readSkillOf(ref nightly.SkillRef, sn *SkillNight, log *slog.Logger) (string, nightly.Proposal, error) {
	dir := filepath.Dir(ref.Path)
	pins, _, err := nightly.TreePins(dir)
	if err == nil && len(pins) > 1 {
		var lp *nightly.LivePackage
		if lp, err = nightly.ReadPackage(dir, skillpkg.Limits{}); err == nil {
			sn.Package = true
			return lp.Text, nightly.Proposal{Name: "skill", Package: true, LivePath: lp.Dir, LiveExisted: lp.Existed, LiveFiles: lp.Pins}, nil
		}
	}
	if err != nil {
		sn.PackageRefused = err.Error()
		log.Warn("the skill's directory is not a package a night can train; this night trains its SKILL.md alone", "skill", ref.Name, "why", err)
	}
	text, pin, err := readDoc(ref.Path)
	if err != nil {
		return "", nightly.Proposal{}, err
	}
	skill, err := nightly.EnsureBlock(text, nightly.ScaffoldSkill)
	if err != nil {
		return "", nightly.Proposal{}, fmt.Errorf("%s: %w", ref.Path, err)
	}
	return skill, nightly.Proposal{Name: "skill", LivePath: ref.Path, LiveSHA256: pin}, nil
}

// ActionMultiSkill is the action of a multi-skill night; each skill's
// own action is in its [SkillNight].
const ActionMultiSkill = "multi_skill"

func multiReason(sns []SkillNight) string {
	acc := 0
	for _, s := range sns {
		if s.Outcome.Accepted {
			acc++
		}
	}
	return fmt.Sprintf("%d skills consolidated, %d accepted", len(sns), acc)
}

// finishSkills stages each skill's outcome in its own staging root (its
// proposal when accepted), then, unless a dry run, moves the cursors,
// archives the real tasks, records the lessons (document "skill:<name>")
// and the night, and saves the state.
func (n Night) finishSkills(st *nightly.State, rep *Report, tasks []nightly.Task, cause error) error {
	if n.DryRun {
		return cause
	}
	for i := range rep.Skills {
		sn := &rep.Skills[i]
		out := sn.Outcome
		var props []nightly.Proposal
		if out.Accepted && out.SkillChanged {
			p := rep.lives[i]
			p.Text = out.ProposedSkill
			props = []nightly.Proposal{p}
		}
		sub := *rep
		sub.Outcome, sub.Skills, sub.SkillPath, sub.Tasks = out, nil, sn.Path, sn.Tasks
		if sn.Package {
			sub.SkillDir = filepath.Dir(sn.Path)
		}
		var ev []any
		for _, rp := range out.Replays {
			ev = append(ev, rp)
		}
		for _, tr := range out.Trials {
			ev = append(ev, map[string]any{"trial": tr})
		}
		root := n.SkillStagingRoot(sn.Name)
		if err := os.MkdirAll(root, 0o755); err != nil {
			return err
		}
		dir, err := nightly.Stage(nightly.StageInput{Root: root, Night: rep.Night, Started: rep.Started, Accepted: out.Accepted && len(props) > 0,
			Action: out.Action, Reason: out.Reason, Proposals: props, ReportJSON: &sub, ReportMD: sub.Markdown(), Evidence: ev})
		if err != nil {
			return fmt.Errorf("skill %s: %w", sn.Name, err)
		}
		sn.Staging = dir
		for _, tr := range out.Trials {
			st.Learn([]nightly.Lesson{nightly.NewLesson(rep.Night, "skill:"+sn.Name, tr.Edit, tr.Accepted, tr.Why)})
		}
	}
	st.Night = rep.Night
	if cause == nil {
		st.LastHarvest[n.Project] = rep.Started
		for _, p := range rep.Projects {
			st.LastHarvest[p] = rep.Started
		}
		st.Archive(realTasks(tasks))
	}
	out := rep.Outcome
	st.History = append(st.History, nightly.NightRecord{Night: rep.Night, Started: rep.Started, Sessions: rep.Sessions, Tasks: rep.Tasks,
		Action: out.Action, Reason: out.Reason, Tokens: out.Spend.Tokens})
	if len(st.History) > 100 {
		st.History = st.History[len(st.History)-100:]
	}
	st.LastModelKey = n.modelKey()
	if err := st.Save(n.StatePath); err != nil {
		return err
	}
	return cause
}
