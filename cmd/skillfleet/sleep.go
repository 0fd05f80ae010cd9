package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/coordinator"
	sleepdrv "github.com/skillfleet/skillfleet/coordinator/sleep"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/nightly"
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
  install     install a /skillfleet-sleep command into Claude Code (claude-code) or Codex (codex)
  uninstall   remove what install put there

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
	return usageError{fmt.Errorf("sleep: unknown command %q (run, dry-run, status, harvest, adopt, schedule, unschedule, install, uninstall)", args[0])}
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

// resolve turns the flags over the config file into a night's setup:
// the config (defaults, then the file, then the flags that were set) and
// every path. persona, for --persona, is the sandbox directory.
func (o *sleepOpts) resolve(fs *flag.FlagSet) (n sleepdrv.Night, persona string, err error) {
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	if o.persona != "" {
		if persona, err = o.personaSandbox(); err != nil {
			return n, "", err
		}
	}
	if o.stateDir, err = filepath.Abs(o.stateDir); err != nil {
		return n, "", err
	}
	cfg, err := o.config()
	if err != nil {
		return n, "", err
	}
	n = sleepdrv.Night{Config: cfg, StatePath: filepath.Join(o.stateDir, "state.json"), Persona: o.persona, TasksFile: o.tasksFile,
		ClaudeHome: o.claudeHome, CodexHome: o.codexHome, CursorHome: o.cursorHome}
	home, _ := os.UserHomeDir()
	n.Project = o.project
	if err := n.ResolvePaths(home); err != nil {
		return n, "", usageError{err}
	}
	n.AdoptCmd = "skillfleet sleep adopt --project " + n.Project
	switch {
	case o.persona != "":
		n.AdoptCmd = "skillfleet sleep adopt --persona " + o.persona + " --state-dir " + o.stateDir
	case n.SkillDir != "" && (o.set["skill-dir"] || o.set["skill-path"] || o.set["memory-path"]):
		n.AdoptCmd += " --skill-dir " + n.SkillDir + " --memory-path " + n.MemoryPath
	case o.set["skill-path"] || o.set["memory-path"]:
		n.AdoptCmd += " --skill-path " + n.SkillPath + " --memory-path " + n.MemoryPath
	}
	return n, persona, nil
}

// personaSandbox points the flags at --persona's sandbox: its Claude home
// and project, and its skill (a package for a persona that has one).
func (o *sleepOpts) personaSandbox() (string, error) {
	if !slices.Contains(nightly.Personas(), o.persona) {
		return "", usageError{fmt.Errorf("--persona %q: want one of %s", o.persona, strings.Join(nightly.Personas(), ", "))}
	}
	if !o.set["state-dir"] {
		dir, err := os.MkdirTemp("", "skillfleet-sleep-persona-")
		if err != nil {
			return "", err
		}
		o.stateDir = dir
	}
	box := filepath.Join(o.stateDir, "persona-"+o.persona)
	o.claudeHome, o.project, o.source = filepath.Join(box, "claude"), filepath.Join(box, "project"), nightly.SourceClaude
	if name, _, ok := nightly.PersonaPackage(o.persona); ok {
		if o.skillDir == "" && o.skillPath == "" {
			o.skillDir = filepath.Join(box, "skills", name)
		}
	} else if o.skillPath == "" && o.skillDir == "" {
		o.skillPath = filepath.Join(box, "skills", nightly.ManagedSkillName, "SKILL.md")
	}
	return box, nil
}

// config is the sleep config: the built-in defaults, the config file
// (--config, else <state-dir>/config.yaml if present), then the flags
// that were set.
func (o *sleepOpts) config() (nightly.Config, error) {
	cp, explicit := o.configPath, true
	if cp == "" {
		cp, explicit = filepath.Join(o.stateDir, "config.yaml"), false
	}
	cfg, err := nightly.LoadConfig(cp, explicit)
	if err != nil {
		return cfg, usageError{err}
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
	f := false
	if o.noMemory {
		cfg.EvolveMemory = &f
	}
	if o.heuristicMine {
		cfg.LLMMine = &f
	}
	if err := cfg.Validate(); err != nil {
		return cfg, usageError{fmt.Errorf("flags: %w", err)}
	}
	if cfg.Backend != "" && !slices.Contains(backends.Implementations(), cfg.Backend) {
		from := "flags"
		if !o.set["backend"] {
			from = "config " + cp
		}
		return cfg, usageError{fmt.Errorf("%s: backend: %q is not a known backend (want one of %s)", from, cfg.Backend, strings.Join(backends.Implementations(), ", "))}
	}
	if cfg.Model == "" && cfg.Backend == backends.BackendSim {
		cfg.Model = "sim"
	}
	return cfg, nil
}

// modelSpec is the proto spec of a role.
func modelSpec(c nightly.Config, optimizer bool) (*pb.ModelSpec, error) {
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

// newModel builds the optimizer role's model for this process.
func newModel(spec *pb.ModelSpec) (llm.Model, error) {
	m, err := modelFactory(nil, backends.NewLimiter(nil, nil))(spec)
	if err != nil {
		return nil, usageError{fmt.Errorf("backend %s: %w", spec.GetBackend(), err)}
	}
	return m, nil
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
	n, persona, err := o.resolve(fs)
	if err != nil {
		return err
	}
	n.DryRun = mode == "dry-run"
	target, err := modelSpec(n.Config, false)
	if err != nil {
		return err
	}
	optSpec, err := modelSpec(n.Config, true)
	if err != nil {
		return err
	}
	n.TargetModel, n.OptimizerModel = target.GetModel(), optSpec.GetModel()
	if n.Cost, err = sleepdrv.PriceFunc(n.Config, o.prices, n.TargetModel, n.OptimizerModel); err != nil {
		return usageError{err}
	}
	if n.TasksFile != "" {
		tf, err := nightly.LoadTasksFile(n.TasksFile)
		if err != nil {
			return usageError{fmt.Errorf("--tasks-file: %w", err)}
		}
		if !tf.Reviewed && n.Config.Backend != backends.BackendSim {
			return usageError{fmt.Errorf("--tasks-file %s: \"reviewed\" is false; read the tasks, then set it to true", n.TasksFile)}
		}
	}
	optimizer, err := newModel(optSpec)
	if err != nil {
		return err
	}
	rep, err := sleepdrv.RunNight(ctx, n, sleepdrv.NightDeps{Optimizer: optimizer, Logger: log, Fleet: o.fleet(target, log, stderr)})
	switch {
	case errors.Is(err, nightly.ErrLocked):
		return codedError{exitLocked, err}
	case errors.Is(err, sleepdrv.ErrStopped):
		return codedError{exitStopped, err}
	case rep == nil:
		return err
	}
	if persona != "" {
		fmt.Fprintf(stdout, "skillfleet sleep: persona %s sandbox %s\n", o.persona, persona)
	}
	if o.jsonOut {
		b, _ := json.MarshalIndent(rep, "", "  ")
		fmt.Fprintln(stdout, nightly.Redact(string(b)))
	} else {
		fmt.Fprint(stdout, nightly.Redact(rep.Summary()))
	}
	switch {
	case errors.Is(err, sleepdrv.ErrBudget):
		return codedError{exitBudget, fmt.Errorf("night %d stopped: %w; nothing was accepted (raise max_tokens_per_night / --max-tokens, or --max-usd)", rep.Night, err)}
	case err != nil:
		return err
	}
	if rep.Adopted > 0 {
		fmt.Fprintf(stdout, "adopted: %d file(s); undo with: %s --undo\n", rep.Adopted, n.AdoptCmd)
	}
	if o.assertImproves && !rep.Improved(persona != "") {
		out := rep.Outcome
		return codedError{exitNoImprove, fmt.Errorf("--assert-improves: the night did not improve (%s: %s)", out.Action, out.Reason)}
	}
	log.Info("night done", "night", rep.Night, "action", rep.Outcome.Action)
	return nil
}

// fleet starts a night's replays on an embedded NATS server with
// in-process workers, or on --nats with external ones; its run dir is
// removed afterwards unless --keep-run.
func (o *sleepOpts) fleet(target *pb.ModelSpec, log *slog.Logger, stderr io.Writer) func(context.Context, int, time.Time, []byte) (sleepdrv.Replayer, func(), error) {
	return func(ctx context.Context, night int, started time.Time, benchCfg []byte) (sleepdrv.Replayer, func(), error) {
		runDir := filepath.Join(o.stateDir, "runs", fmt.Sprintf("night-%04d-%s-%d", night, started.Format("20060102-150405"), os.Getpid()))
		runID := filepath.Base(runDir)
		removeRun := func() {
			if !o.keepRun {
				_ = os.RemoveAll(runDir)
			}
		}
		to := trainOpts{logLevel: o.logLevel}
		fleet, err := coordinator.Start(ctx, coordinator.Config{Dir: runDir, ID: runID, NATSURL: o.natsURL, NATSReplicas: o.natsReplicas,
			Workers: o.workers, Concurrency: o.concurrency, NoSync: true, Logger: log}, to.runDeps(log))
		if err != nil {
			removeRun()
			return nil, nil, err
		}
		r := &sleepdrv.HubReplayer{Hub: fleet.Hub(), RunID: runID, Target: target, BenchConfig: benchCfg, Timeout: 10 * time.Minute}
		return r, func() { fleet.Stop(); _, _ = fleet.Wait(); removeRun() }, nil
	}
}

func sleepStatus(args []string, stdout, stderr io.Writer) error {
	var o sleepOpts
	fs := newFlagSet("sleep status", "sleep status [--project DIR] [--state-dir DIR]", stderr)
	o.register(fs, false)
	if help, err := parse(fs, args); help || err != nil {
		return err
	}
	n, _, err := o.resolve(fs)
	if err != nil {
		return err
	}
	s, err := sleepdrv.ReadStatus(n)
	if err != nil {
		return err
	}
	if o.jsonOut {
		b, _ := json.MarshalIndent(s, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return nil
	}
	fmt.Fprint(stdout, s.Text())
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
	n, _, err := o.resolve(fs)
	if err != nil {
		return err
	}
	var optimizer llm.Model
	if n.Config.Backend != "" && *n.Config.LLMMine {
		spec, err := modelSpec(n.Config, true)
		if err != nil {
			return err
		}
		if optimizer, err = newModel(spec); err != nil {
			return err
		}
		n.OptimizerModel = spec.GetModel()
	}
	h, err := sleepdrv.Harvest(ctx, n, optimizer)
	if err != nil {
		return err
	}
	if err := nightly.WriteTasksFile(*output, nightly.TasksFile{Reviewed: false, Tasks: h.Tasks}); err != nil {
		return err
	}
	sk := h.Skipped
	fmt.Fprintf(stdout, "harvested %d sessions (skipped: %d malformed lines, %d huge lines, %d headless, %d sub-agent, %d older than the cursor)\n",
		h.Sessions, sk.MalformedLines, sk.HugeLines, sk.Headless, sk.SubAgent, sk.Old)
	for _, d := range h.Dropped {
		fmt.Fprintln(stdout, "dropped:", d)
	}
	fmt.Fprintf(stdout, "wrote %d tasks to %s; review them, set \"reviewed\": true, then: skillfleet sleep run --tasks-file %s\n", len(h.Tasks), *output, *output)
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
	n, _, err := o.resolve(fs)
	if err != nil {
		return err
	}
	ao := nightly.AdoptOptions{StagingDir: *staging, AllowedRoots: append(n.AllowedRoots, extra...), Receipts: filepath.Join(n.StagingRoot, "adopted.json")}
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
		if ao.StagingDir, err = nightly.Latest(n.StagingRoot); err != nil {
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
	fmt.Fprintf(stdout, "undo with: %s --undo\n", n.AdoptCmd)
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
	n, _, err := o.resolve(fs)
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
	if n.Config.Backend == "" {
		return usageError{errors.New("sleep schedule: --backend is required (or backend: in the config)")}
	}
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	argv := []string{exe, "sleep", "run", "--project", n.Project, "--state-dir", o.stateDir, "--backend", n.Config.Backend}
	if n.Config.Model != "" {
		argv = append(argv, "--model", n.Config.Model)
	}
	if o.configPath != "" {
		abs, _ := filepath.Abs(o.configPath)
		argv = append(argv, "--config", abs)
	}
	if o.set["skill-dir"] {
		argv = append(argv, "--skill-dir", n.SkillDir)
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
