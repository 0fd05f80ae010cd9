package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/backends"
	sleepdrv "github.com/skillfleet/skillfleet/coordinator/sleep"
	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/pkg/config"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/nightly"
	"github.com/skillfleet/skillfleet/pkg/pricing"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

const sleepUsage = `skillfleet sleep improves your agent's skill overnight from your own coding sessions.

Usage: skillfleet sleep <command> [flags]

Commands:
  run         harvest, mine, replay, consolidate, and stage a proposal (a night)
  dry-run     the same night without staging or saving state (it still spends calls)
  status      nights so far, the latest staged proposal, adoptions, the schedule
  harvest     harvest and mine into a tasks file you can review (--output)
  adopt       install the latest (or --staging) accepted proposal; --undo reverts
  schedule    run a night every day (crontab line or systemd user timer)
  unschedule  remove it

Run ` + "`skillfleet sleep <command> --help`" + ` for a command's flags. docs/sleep.md has examples.`

func runSleep(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		fmt.Fprintln(stdout, sleepUsage)
		if len(args) == 0 {
			return usageError{errors.New("sleep: a command is required")}
		}
		return nil
	}
	rest := args[1:]
	switch args[0] {
	case "run":
		return sleepNight(ctx, "run", rest, stdout, stderr)
	case "dry-run":
		return sleepNight(ctx, "dry-run", rest, stdout, stderr)
	case "status":
		return sleepStatus(rest, stdout, stderr)
	case "harvest":
		return sleepHarvest(ctx, rest, stdout, stderr)
	case "adopt":
		return sleepAdopt(rest, stdout, stderr)
	case "schedule", "unschedule":
		return sleepSchedule(args[0], rest, stdout, stderr)
	case "install", "uninstall", "record":
		return sleepAgentCommand(ctx, args[0], rest, stdout, stderr)
	}
	return usageError{fmt.Errorf("sleep: unknown command %q (run, dry-run, status, harvest, adopt, schedule, unschedule)", args[0])}
}

// sleepOpts are the flags of the sleep commands.
type sleepOpts struct {
	configPath                        string
	stateDir, project                 string
	source                            string
	claudeHome, codexHome, cursorHome string
	lookbackHours                     float64
	backend, model, optimizerModel    string
	baseURL, apiKeyEnv                string
	skillPath, memoryPath             string
	skillDir                          string
	noMemory                          bool
	maxTasks, maxSessions             int
	maxTokens                         int64
	maxUSD                            float64
	prices                            string
	editBudget                        int
	noRegression                      bool
	tasksFile                         string
	heuristicMine                     bool
	natsURL                           string
	natsReplicas                      int
	workers, concurrency              int
	persona                           string
	assertImproves, autoAdopt         bool
	jsonOut                           bool
	logLevel                          string
	keepRun                           bool
	set                               map[string]bool
}

func (o *sleepOpts) register(fs *flag.FlagSet, night bool) {
	home, _ := os.UserHomeDir()
	fs.StringVar(&o.configPath, "config", "", "config YAML (default <state-dir>/config.yaml if present); flags override it")
	fs.StringVar(&o.stateDir, "state-dir", filepath.Join(home, ".skillfleet-sleep"), "where the state file (state.json, locked) and night runs live")
	fs.StringVar(&o.project, "project", "", "the project whose sessions are learned from and whose CLAUDE.md is the memory (default: the working directory)")
	fs.StringVar(&o.source, "source", "", "transcripts: claude, codex, cursor or all (default all)")
	fs.StringVar(&o.claudeHome, "claude-home", "", "Claude Code home (default ~/.claude)")
	fs.StringVar(&o.codexHome, "codex-home", "", "Codex home (default ~/.codex)")
	fs.StringVar(&o.cursorHome, "cursor-home", "", "Cursor home (default ~/.cursor)")
	fs.Float64Var(&o.lookbackHours, "lookback-hours", 0, "how far a project's first night looks back (default 72)")
	fs.StringVar(&o.backend, "backend", "", "model backend: "+strings.Join(backends.Implementations(), ", ")+" (sim is the simulated model, a test double)")
	fs.StringVar(&o.model, "model", "", "target model (the one that replays tasks)")
	fs.StringVar(&o.optimizerModel, "optimizer-model", "", "miner, reflector and judge model (default --model)")
	fs.StringVar(&o.baseURL, "base-url", "", "API base URL (openai_compatible, azure)")
	fs.StringVar(&o.apiKeyEnv, "api-key-env", "", "environment variable holding the API key (the key itself never goes on the command line)")
	fs.StringVar(&o.skillPath, "skill-path", "", "the live skill file (default ~/.claude/skills/skillfleet-sleep-learned/SKILL.md)")
	fs.StringVar(&o.memoryPath, "memory-path", "", "the live memory file (default <project>/CLAUDE.md)")
	fs.StringVar(&o.skillDir, "skill-dir", "", "a skill package directory (SKILL.md, references/, scripts/) to train whole instead of --skill-path's one SKILL.md")
	fs.BoolVar(&o.noMemory, "no-memory", false, "do not evolve the memory file")
	fs.IntVar(&o.maxTasks, "max-tasks", 0, "tasks replayed per night (default 40)")
	fs.IntVar(&o.maxSessions, "max-sessions", 0, "sessions mined per night (default 3 × max tasks)")
	fs.StringVar(&o.tasksFile, "tasks-file", "", "use this reviewed tasks file (from `sleep harvest --output`) instead of harvesting")
	fs.BoolVar(&o.heuristicMine, "heuristic-mine", false, "mine without the model (one rubric task per session)")
	fs.StringVar(&o.persona, "persona", "", "proof run: the built-in persona's sessions in a sandbox ("+strings.Join(nightly.Personas(), ", ")+")")
	fs.StringVar(&o.logLevel, "log-level", "warn", "log level: debug, info, warn, error")
	fs.BoolVar(&o.jsonOut, "json", false, "print the result as JSON")
	if !night {
		return
	}
	fs.Int64Var(&o.maxTokens, "max-tokens", 0, "token budget of the night (unset: max_tokens_per_night, default 400000; 0 = none)")
	fs.Float64Var(&o.maxUSD, "max-usd", 0, "dollar budget of the night at the price table's prices (0 = none)")
	fs.StringVar(&o.prices, "prices", "", "price table YAML for --max-usd (default: the built-in table)")
	fs.IntVar(&o.editBudget, "edit-budget", 0, "edits one reflection may propose (default 4)")
	fs.BoolVar(&o.noRegression, "no-regression", false, "refuse an edit under which any val task scores lower")
	fs.StringVar(&o.natsURL, "nats", "", "NATS URL of a fleet (default: an embedded server and in-process workers)")
	fs.IntVar(&o.natsReplicas, "nats-replicas", 0, "servers of a NATS cluster that keep the task stream and run directory (0 = keep the current count, 1 for new ones)")
	fs.IntVar(&o.workers, "workers", 2, "in-process workers (0 = only the fleet's workers)")
	fs.IntVar(&o.concurrency, "concurrency", 8, "replays each in-process worker runs at once")
	fs.BoolVar(&o.assertImproves, "assert-improves", false, "exit 5 unless the night is accepted with a higher fresh val score (and, for a persona, without its harmful rule)")
	fs.BoolVar(&o.autoAdopt, "auto-adopt", false, "adopt an accepted night at once (opt-in)")
	fs.BoolVar(&o.keepRun, "keep-run", false, "keep the night's run dir (result journal, NATS store)")
}

// resolved is a night's resolved setup.
type resolved struct {
	cfg                 nightly.Config
	statePath           string
	project             string
	skillPath, memPath  string
	stagingRoot         string
	claude, codex, curs string
	persona             string
	// adoptCmd is the adopt command line for this project.
	adoptCmd string
	// skillDir is the live skill package directory (absolute, symlinks
	// resolved) when the night trains a package; skillPath is then its
	// SKILL.md.
	skillDir string
}

func (o *sleepOpts) resolve(fs *flag.FlagSet) (*resolved, error) {
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	r := &resolved{}
	if o.persona != "" {
		if !contains(nightly.Personas(), o.persona) {
			return nil, usageError{fmt.Errorf("--persona %q: want one of %s", o.persona, strings.Join(nightly.Personas(), ", "))}
		}
		if !o.set["state-dir"] {
			dir, err := os.MkdirTemp("", "skillfleet-sleep-persona-")
			if err != nil {
				return nil, err
			}
			o.stateDir = dir
		}
		box := filepath.Join(o.stateDir, "persona-"+o.persona)
		r.persona = box
		o.claudeHome = filepath.Join(box, "claude")
		o.project = filepath.Join(box, "project")
		o.source = nightly.SourceClaude
		if name, _, ok := nightly.PersonaPackage(o.persona); ok {
			if o.skillDir == "" && o.skillPath == "" {
				o.skillDir = filepath.Join(box, "skills", name)
			}
		} else if o.skillPath == "" && o.skillDir == "" {
			o.skillPath = filepath.Join(box, "skills", nightly.ManagedSkillName, "SKILL.md")
		}
	}
	abs, err := filepath.Abs(o.stateDir)
	if err != nil {
		return nil, err
	}
	o.stateDir = abs
	cp, explicit := o.configPath, true
	if cp == "" {
		cp, explicit = filepath.Join(o.stateDir, "config.yaml"), false
	}
	cfg, err := nightly.LoadConfig(cp, explicit)
	if err != nil {
		return nil, usageError{err}
	}
	set := func(name string, apply func()) {
		if o.set[name] {
			apply()
		}
	}
	set("source", func() { cfg.Source = o.source })
	if o.persona != "" {
		cfg.Source = nightly.SourceClaude
	}
	set("lookback-hours", func() { cfg.LookbackHours = o.lookbackHours })
	set("backend", func() { cfg.Backend = o.backend })
	set("model", func() { cfg.Model = o.model })
	set("optimizer-model", func() { cfg.OptimizerModel = o.optimizerModel })
	set("base-url", func() { cfg.BaseURL = o.baseURL })
	set("api-key-env", func() { cfg.APIKeyEnv = o.apiKeyEnv })
	// A flag naming the skill overrides the config's skill_path and
	// skill_dir alike; both flags at once are refused below.
	set("skill-path", func() {
		cfg.SkillPath = o.skillPath
		if !o.set["skill-dir"] {
			cfg.SkillDir = ""
		}
	})
	set("skill-dir", func() {
		cfg.SkillDir = o.skillDir
		if !o.set["skill-path"] {
			cfg.SkillPath = ""
		}
	})
	set("memory-path", func() { cfg.MemoryPath = o.memoryPath })
	set("max-tasks", func() { cfg.MaxTasks = o.maxTasks })
	set("max-sessions", func() { cfg.MaxSessions = o.maxSessions })
	set("max-tokens", func() { cfg.MaxTokens = o.maxTokens })
	set("max-usd", func() { cfg.MaxUSD = o.maxUSD })
	set("edit-budget", func() { cfg.EditBudget = o.editBudget })
	set("no-regression", func() { cfg.GateNoRegression = o.noRegression })
	set("auto-adopt", func() { cfg.AutoAdopt = o.autoAdopt })
	if o.persona != "" && cfg.SkillPath == "" && cfg.SkillDir == "" {
		cfg.SkillPath, cfg.SkillDir = o.skillPath, o.skillDir
	}
	if o.noMemory {
		f := false
		cfg.EvolveMemory = &f
	}
	if o.heuristicMine {
		f := false
		cfg.LLMMine = &f
	}
	if err := cfg.Validate(); err != nil {
		return nil, usageError{fmt.Errorf("flags: %w", err)}
	}
	if cfg.Backend != "" && !contains(backends.Implementations(), cfg.Backend) {
		from := "flags"
		if !o.set["backend"] {
			from = "config " + cp
		}
		return nil, usageError{fmt.Errorf("%s: backend: %q is not a known backend (want one of %s)", from, cfg.Backend, strings.Join(backends.Implementations(), ", "))}
	}
	if cfg.Model == "" && cfg.Backend == backends.BackendSim {
		cfg.Model = "sim"
	}
	r.cfg = cfg
	r.statePath = filepath.Join(o.stateDir, "state.json")
	proj := o.project
	if proj == "" {
		if proj, err = os.Getwd(); err != nil {
			return nil, err
		}
	}
	if r.project, err = filepath.Abs(proj); err != nil {
		return nil, err
	}
	home, _ := os.UserHomeDir()
	r.skillPath = cmp.Or(cfg.SkillPath, filepath.Join(home, ".claude", "skills", nightly.ManagedSkillName, "SKILL.md"))
	r.memPath = cmp.Or(cfg.MemoryPath, filepath.Join(r.project, "CLAUDE.md"))
	for _, p := range []*string{&r.skillPath, &r.memPath} {
		if *p, err = filepath.Abs(*p); err != nil {
			return nil, err
		}
	}
	// The skill is a package when skill_dir names one, or skill_path
	// names a directory (a file path never does). skill_path naming a
	// SKILL.md is that one file, as always, even in a package directory.
	dir := cfg.SkillDir
	if st, err := os.Stat(r.skillPath); dir == "" && err == nil && st.IsDir() {
		dir = r.skillPath
	}
	if dir != "" {
		if r.skillDir, err = packageDir(dir); err != nil {
			return nil, usageError{err}
		}
		r.skillPath = filepath.Join(r.skillDir, skillpkg.EntryFile)
	}
	r.stagingRoot = filepath.Join(r.project, ".skillfleet-sleep", "staging")
	r.claude, r.codex, r.curs = o.claudeHome, o.codexHome, o.cursorHome
	r.adoptCmd = "skillfleet sleep adopt --project " + r.project
	switch {
	case o.persona != "":
		r.adoptCmd = "skillfleet sleep adopt --persona " + o.persona + " --state-dir " + o.stateDir
	case r.skillDir != "" && (o.set["skill-dir"] || o.set["skill-path"] || o.set["memory-path"]):
		r.adoptCmd += " --skill-dir " + r.skillDir + " --memory-path " + r.memPath
	case o.set["skill-path"] || o.set["memory-path"]:
		r.adoptCmd += " --skill-path " + r.skillPath + " --memory-path " + r.memPath
	}
	return r, nil
}

// packageDir returns a skill package directory's absolute path with its
// symlinks resolved (a skills directory often links to a checkout; adopt
// swaps the real directory, and the link keeps pointing at it). A path
// that does not exist yet is kept: the night starts it from a scaffold.
func packageDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	target, err := filepath.EvalSymlinks(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return abs, nil
	case err != nil:
		return "", fmt.Errorf("skill_dir %s: %w", dir, err)
	}
	if st, err := os.Stat(target); err != nil || !st.IsDir() {
		return "", fmt.Errorf("skill_dir %s: not a directory", dir)
	}
	return target, nil
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// modelSpec is the proto spec of a role.
func (r *resolved) modelSpec(optimizer bool) (*pb.ModelSpec, error) {
	c := r.cfg
	if c.Backend == "" {
		return nil, usageError{errors.New("--backend is required (or backend: in the config): " + strings.Join(backends.Implementations(), ", "))}
	}
	model := c.Model
	if optimizer && c.OptimizerModel != "" {
		model = c.OptimizerModel
	}
	if model == "" {
		return nil, usageError{fmt.Errorf("--model is required for backend %s", c.Backend)}
	}
	return &pb.ModelSpec{Backend: c.Backend, Model: model, BaseUrl: c.BaseURL, ApiKeyEnv: c.APIKeyEnv, TimeoutMs: (5 * time.Minute).Milliseconds()}, nil
}

func readDoc(path string) (string, string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", nil
	}
	if err != nil {
		return "", "", err
	}
	return string(b), nightly.SHA256Hex(b), nil
}

// nightReport is report.json.
type nightReport struct {
	Night       int                `json:"night"`
	Project     string             `json:"project"`
	Started     time.Time          `json:"started"`
	Backend     string             `json:"backend"`
	Model       string             `json:"model"`
	DryRun      bool               `json:"dry_run,omitempty"`
	Sessions    int                `json:"sessions"`
	Skipped     nightly.Skipped    `json:"skipped"`
	Tasks       int                `json:"tasks"`
	Splits      map[string]int     `json:"splits"`
	MineDropped []string           `json:"mine_dropped,omitempty"`
	Outcome     *sleepdrv.Outcome  `json:"outcome"`
	SkillPath   string             `json:"skill_path"`
	SkillDir    string             `json:"skill_dir,omitempty"`
	MemoryPath  string             `json:"memory_path"`
	Staging     string             `json:"staging,omitempty"`
	AdoptCmd    string             `json:"adopt_command,omitempty"`
	TaskList    []sleepTaskSummary `json:"task_list"`
}

type sleepTaskSummary struct {
	ID     string `json:"id"`
	Split  string `json:"split"`
	Judge  string `json:"judge"`
	Intent string `json:"intent"`
}

func sleepNight(ctx context.Context, mode string, args []string, stdout, stderr io.Writer) error {
	var o sleepOpts
	fs := newFlagSet("sleep "+mode, "sleep "+mode+" [flags]", stderr)
	o.register(fs, true)
	if help, err := parse(fs, args); help || err != nil {
		return err
	}
	log, err := newLogger(stderr, "text", o.logLevel)
	if err != nil {
		return err
	}
	r, err := o.resolve(fs)
	if err != nil {
		return err
	}
	dry := mode == "dry-run"
	target, err := r.modelSpec(false)
	if err != nil {
		return err
	}
	optSpec, err := r.modelSpec(true)
	if err != nil {
		return err
	}
	cost, err := sleepCost(r.cfg, o.prices, target, optSpec)
	if err != nil {
		return usageError{err}
	}
	unlock, err := nightly.LockState(r.statePath)
	if err != nil {
		if errors.Is(err, nightly.ErrLocked) {
			return codedError{exitLocked, err}
		}
		return err
	}
	defer unlock()
	st, err := nightly.LoadState(r.statePath)
	if err != nil {
		return err
	}
	started := time.Now().UTC()
	nightNo := st.Night + 1
	modelKey := r.cfg.Backend + "/" + target.GetModel() + "/" + optSpec.GetModel()
	if st.LastModelKey != "" && st.LastModelKey != modelKey {
		log.Warn("the backend or model changed since the last night; scores do not compare across models", "was", st.LastModelKey, "now", modelKey)
	}
	if r.persona != "" {
		if ents, _ := os.ReadDir(filepath.Join(r.claude, "projects")); len(ents) == 0 {
			if err := nightly.WritePersonaTranscripts(o.persona, r.claude, r.project, started); err != nil {
				return err
			}
		}
		if err := os.MkdirAll(r.project, 0o755); err != nil {
			return err
		}
		if err := seedPersonaPackage(o.persona, r.skillDir); err != nil {
			return err
		}
		fmt.Fprintf(stdout, "skillfleet sleep: persona %s sandbox %s\n", o.persona, r.persona)
	}
	optimizer, err := modelFactory(nil, backends.NewLimiter(nil, nil))(optSpec)
	if err != nil {
		return usageError{fmt.Errorf("backend %s: %w", r.cfg.Backend, err)}
	}

	rep := &nightReport{Night: nightNo, Project: r.project, Started: started, Backend: r.cfg.Backend, Model: target.GetModel(),
		DryRun: dry, SkillPath: r.skillPath, SkillDir: r.skillDir, MemoryPath: r.memPath, Splits: map[string]int{}, AdoptCmd: r.adoptCmd}
	spent := sleepdrv.Spend{}
	var tasks []nightly.Task
	if o.tasksFile != "" {
		tf, err := nightly.LoadTasksFile(o.tasksFile)
		if err != nil {
			return usageError{fmt.Errorf("--tasks-file: %w", err)}
		}
		if !tf.Reviewed && r.cfg.Backend != "sim" {
			return usageError{fmt.Errorf("--tasks-file %s: \"reviewed\" is false; read the tasks, then set it to true", o.tasksFile)}
		}
		tasks = tf.Tasks
	} else {
		ds, sk, err := nightly.Harvest(nightly.HarvestOptions{
			Source: r.cfg.Source, ClaudeHome: r.claude, CodexHome: r.codex, CursorHome: r.curs,
			Projects: []string{r.project}, Cursors: st.LastHarvest, Now: started,
			Lookback:    time.Duration(r.cfg.LookbackHours * float64(time.Hour)),
			MaxSessions: cmp.Or(r.cfg.MaxSessions, 3*r.cfg.MaxTasks),
		})
		if err != nil {
			return usageError{err}
		}
		rep.Sessions, rep.Skipped = len(ds), sk
		log.Info("harvested", "sessions", len(ds), "malformed_lines", sk.MalformedLines, "headless", sk.Headless, "subagent", sk.SubAgent)
		if *r.cfg.LLMMine {
			res, err := nightly.MineLLM(ctx, optimizer, optSpec.GetModel(), ds, func(u llm.Usage, next int64) error {
				if used := u.InputTokens + u.OutputTokens; r.cfg.MaxTokens > 0 && used+next > r.cfg.MaxTokens {
					return fmt.Errorf("%w: max_tokens_per_night %d: %d tokens spent mining, the next session needs about %d more", sleepdrv.ErrBudget, r.cfg.MaxTokens, used, next)
				}
				if u := (llm.Usage{InputTokens: u.InputTokens + next}); cost != nil && r.cfg.MaxUSD > 0 && cost("optimizer", u) >= r.cfg.MaxUSD {
					return fmt.Errorf("%w: max_usd_per_night $%.4f reached while mining", sleepdrv.ErrBudget, r.cfg.MaxUSD)
				}
				return nil
			})
			if res != nil {
				spent.Tokens += res.Usage.InputTokens + res.Usage.OutputTokens
				spent.Calls += res.Calls
				if cost != nil {
					spent.USD += cost("optimizer", res.Usage)
				}
				tasks, rep.MineDropped = res.Tasks, res.Dropped
			}
			if err != nil {
				if errors.Is(err, sleepdrv.ErrBudget) {
					out := &sleepdrv.Outcome{Action: sleepdrv.ActionStoppedBudget, Reason: err.Error(), Spend: spent}
					return finishNight(ctx, o, r, st, rep, out, nil, nil, started, dry, stdout, log, err)
				}
				return err
			}
		} else {
			tasks = nightly.MineHeuristic(ds)
		}
	}
	tasks = nightly.Dedup(tasks)
	if len(tasks) > r.cfg.MaxTasks {
		tasks = tasks[:r.cfg.MaxTasks]
	}
	nightly.AssignSplits(tasks, r.cfg.Seed, r.cfg.ValFraction, r.cfg.TestFraction)
	rep.Tasks = len(tasks)
	for _, t := range tasks {
		rep.Splits[t.Split]++
		rep.TaskList = append(rep.TaskList, sleepTaskSummary{ID: t.ID, Split: t.Split, Judge: t.Judge.Kind, Intent: clipRunes(t.Intent, 120)})
	}

	var (
		skill, skillPin string
		live            *nightly.LivePackage
	)
	if r.skillDir != "" {
		if live, err = nightly.ReadPackage(r.skillDir, skillpkg.Limits{}); err != nil {
			return err
		}
		skill = live.Text
	} else {
		if skill, skillPin, err = readDoc(r.skillPath); err != nil {
			return err
		}
		if skill, err = nightly.EnsureBlock(skill, nightly.ScaffoldSkill); err != nil {
			return fmt.Errorf("%s: %w", r.skillPath, err)
		}
		if hasPackageFiles(filepath.Dir(r.skillPath)) {
			log.Warn("the skill's directory holds references/ or scripts/; this night trains SKILL.md alone (pass --skill-dir to train the whole package)", "skill_path", r.skillPath)
		}
	}
	memory, memPin, err := readDoc(r.memPath)
	if err != nil {
		return err
	}
	if memory, err = nightly.EnsureBlock(memory, nightly.ScaffoldMemory); err != nil {
		return fmt.Errorf("%s: %w", r.memPath, err)
	}
	if len(tasks) == 0 {
		out := &sleepdrv.Outcome{Action: sleepdrv.ActionNoTasks, Reason: "no new sessions with tasks to learn from", Spend: spent}
		return finishNight(ctx, o, r, st, rep, out, nil, nil, started, dry, stdout, log, nil)
	}

	// The replays run on the fleet: an embedded NATS server with
	// in-process workers, or --nats with external ones.
	runDir := filepath.Join(o.stateDir, "runs", fmt.Sprintf("night-%04d-%s-%d", nightNo, started.Format("20060102-150405"), os.Getpid()))
	if !o.keepRun {
		defer os.RemoveAll(runDir)
	}
	runID := filepath.Base(runDir)
	var to trainOpts
	tfs := flag.NewFlagSet("sleep-session", flag.ContinueOnError)
	tfs.SetOutput(io.Discard)
	to.register(tfs, false)
	_ = tfs.Parse(nil)
	to.natsURL, to.workers, to.concurrency, to.logLevel = o.natsURL, o.workers, o.concurrency, o.logLevel
	to.noSync, to.nats.replicas = true, o.natsReplicas
	ccfg := &config.Config{}
	ccfg.Runtime.Workers, ccfg.Runtime.RolloutConcurrency, ccfg.Runtime.OptimizerConcurrency, ccfg.Runtime.MaxDeliveries = o.workers, o.concurrency, 1, 3
	sess, err := startSession(ctx, to, ccfg, runDir, runID, &trainer.Settings{}, nil, log, stderr)
	if err != nil {
		return err
	}
	benchCfg, _ := json.Marshal(nightly.EnvConfig{JudgeModel: optSpec.GetModel()})
	replayer := &sleepdrv.HubReplayer{Hub: sess.hub, RunID: runID, Target: target, BenchConfig: benchCfg, Timeout: 10 * time.Minute}
	settings := sleepdrv.Settings{
		EditBudget: r.cfg.EditBudget, GateMetric: r.cfg.GateMetric, MixedWeight: r.cfg.GateMixedWeight, NoRegression: r.cfg.GateNoRegression,
		EvolveSkill: *r.cfg.EvolveSkill, EvolveMemory: *r.cfg.EvolveMemory, MaxTokens: r.cfg.MaxTokens, MaxUSD: r.cfg.MaxUSD,
		Spent: spent, Cost: cost, Preferences: r.cfg.Preferences,
	}
	out, cerr := sleepdrv.Consolidate(ctx, settings, sleepdrv.Deps{Replayer: replayer, Optimizer: optimizer, OptimizerName: optSpec.GetModel(), Logger: log},
		sleepdrv.Input{Tasks: tasks, Skill: skill, Memory: memory, Package: live != nil})
	sess.close()
	if cerr != nil && ctx.Err() != nil {
		return codedError{exitStopped, fmt.Errorf("night %d stopped on request; nothing was staged and the state is unchanged", nightNo)}
	}
	if cerr != nil && !errors.Is(cerr, sleepdrv.ErrBudget) {
		return cerr
	}
	var props []nightly.Proposal
	if out.Accepted {
		switch {
		case out.SkillChanged && live != nil:
			props = append(props, nightly.Proposal{Name: "skill", Package: true, LivePath: live.Dir, LiveExisted: live.Existed, LiveFiles: live.Pins, Text: out.ProposedSkill})
		case out.SkillChanged:
			props = append(props, nightly.Proposal{Name: "skill", LivePath: r.skillPath, LiveSHA256: skillPin, Text: out.ProposedSkill})
		}
		if out.MemoryChanged {
			props = append(props, nightly.Proposal{Name: "memory", LivePath: r.memPath, LiveSHA256: memPin, Text: out.ProposedMemory})
		}
	}
	return finishNight(ctx, o, r, st, rep, out, props, tasks, started, dry, stdout, log, cerr)
}

// finishNight stages the night, updates the state, adopts if asked, and
// reports. cause is the night's budget error, if any.
func finishNight(_ context.Context, o sleepOpts, r *resolved, st *nightly.State, rep *nightReport, out *sleepdrv.Outcome, props []nightly.Proposal,
	archived []nightly.Task, started time.Time, dry bool, stdout io.Writer, log *slog.Logger, cause error) error {
	rep.Outcome = out
	if !dry {
		if err := os.MkdirAll(filepath.Dir(r.stagingRoot), 0o755); err != nil {
			return err
		}
		var ev []any
		for _, rp := range out.Replays {
			ev = append(ev, rp)
		}
		for _, tr := range out.Trials {
			ev = append(ev, map[string]any{"trial": tr})
		}
		for _, d := range rep.MineDropped {
			ev = append(ev, map[string]any{"mine_dropped": d})
		}
		dir, err := nightly.Stage(nightly.StageInput{Root: r.stagingRoot, Night: rep.Night, Started: started, Accepted: out.Accepted && len(props) > 0,
			Action: out.Action, Reason: out.Reason, Proposals: props, ReportJSON: rep, ReportMD: reportMD(rep), Evidence: ev})
		if err != nil {
			return err
		}
		rep.Staging = dir
		st.Night = rep.Night
		stopped := out.Action == sleepdrv.ActionStoppedBudget
		if !stopped {
			// The sessions up to the night's start are learned from; a
			// night stopped by its budget leaves them for the next one.
			st.LastHarvest[r.project] = started
			st.Archive(archived)
		}
		st.History = append(st.History, nightly.NightRecord{Night: rep.Night, Started: started, Sessions: rep.Sessions, Tasks: rep.Tasks,
			Action: out.Action, Reason: out.Reason, Baseline: out.Baseline.Value, Final: finalValue(out), Tokens: out.Spend.Tokens, Staging: dir})
		if len(st.History) > 100 {
			st.History = st.History[len(st.History)-100:]
		}
		st.LastModelKey = r.cfg.Backend + "/" + r.cfg.Model + "/" + cmp.Or(r.cfg.OptimizerModel, r.cfg.Model)
		if err := st.Save(r.statePath); err != nil {
			return err
		}
	}
	if o.jsonOut {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintln(stdout, nightly.Redact(string(b)))
	} else {
		fmt.Fprint(stdout, nightly.Redact(summaryText(rep)))
	}
	if cause != nil {
		return codedError{exitBudget, fmt.Errorf("night %d stopped: %w; nothing was accepted (raise max_tokens_per_night / --max-tokens, or --max-usd)", rep.Night, cause)}
	}
	if !dry && r.cfg.AutoAdopt && out.Accepted && rep.Staging != "" {
		rec, err := nightly.Adopt(nightly.AdoptOptions{StagingDir: rep.Staging, AllowedRoots: allowedRoots(r)})
		if err != nil {
			return fmt.Errorf("auto-adopt: %w", err)
		}
		fmt.Fprintf(stdout, "adopted: %d file(s); undo with: %s --undo\n", len(rec.Files), r.adoptCmd)
	}
	if o.assertImproves {
		ok := out.Accepted && out.Final != nil && out.Final.Value > out.Baseline.Value
		if ok && r.persona != "" && strings.Contains(out.ProposedSkill+out.ProposedMemory, nightly.HabitHarmful) {
			ok = false
		}
		if !ok {
			return codedError{exitNoImprove, fmt.Errorf("--assert-improves: the night did not improve (%s: %s)", out.Action, out.Reason)}
		}
	}
	log.Info("night done", "night", rep.Night, "action", out.Action)
	return nil
}

func finalValue(out *sleepdrv.Outcome) float64 {
	if out.Final != nil {
		return out.Final.Value
	}
	return out.Baseline.Value
}

func allowedRoots(r *resolved) []string {
	return []string{r.project, filepath.Dir(r.skillPath), filepath.Dir(r.memPath)}
}

func clipRunes(s string, n int) string {
	rs := []rune(s)
	if len(rs) <= n {
		return s
	}
	return string(rs[:n]) + "…"
}

func summaryText(rep *nightReport) string {
	out := rep.Outcome
	var b strings.Builder
	mode := "night"
	if rep.DryRun {
		mode = "dry run of night"
	}
	fmt.Fprintf(&b, "skillfleet sleep: %s %d of %s (%s/%s)\n", mode, rep.Night, rep.Project, rep.Backend, rep.Model)
	fmt.Fprintf(&b, "sessions %d, tasks %d (train %d, val %d, test %d)\n", rep.Sessions, rep.Tasks, rep.Splits["train"], rep.Splits["val"], rep.Splits["test"])
	fmt.Fprintf(&b, "val score: baseline %.3f", out.Baseline.Value)
	if out.Final != nil {
		fmt.Fprintf(&b, " → %.3f on fresh replays", out.Final.Value)
	}
	fmt.Fprintln(&b)
	for _, tr := range out.Trials {
		mark := "rejected"
		if tr.Accepted {
			mark = "accepted"
		}
		fmt.Fprintf(&b, "  %-8s %s %s %q: %s\n", mark, editDoc(tr.Document, tr.Edit), tr.Edit.Op, clipRunes(cmp.Or(tr.Edit.Content, tr.Edit.Anchor), 80), tr.Why)
	}
	if len(out.Refused) > 0 {
		fmt.Fprintf(&b, "refused: %d edits (%s)\n", len(out.Refused), reasonCounts(out.RefusedByReason))
	}
	fmt.Fprintf(&b, "action: %s (%s)\n", out.Action, out.Reason)
	if out.Package {
		fmt.Fprintf(&b, "package: %s", rep.SkillDir)
		if len(out.FilesChanged) > 0 {
			fmt.Fprintf(&b, " (files changed: %s)", strings.Join(out.FilesChanged, ", "))
		}
		fmt.Fprintln(&b)
	}
	fmt.Fprintf(&b, "spent: %d tokens, %d calls", out.Spend.Tokens, out.Spend.Calls)
	if out.Spend.USD > 0 {
		fmt.Fprintf(&b, ", $%.4f", out.Spend.USD)
	}
	fmt.Fprintln(&b)
	if rep.Staging != "" {
		fmt.Fprintf(&b, "staged: %s\n", rep.Staging)
		if out.Accepted {
			fmt.Fprintf(&b, "adopt with: %s\n", rep.AdoptCmd)
		}
	}
	return b.String()
}

func reportMD(rep *nightReport) string {
	out := rep.Outcome
	var b strings.Builder
	fmt.Fprintf(&b, "# skillfleet sleep — night %d\n\n", rep.Night)
	fmt.Fprintf(&b, "- project: `%s`\n- started: %s\n- backend: %s, model %s\n- sessions: %d; tasks: %d (train %d, val %d, test %d)\n",
		rep.Project, rep.Started.Format(time.RFC3339), rep.Backend, rep.Model, rep.Sessions, rep.Tasks, rep.Splits["train"], rep.Splits["val"], rep.Splits["test"])
	fmt.Fprintf(&b, "- skipped: %d malformed lines, %d huge lines, %d headless and %d sub-agent sessions\n",
		rep.Skipped.MalformedLines, rep.Skipped.HugeLines, rep.Skipped.Headless, rep.Skipped.SubAgent)
	fmt.Fprintf(&b, "\n## Decision: %s\n\n%s\n\n", out.Action, out.Reason)
	fmt.Fprintf(&b, "| | score | hard | soft | tasks |\n|---|---|---|---|---|\n| baseline | %.3f | %.3f | %.3f | %d |\n", out.Baseline.Value, out.Baseline.Hard, out.Baseline.Soft, out.Baseline.N)
	if out.Final != nil {
		fmt.Fprintf(&b, "| final (fresh replays) | %.3f | %.3f | %.3f | %d |\n", out.Final.Value, out.Final.Hard, out.Final.Soft, out.Final.N)
	}
	if len(out.Trials) > 0 {
		b.WriteString("\n## Edits tried\n\n| document | op | text | before | after | kept | why |\n|---|---|---|---|---|---|---|\n")
		for _, tr := range out.Trials {
			fmt.Fprintf(&b, "| %s | %s | %s | %.3f | %.3f | %t | %s |\n", editDoc(tr.Document, tr.Edit), tr.Edit.Op, mdCell(cmp.Or(tr.Edit.Content, tr.Edit.Anchor)), tr.Before, tr.After, tr.Accepted, tr.Why)
		}
	}
	if out.Package {
		fmt.Fprintf(&b, "\n## Skill package\n\n`%s`; files the proposal changes: %s\n", rep.SkillDir, cmp.Or(strings.Join(out.FilesChanged, ", "), "none"))
	}
	if len(out.Refused) > 0 {
		fmt.Fprintf(&b, "\n## Edits refused (%s)\n\n| document | file | op | reason | detail |\n|---|---|---|---|---|\n", reasonCounts(out.RefusedByReason))
		for _, r := range out.Refused {
			fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", r.Document, mdCell(r.Edit.File), mdCell(r.Edit.Op), r.Reason, mdCell(r.Detail))
		}
	}
	if len(out.Unmatched) > 0 {
		b.WriteString("\n## Edits that matched nothing\n\n")
		for _, u := range out.Unmatched {
			fmt.Fprintf(&b, "- %s %q: %s\n", u.Edit.Op, cmp.Or(u.Edit.Content, u.Edit.Anchor), u.Reason)
		}
	}
	fmt.Fprintf(&b, "\n## Spend\n\n%d tokens in %d calls", out.Spend.Tokens, out.Spend.Calls)
	if out.Spend.USD > 0 {
		fmt.Fprintf(&b, ", $%.4f", out.Spend.USD)
	}
	b.WriteString("\n")
	if out.Accepted {
		fmt.Fprintf(&b, "\nAdopt: `%s`\n", rep.AdoptCmd)
	}
	return b.String()
}

// editDoc names the document an edit touches: "skill", or "skill FILE"
// for a package file.
func editDoc(doc string, e nightly.Edit) string {
	if nightly.IsFileEdit(e) {
		return doc + " " + e.File
	}
	return doc
}

// mdCell is text for one cell of a Markdown table.
func mdCell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", "\\|"), "\n", " ")
}

// reasonCounts renders refusal counts as "reason n, ...", by reason.
func reasonCounts(m map[string]int) string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	parts := make([]string, len(ks))
	for i, k := range ks {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// hasPackageFiles reports whether dir holds references/ or scripts/.
func hasPackageFiles(dir string) bool {
	for _, sub := range []string{"references", "scripts"} {
		if st, err := os.Stat(filepath.Join(dir, sub)); err == nil && st.IsDir() {
			return true
		}
	}
	return false
}

// seedPersonaPackage writes a persona's starting skill package to dir
// when the persona has one and dir does not exist yet.
func seedPersonaPackage(persona, dir string) error {
	_, files, ok := nightly.PersonaPackage(persona)
	if !ok || dir == "" {
		return nil
	}
	if _, err := os.Lstat(dir); err == nil {
		return nil
	}
	p, err := skillpkg.New(files, skillpkg.Limits{})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return err
	}
	return skillpkg.Write(p, dir)
}

// sleepCost prices a role's usage for --max-usd; nil when there is no
// dollar budget. A model without a price is refused, not guessed.
func sleepCost(c nightly.Config, pricesPath string, target, opt *pb.ModelSpec) (func(string, llm.Usage) float64, error) {
	if c.MaxUSD <= 0 {
		return nil, nil
	}
	t := pricing.Default()
	if pricesPath != "" {
		var err error
		if t, err = pricing.Load(pricesPath); err != nil {
			return nil, fmt.Errorf("--prices: %w", err)
		}
	}
	for _, m := range []string{target.GetModel(), opt.GetModel()} {
		if _, _, ok := t.Lookup(m); !ok {
			return nil, fmt.Errorf("max_usd_per_night: the price table %s has no price for model %q; pass one that has with --prices FILE", t.Source(), m)
		}
	}
	return func(role string, u llm.Usage) float64 {
		m := target.GetModel()
		if role == "optimizer" {
			m = opt.GetModel()
		}
		v, _ := t.Cost(m, u.InputTokens, u.CacheReadTokens, u.OutputTokens)
		return v
	}, nil
}

func sleepStatus(args []string, stdout, stderr io.Writer) error {
	var o sleepOpts
	fs := newFlagSet("sleep status", "sleep status [--project DIR] [--state-dir DIR]", stderr)
	o.register(fs, false)
	if help, err := parse(fs, args); help || err != nil {
		return err
	}
	r, err := o.resolve(fs)
	if err != nil {
		return err
	}
	st, err := nightly.LoadState(r.statePath)
	if err != nil {
		return err
	}
	type status struct {
		State       string                `json:"state"`
		Nights      int                   `json:"nights"`
		Cursors     map[string]string     `json:"cursors"`
		Recent      []nightly.NightRecord `json:"recent"`
		Latest      string                `json:"latest_staging,omitempty"`
		LatestState string                `json:"latest_action,omitempty"`
		Adoptions   []nightly.Receipt     `json:"adoptions,omitempty"`
		Interrupted bool                  `json:"interrupted_adopt,omitempty"`
		Archive     int                   `json:"archived_tasks"`
	}
	s := status{State: r.statePath, Nights: st.Night, Cursors: map[string]string{}, Archive: len(st.TaskArchive)}
	for p, t := range st.LastHarvest {
		s.Cursors[p] = t.Format(time.RFC3339)
	}
	if n := len(st.History); n > 0 {
		s.Recent = st.History[max(0, n-5):]
	}
	if dir, err := nightly.Latest(r.stagingRoot); err == nil {
		s.Latest = dir
		if m, err := nightly.ReadManifest(dir); err == nil {
			s.LatestState = fmt.Sprintf("%s (accepted: %t) %s", m.Action, m.Accepted, m.Reason)
		} else {
			s.LatestState = err.Error()
		}
	}
	s.Adoptions, _ = nightly.Receipts(r.stagingRoot)
	s.Interrupted = nightly.PendingTransaction(r.stagingRoot)
	if o.jsonOut {
		b, _ := json.MarshalIndent(s, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return nil
	}
	fmt.Fprintf(stdout, "state: %s (%d nights, %d archived tasks)\n", s.State, s.Nights, s.Archive)
	var ps []string
	for p := range s.Cursors {
		ps = append(ps, p)
	}
	sort.Strings(ps)
	for _, p := range ps {
		fmt.Fprintf(stdout, "cursor: %s harvested up to %s\n", p, s.Cursors[p])
	}
	for _, h := range s.Recent {
		fmt.Fprintf(stdout, "night %d %s: %s, val %.3f → %.3f, %d tokens (%s)\n", h.Night, h.Started.Format(time.RFC3339), h.Action, h.Baseline, h.Final, h.Tokens, h.Reason)
	}
	if s.Latest != "" {
		fmt.Fprintf(stdout, "latest staging: %s: %s\n", s.Latest, s.LatestState)
	}
	for _, a := range s.Adoptions {
		undone := ""
		if a.UndoneAt != nil {
			undone = ", undone " + a.UndoneAt.Format(time.RFC3339)
		}
		fmt.Fprintf(stdout, "adopted %s at %s (%d files%s)\n", a.Staging, a.AdoptedAt.Format(time.RFC3339), len(a.Files), undone)
	}
	if s.Interrupted {
		fmt.Fprintln(stdout, "an adopt was interrupted; the next adopt or undo rolls it back")
	}
	return nil
}

func sleepHarvest(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o sleepOpts
	fs := newFlagSet("sleep harvest", "sleep harvest --output tasks.json [flags]", stderr)
	o.register(fs, false)
	output := fs.String("output", "", "write the mined tasks here, with \"reviewed\": false (required)")
	if help, err := parse(fs, args); help || err != nil {
		return err
	}
	if *output == "" {
		return usageError{errors.New("sleep harvest: --output is required")}
	}
	r, err := o.resolve(fs)
	if err != nil {
		return err
	}
	st, err := nightly.LoadState(r.statePath)
	if err != nil {
		return err
	}
	if r.persona != "" {
		if err := nightly.WritePersonaTranscripts(o.persona, r.claude, r.project, time.Now()); err != nil {
			return err
		}
	}
	ds, sk, err := nightly.Harvest(nightly.HarvestOptions{Source: r.cfg.Source, ClaudeHome: r.claude, CodexHome: r.codex, CursorHome: r.curs,
		Projects: []string{r.project}, Cursors: st.LastHarvest, Lookback: time.Duration(r.cfg.LookbackHours * float64(time.Hour)),
		MaxSessions: cmp.Or(r.cfg.MaxSessions, 3*r.cfg.MaxTasks)})
	if err != nil {
		return usageError{err}
	}
	var tasks []nightly.Task
	var dropped []string
	if r.cfg.Backend != "" && *r.cfg.LLMMine {
		spec, err := r.modelSpec(true)
		if err != nil {
			return err
		}
		m, err := modelFactory(nil, backends.NewLimiter(nil, nil))(spec)
		if err != nil {
			return usageError{fmt.Errorf("backend %s: %w", r.cfg.Backend, err)}
		}
		res, err := nightly.MineLLM(ctx, m, spec.GetModel(), ds, nil)
		if err != nil {
			return err
		}
		tasks, dropped = res.Tasks, res.Dropped
	} else {
		tasks = nightly.MineHeuristic(ds)
	}
	tasks = nightly.Dedup(tasks)
	nightly.AssignSplits(tasks, r.cfg.Seed, r.cfg.ValFraction, r.cfg.TestFraction)
	if err := nightly.WriteTasksFile(*output, nightly.TasksFile{Reviewed: false, Tasks: tasks}); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "harvested %d sessions (skipped: %d malformed lines, %d huge lines, %d headless, %d sub-agent, %d older than the cursor)\n",
		len(ds), sk.MalformedLines, sk.HugeLines, sk.Headless, sk.SubAgent, sk.Old)
	for _, d := range dropped {
		fmt.Fprintln(stdout, "dropped:", d)
	}
	fmt.Fprintf(stdout, "wrote %d tasks to %s; review them, set \"reviewed\": true, then: skillfleet sleep run --tasks-file %s\n", len(tasks), *output, *output)
	return nil
}

func sleepAdopt(args []string, stdout, stderr io.Writer) error {
	var o sleepOpts
	fs := newFlagSet("sleep adopt", "sleep adopt [--staging DIR] [--undo] [flags]", stderr)
	o.register(fs, false)
	staging := fs.String("staging", "", "staging dir to adopt (default: the project's latest)")
	undo := fs.Bool("undo", false, "revert the latest adoption (or --staging's)")
	var extra multiFlag
	fs.Var(&extra, "allow-root", "another directory adopt may write under (repeatable)")
	if help, err := parse(fs, args); help || err != nil {
		return err
	}
	r, err := o.resolve(fs)
	if err != nil {
		return err
	}
	ao := nightly.AdoptOptions{StagingDir: *staging, AllowedRoots: append(allowedRoots(r), extra...), Receipts: filepath.Join(r.stagingRoot, "adopted.json")}
	if *undo {
		rec, err := nightly.Undo(ao)
		if err != nil {
			return err
		}
		for _, f := range rec.Files {
			switch {
			case f.Package && !f.Existed:
				fmt.Fprintf(stdout, "removed %s (the skill package the adoption created)\n", f.LivePath)
			case f.Package:
				fmt.Fprintf(stdout, "restored %s (skill package, %d files)\n", f.LivePath, len(f.OldFiles))
			default:
				fmt.Fprintf(stdout, "restored %s\n", f.LivePath)
			}
		}
		return nil
	}
	if ao.StagingDir == "" {
		if ao.StagingDir, err = nightly.Latest(r.stagingRoot); err != nil {
			return err
		}
	}
	rec, err := nightly.Adopt(ao)
	if err != nil {
		return err
	}
	for _, f := range rec.Files {
		b := "(new file)"
		if f.Existed {
			b = "backup " + f.Backup
		}
		if f.Package {
			b = fmt.Sprintf("(skill package, %d files) ", len(f.NewFiles)) + strings.Replace(b, "new file", "new directory", 1)
		}
		fmt.Fprintf(stdout, "adopted %s %s\n", f.LivePath, b)
	}
	fmt.Fprintf(stdout, "undo with: %s --undo\n", r.adoptCmd)
	return nil
}

func sleepSchedule(cmdName string, args []string, stdout, stderr io.Writer) error {
	var o sleepOpts
	fs := newFlagSet("sleep "+cmdName, "sleep "+cmdName+" [--at HH:MM] [--scheduler cron|systemd] [flags]", stderr)
	o.register(fs, false)
	at := fs.String("at", "03:17", "daily time, HH:MM local")
	kind := fs.String("scheduler", "cron", "cron (a line in your crontab) or systemd (a user timer)")
	crontab := fs.String("crontab", "crontab", "the crontab program")
	unitDir := fs.String("systemd-dir", "", "user unit directory (default ~/.config/systemd/user)")
	systemctl := fs.String("systemctl", "systemctl", "the systemctl program (\"-\" = only write the unit files)")
	autoAdopt := fs.Bool("auto-adopt", false, "the scheduled night adopts what it accepts")
	if help, err := parse(fs, args); help || err != nil {
		return err
	}
	r, err := o.resolve(fs)
	if err != nil {
		return err
	}
	so := nightly.ScheduleOptions{Kind: *kind, Time: *at, Crontab: *crontab, SystemdDir: *unitDir, Systemctl: *systemctl,
		Log: filepath.Join(o.stateDir, "sleep.log")}
	if cmdName == "unschedule" {
		msg, err := nightly.Unschedule(so)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, msg)
		return nil
	}
	if r.cfg.Backend == "" {
		return usageError{errors.New("sleep schedule: --backend is required (or backend: in the config)")}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	argv := []string{exe, "sleep", "run", "--project", r.project, "--state-dir", o.stateDir, "--backend", r.cfg.Backend}
	if r.cfg.Model != "" {
		argv = append(argv, "--model", r.cfg.Model)
	}
	if o.configPath != "" {
		abs, _ := filepath.Abs(o.configPath)
		argv = append(argv, "--config", abs)
	}
	if o.set["skill-dir"] {
		argv = append(argv, "--skill-dir", r.skillDir)
	}
	if *autoAdopt {
		argv = append(argv, "--auto-adopt")
	}
	so.Command = argv
	msg, err := nightly.Schedule(so)
	if err != nil {
		return usageError{err}
	}
	fmt.Fprintln(stdout, msg)
	return nil
}
