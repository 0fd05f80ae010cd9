package sleep

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/skillfleet/skillfleet/pkg/nightly"
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
		for _, sk := range skills {
			group := by[sk.Name]
			if len(group) == 0 {
				continue
			}
			sn := SkillNight{Name: sk.Name, Path: sk.Path, Tasks: len(group), Resolved: map[string]int{}}
			for _, t := range group {
				sn.Resolved[how[t.ID]]++
			}
			text, pin, err := readDoc(sk.Path)
			if err != nil {
				return nil, err
			}
			skill, err := nightly.EnsureBlock(text, nightly.ScaffoldSkill)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", sk.Path, err)
			}
			s := SettingsFromConfig(n.Config)
			s.Spent, s.Cost, s.StopOnFailure, s.EvolveMemory = total.Spend, n.Cost, n.AgentTarget, false
			for _, l := range st.Lessons {
				if l.Document == "skill:"+sk.Name {
					s.Lessons = append(s.Lessons, l.Text())
				}
			}
			out, err := Consolidate(ctx, s, Deps{Replayer: replayer, Optimizer: d.Optimizer, OptimizerName: n.OptimizerModel, Logger: d.Logger.With("skill", sk.Name)},
				Input{Tasks: group, Skill: skill, Memory: nightly.ScaffoldMemory()})
			if err != nil && ctx.Err() != nil {
				return nil, fmt.Errorf("night %d %w; nothing was staged and the state is unchanged", rep.Night, ErrStopped)
			}
			if err != nil && !errors.Is(err, ErrBudget) {
				return nil, fmt.Errorf("skill %s: %w", sk.Name, err)
			}
			sn.Outcome = out
			total.Spend = out.Spend
			total.Accepted = total.Accepted || out.Accepted
			rep.Skills = append(rep.Skills, sn)
			rep.pins = append(rep.pins, pin)
			if err != nil {
				cause = err
				break
			}
		}
		total.Action, total.Reason = ActionMultiSkill, multiReason(rep.Skills)
		if cause != nil {
			total.Action, total.Reason = ActionStoppedBudget, cause.Error()
		}
	}
	return rep, n.finishSkills(st, rep, tasks, cause)
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
			props = []nightly.Proposal{{Name: "skill", LivePath: sn.Path, LiveSHA256: rep.pins[i], Text: out.ProposedSkill}}
		}
		sub := *rep
		sub.Outcome, sub.Skills, sub.SkillPath, sub.Tasks = out, nil, sn.Path, sn.Tasks
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
