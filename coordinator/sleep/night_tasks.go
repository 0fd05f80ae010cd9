package sleep

import (
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/nightly"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// tasks is the night's first phase: the tasks of a reviewed tasks file,
// or those mined from the sessions harvested since the project's cursor,
// deduplicated, capped at max_tasks_per_night and split. spent is what
// mining spent; a mining stopped by the budget returns an error wrapping
// [ErrBudget].
func (n Night) tasks(ctx context.Context, d NightDeps, st *nightly.State, rep *Report, snap *harvestSnapshot) ([]nightly.Task, Spend, error) {
	var spent Spend
	var tasks []nightly.Task
	if n.TasksFile != "" {
		tf, err := nightly.LoadTasksFile(n.TasksFile)
		if err != nil {
			return nil, spent, fmt.Errorf("tasks file: %w", err)
		}
		tasks = tf.Tasks
	} else {
		ds, sk, err := n.harvest(st, rep, snap)
		if err != nil {
			return nil, spent, err
		}
		rep.Sessions, rep.Skipped = len(ds), sk
		d.Logger.Info("harvested", "sessions", len(ds), "malformed_lines", sk.MalformedLines, "headless", sk.Headless, "subagent", sk.SubAgent)
		var res *nightly.MineResult
		res, err = n.mine(ctx, d.Optimizer, ds, n.mineBudget())
		if res != nil {
			spent.Tokens += res.Usage.InputTokens + res.Usage.OutputTokens
			spent.Calls += res.Calls
			if n.Cost != nil {
				spent.USD += n.Cost("optimizer", res.Usage)
			}
			tasks, rep.MineDropped = res.Tasks, res.Dropped
		}
		if err != nil {
			return nil, spent, err
		}
		rep.Projects = digestProjects(ds)
		if topic, ok := n.targetTopic(); ok {
			var dropped []nightly.Task
			tasks, dropped = nightly.FilterForSkill(nightly.Dedup(tasks), topic)
			for _, t := range dropped {
				rep.OffTarget = append(rep.OffTarget, TaskSummary{ID: t.ID, Judge: t.Judge.Kind, Origin: cmp.Or(t.Origin, nightly.OriginReal), Intent: clipRunes(t.Intent, 120)})
			}
			if len(dropped) > 0 {
				d.Logger.Info("target_task_filter: tasks that do not exercise the skill left out", "skill", topic.Name, "kept", len(tasks), "left_out", len(dropped))
			}
		}
	}
	tasks = nightly.Dedup(tasks)
	if len(tasks) > n.Config.MaxTasks {
		tasks = tasks[:n.Config.MaxTasks]
	}
	nightly.AssignSplits(tasks, n.Config.Seed, n.Config.ValFraction, n.Config.TestFraction)
	tasks = n.enlarge(tasks, st, rep)
	rep.Tasks = len(tasks)
	rep.Origins = map[string]int{}
	for _, t := range tasks {
		rep.Splits[t.Split]++
		rep.Origins[cmp.Or(t.Origin, nightly.OriginReal)]++
		rep.TaskList = append(rep.TaskList, TaskSummary{ID: t.ID, Split: t.Split, Judge: t.Judge.Kind, Origin: cmp.Or(t.Origin, nightly.OriginReal), Intent: clipRunes(t.Intent, 120)})
	}
	return tasks, spent, nil
}

// enlarge adds to tonight's split tasks the train-only ones of recall_k
// (archived tasks like tonight's train tasks, each with its similarity in
// the report) and of dream_factor (rephrasings of the real and recalled
// train tasks). Neither ever joins val or test.
func (n Night) enlarge(tasks []nightly.Task, st *nightly.State, rep *Report) []nightly.Task {
	if len(tasks) == 0 {
		return tasks
	}
	for _, r := range nightly.Recall(tasks, st.TaskArchive, n.Config.RecallK) {
		tasks = append(tasks, r.Task)
		rep.Recalled = append(rep.Recalled, RecallSummary{ID: r.Task.ID, Archived: r.Task.DerivedFrom, Like: r.Like, Similarity: r.Similarity, Intent: clipRunes(r.Task.Intent, 120)})
	}
	if n.Config.DreamFactor > 0 {
		var seed []nightly.Task
		for _, t := range tasks {
			if t.Split == nightly.SplitTrain {
				seed = append(seed, t)
			}
		}
		tasks = append(tasks, nightly.DreamTasks(seed, n.Config.DreamFactor)...)
	}
	return tasks
}

// harvest reads the project's sessions since its cursor, or takes them
// from snap (a handoff night's later round); a handoff night's first
// round keeps what it read in n.HarvestSnapshot.
func (n Night) harvest(st *nightly.State, rep *Report, snap *harvestSnapshot) ([]nightly.Digest, nightly.Skipped, error) {
	if snap != nil {
		return snap.Digests, snap.Skipped, nil
	}
	ds, sk, err := nightly.Harvest(n.harvestOptions(st, rep.Started))
	if err != nil || n.HarvestSnapshot == "" {
		return ds, sk, err
	}
	s := &harvestSnapshot{Format: snapshotFormat, Project: n.Project, Night: rep.Night, Started: rep.Started, Digests: ds, Skipped: sk}
	return ds, sk, s.save(n.HarvestSnapshot)
}

// harvestOptions reads the project's sessions since its cursor (the
// lookback on a first night), at most max_sessions_per_night of them.
func (n Night) harvestOptions(st *nightly.State, now time.Time) nightly.HarvestOptions {
	c := n.Config
	return nightly.HarvestOptions{
		Source: c.Source, ClaudeHome: n.ClaudeHome, CodexHome: n.CodexHome, CursorHome: n.CursorHome,
		Projects: n.harvestProjects(), Cursors: st.LastHarvest, Now: now,
		Lookback:    time.Duration(c.LookbackHours * float64(time.Hour)),
		MaxSessions: cmp.Or(c.MaxSessions, 3*c.MaxTasks),
	}
}

// harvestProjects are the projects a night reads: the night's own, or
// every one (nil) with scope all.
func (n Night) harvestProjects() []string {
	if n.Config.Scope == nightly.ScopeAll {
		return nil
	}
	return []string{n.Project}
}

// digestProjects are the distinct projects of digests, sorted.
func digestProjects(ds []nightly.Digest) []string {
	var ps []string
	for _, d := range ds {
		if d.Project != "" && !slices.Contains(ps, d.Project) {
			ps = append(ps, d.Project)
		}
	}
	slices.Sort(ps)
	return ps
}

// targetTopic is the topic of the skill the night trains when
// target_task_filter applies: on (the default) and a skill the user named,
// not the managed one, whose SKILL.md (if any) gives its name, headings
// and description.
func (n Night) targetTopic() (nightly.SkillTopic, bool) {
	if f := n.Config.TargetTaskFilter; f != nil && !*f {
		return nightly.SkillTopic{}, false
	}
	dir, entry := n.SkillDir, filepath.Join(n.SkillDir, skillpkg.EntryFile)
	if dir == "" {
		dir, entry = filepath.Dir(n.SkillPath), n.SkillPath
	}
	if filepath.Base(dir) == nightly.ManagedSkillName || dir == "." {
		return nightly.SkillTopic{}, false
	}
	text, _ := os.ReadFile(entry)
	return nightly.TopicOf(string(text), filepath.Base(dir)), true
}

// mine turns digests into tasks: with the model when llm_mine is on and
// there is one, else one heuristic task per session. budget, when set,
// stops model mining before a session it cannot pay for.
func (n Night) mine(ctx context.Context, m llm.Model, ds []nightly.Digest, budget func(llm.Usage, int64) error) (*nightly.MineResult, error) {
	if m == nil || !*n.Config.LLMMine {
		return &nightly.MineResult{Tasks: nightly.MineHeuristic(ds)}, nil
	}
	return nightly.MineLLM(ctx, m, n.OptimizerModel, ds, budget)
}

// mineBudget stops mining at max_tokens_per_night or max_usd_per_night.
func (n Night) mineBudget() func(llm.Usage, int64) error {
	c := n.Config
	return func(u llm.Usage, next int64) error {
		if used := u.InputTokens + u.OutputTokens; c.MaxTokens > 0 && used+next > c.MaxTokens {
			return fmt.Errorf("%w: max_tokens_per_night %d: %d tokens spent mining, the next session needs about %d more", ErrBudget, c.MaxTokens, used, next)
		}
		if u := (llm.Usage{InputTokens: u.InputTokens + next}); n.Cost != nil && c.MaxUSD > 0 && n.Cost("optimizer", u) >= c.MaxUSD {
			return fmt.Errorf("%w: max_usd_per_night $%.4f reached while mining", ErrBudget, c.MaxUSD)
		}
		return nil
	}
}

// Harvested is what `sleep harvest` found.
type Harvested struct {
	Tasks    []nightly.Task
	Sessions int
	Skipped  nightly.Skipped
	// Dropped explains each mined task that was not kept.
	Dropped []string
}

// Harvest is `sleep harvest`: the tasks a night would mine from the
// project's sessions since its cursor, deduplicated and split (not
// capped). optimizer nil mines with the heuristic.
func Harvest(ctx context.Context, n Night, optimizer llm.Model) (*Harvested, error) {
	st, err := nightly.LoadState(n.StatePath)
	if err != nil {
		return nil, err
	}
	if n.Persona != "" {
		if err := nightly.WritePersonaTranscripts(n.Persona, n.ClaudeHome, n.Project, time.Now()); err != nil {
			return nil, err
		}
	}
	ds, sk, err := nightly.Harvest(n.harvestOptions(st, time.Time{}))
	if err != nil {
		return nil, err
	}
	res, err := n.mine(ctx, optimizer, ds, nil)
	if err != nil {
		return nil, err
	}
	h := &Harvested{Tasks: nightly.Dedup(res.Tasks), Sessions: len(ds), Skipped: sk, Dropped: res.Dropped}
	nightly.AssignSplits(h.Tasks, n.Config.Seed, n.Config.ValFraction, n.Config.TestFraction)
	return h, nil
}
