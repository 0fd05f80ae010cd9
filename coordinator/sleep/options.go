package sleep

import (
	"flag"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/pkg/nightly"
)

// UsageError is a night's setup refused for how it was asked for: a bad
// flag or config value. The command exits 2 on it.
type UsageError struct{ Err error }

func (u UsageError) Error() string { return u.Err.Error() }
func (u UsageError) Unwrap() error { return u.Err }

// Options are the sleep commands' flags, before the config file.
type Options struct {
	ConfigPath                        string
	StateDir, Project                 string
	Source                            string
	ClaudeHome, CodexHome, CursorHome string
	LookbackHours                     float64
	Backend, Model, OptimizerModel    string
	BaseURL, APIKeyEnv                string
	SkillPath, MemoryPath, SkillDir   string
	NoMemory                          bool
	MaxTasks, MaxSessions             int
	MaxTokens                         int64
	MaxUSD                            float64
	Prices                            string
	EditBudget                        int
	NoRegression                      bool
	TasksFile                         string
	HeuristicMine                     bool
	NATSURL                           string
	NATSReplicas                      int
	Workers, Concurrency              int
	Persona                           string
	AssertImproves, AutoAdopt         bool
	JSON                              bool
	LogLevel                          string
	KeepRun                           bool
	DreamRollouts, DreamFactor        int
	RecallK                           int
	GateMode, Scope, Preferences      string
	SkillRoot                         string
	TargetTaskFilter                  bool

	// The replay target, as train's model.target_* keys.
	TargetBackend, TargetBaseURL, TargetAPIKeyEnv string
	CodexExecPath, ClaudeCodeExecPath             string
	TargetOptions                                 optionFlag
	TargetTimeout                                 time.Duration
	TargetMaxRetries                              int
	SimLLM                                        bool
	TargetUserLogin                               bool
	// OptimizerOptions are the optimizer's backend options (an agent
	// CLI's chat family: user_login, sandbox, ...).
	OptimizerOptions optionFlag
	// HandoffDir is a handoff night's prompt and answer directory
	// (--handoff-dir; default: one per project under the state dir).
	HandoffDir string

	set map[string]bool
}

// optionFlag collects repeatable key=value target options.
type optionFlag map[string]string

func (m *optionFlag) String() string { return fmt.Sprint(map[string]string(*m)) }
func (m *optionFlag) Set(v string) error {
	k, val, ok := strings.Cut(v, "=")
	if !ok || k == "" {
		return fmt.Errorf("%q: want key=value", v)
	}
	if *m == nil {
		*m = optionFlag{}
	}
	(*m)[k] = val
	return nil
}

// Register adds the flags to fs; night adds those of a night (run and
// dry-run).
func (o *Options) Register(fs *flag.FlagSet, night bool) {
	home, _ := os.UserHomeDir()
	fs.StringVar(&o.ConfigPath, "config", "", "config YAML (default <state-dir>/config.yaml if present); flags override it")
	fs.StringVar(&o.StateDir, "state-dir", filepath.Join(home, ".skillfleet-sleep"), "where the state file (state.json, locked) and night runs live")
	fs.StringVar(&o.Project, "project", "", "the project whose sessions are learned from and whose CLAUDE.md is the memory (default: the working directory)")
	fs.StringVar(&o.Source, "source", "", "transcripts: "+strings.Join(nightly.Sources(), ", ")+" or all (default all; where each is read: docs/agents.md)")
	fs.StringVar(&o.ClaudeHome, "claude-home", "", "Claude Code home (default ~/.claude)")
	fs.StringVar(&o.CodexHome, "codex-home", "", "Codex home (default ~/.codex)")
	fs.StringVar(&o.CursorHome, "cursor-home", "", "Cursor home (default ~/.cursor)")
	fs.Float64Var(&o.LookbackHours, "lookback-hours", 0, "how far a project's first night looks back (default 72)")
	fs.StringVar(&o.Backend, "backend", "", "model backend: "+strings.Join(backends.Implementations(), ", ")+" (sim is the simulated model, a test double)")
	fs.StringVar(&o.Model, "model", "", "target model (the one that replays tasks)")
	fs.StringVar(&o.OptimizerModel, "optimizer-model", "", "miner, reflector and judge model (default --model)")
	fs.StringVar(&o.BaseURL, "base-url", "", "API base URL (openai_compatible, azure)")
	fs.StringVar(&o.APIKeyEnv, "api-key-env", "", "environment variable holding the API key (the key itself never goes on the command line)")
	fs.StringVar(&o.SkillPath, "skill-path", "", "the live skill file (default ~/.claude/skills/skillfleet-sleep-learned/SKILL.md)")
	fs.StringVar(&o.MemoryPath, "memory-path", "", "the live memory file (default <project>/CLAUDE.md)")
	fs.StringVar(&o.SkillDir, "skill-dir", "", "a skill package directory (SKILL.md, references/, scripts/) to train whole instead of --skill-path's one SKILL.md")
	fs.StringVar(&o.SkillRoot, "skill-root", "", "a directory of skills (each subdirectory with a SKILL.md, e.g. ~/.claude/skills): train every skill the sessions exercise, one gated proposal each (skill_root)")
	fs.BoolVar(&o.NoMemory, "no-memory", false, "do not evolve the memory file")
	fs.IntVar(&o.MaxTasks, "max-tasks", 0, "tasks replayed per night (default 40)")
	fs.IntVar(&o.MaxSessions, "max-sessions", 0, "sessions mined per night (default 3 × max tasks)")
	fs.StringVar(&o.TasksFile, "tasks-file", "", "use this reviewed tasks file (from `sleep harvest --output`) instead of harvesting")
	fs.BoolVar(&o.HeuristicMine, "heuristic-mine", false, "mine without the model (one rubric task per session)")
	fs.StringVar(&o.Persona, "persona", "", "proof run: the built-in persona's sessions in a sandbox ("+strings.Join(nightly.Personas(), ", ")+")")
	fs.StringVar(&o.Scope, "scope", "", "project (the sessions of --project) or all (every project's sessions; the memory file is then not evolved) (scope, default project)")
	fs.BoolVar(&o.TargetTaskFilter, "target-task-filter", true, "on a skill you named (--skill-path, --skill-dir), keep only the tasks that exercise it (target_task_filter)")
	fs.StringVar(&o.LogLevel, "log-level", "warn", "log level: debug, info, warn, error")
	fs.BoolVar(&o.JSON, "json", false, "print the result as JSON")
	if !night {
		return
	}
	fs.Int64Var(&o.MaxTokens, "max-tokens", 0, "token budget of the night (unset: max_tokens_per_night, default 400000; 0 = none)")
	fs.Float64Var(&o.MaxUSD, "max-usd", 0, "dollar budget of the night at the price table's prices (0 = none)")
	fs.StringVar(&o.Prices, "prices", "", "price table YAML for --max-usd (default: the built-in table)")
	fs.IntVar(&o.EditBudget, "edit-budget", 0, "edits one reflection may propose (default 4)")
	fs.BoolVar(&o.NoRegression, "no-regression", false, "refuse an edit under which any val task scores lower")
	fs.StringVar(&o.NATSURL, "nats", "", "NATS URL of a fleet (default: an embedded server and in-process workers)")
	fs.IntVar(&o.NATSReplicas, "nats-replicas", 0, "servers of a NATS cluster that keep the task stream and run directory (0 = keep the current count, 1 for new ones)")
	fs.IntVar(&o.Workers, "workers", 2, "in-process workers (0 = only the fleet's workers)")
	fs.IntVar(&o.Concurrency, "concurrency", 8, "replays each in-process worker runs at once")
	fs.BoolVar(&o.AssertImproves, "assert-improves", false, "exit 5 unless the night is accepted with a higher fresh val score (and, for a persona, without its harmful rule)")
	fs.BoolVar(&o.AutoAdopt, "auto-adopt", false, "adopt an accepted night at once (opt-in)")
	fs.BoolVar(&o.KeepRun, "keep-run", false, "keep the night's run dir (result journal, NATS store)")
	fs.StringVar(&o.GateMode, "gate-mode", "", "on (an edit is kept only when the val score rises) or off (every edit kept, the night accepted ungated: review it before adopting; not with --auto-adopt) (gate_mode, default on)")
	fs.StringVar(&o.Preferences, "preferences", "", "house rules shown to the reflector, e.g. \"British spelling; never add emoji\" (preferences)")
	fs.IntVar(&o.DreamRollouts, "dream-rollouts", 0, fmt.Sprintf("attempts per train task in each train wave; over 1 the reflector sees the best and the worst attempt (dream_rollouts, 1..%d, default 1)", nightly.MaxDreamRollouts))
	fs.IntVar(&o.DreamFactor, "dream-factor", 0, fmt.Sprintf("rephrasings of each train task added as train-only dream tasks (dream_factor, 0..%d, default 0)", nightly.MaxDreamFactor))
	fs.IntVar(&o.RecallK, "recall-k", 0, fmt.Sprintf("archived tasks of earlier nights most similar to tonight's brought back as train tasks (recall_k, 0..%d, default 0)", nightly.MaxRecallK))
	fs.StringVar(&o.HandoffDir, "handoff-dir", "", "with --backend handoff: where the night writes the prompts it waits for (pending.json, PROMPTS.md) and reads their answers (answers/<id>.md) (default <state-dir>/handoff/<project>-<hash>)")
	fs.Var(&o.OptimizerOptions, "optimizer-option", "an option of the miner, reflector and judge's backend key=value, as train's model.optimizer_options (with an agent CLI's chat family as --backend: user_login=true signs its calls with your CLI login also at --base-url, sandbox=none, ...; repeatable)")
	o.RegisterTarget(fs)
}

// targetFlags are the replay target's flags, in the order TargetArgs
// writes them.
var targetFlags = []string{"target-backend", "codex-exec-path", "claude-code-exec-path", "target-base-url",
	"target-api-key-env", "target-option", "target-user-login", "target-timeout", "target-max-retries", "sim-llm"}

// RegisterTarget adds the replay target's flags to fs: a night's, and
// those `sleep schedule` and `sleep install` carry into what they write.
func (o *Options) RegisterTarget(fs *flag.FlagSet) {
	fs.StringVar(&o.TargetBackend, "target-backend", "", "replay through an agent CLI: codex_exec (Codex) or claude_code_exec (Claude Code), with --model as its model; --backend stays the optimizer's (target_backend)")
	fs.StringVar(&o.CodexExecPath, "codex-exec-path", "", "the codex program (codex_exec_path; default codex on PATH)")
	fs.StringVar(&o.ClaudeCodeExecPath, "claude-code-exec-path", "", "the claude program (claude_code_exec_path; default claude on PATH)")
	fs.StringVar(&o.TargetBaseURL, "target-base-url", "", "the model server the target uses (target_base_url)")
	fs.StringVar(&o.TargetAPIKeyEnv, "target-api-key-env", "", "environment variable holding the target's key (target_api_key_env)")
	fs.Var(&o.TargetOptions, "target-option", "a target backend option key=value, as train's model.target_options (sandbox=none, env=VAR, ...; repeatable)")
	fs.BoolVar(&o.TargetUserLogin, "target-user-login", false, "an agent CLI target replays with your own login: a copy of its login file alone (~/.codex/auth.json; ~/.claude/.credentials.json and the account keys of ~/.claude.json) in each call's HOME (target_options.user_login)")
	fs.DurationVar(&o.TargetTimeout, "target-timeout", 0, "bound on one replay call, an agent's whole tool loop (target_timeout; default 5m)")
	fs.IntVar(&o.TargetMaxRetries, "target-max-retries", 0, "retries of a failed replay call (target_max_retries; 0 = the backend's default, -1 = none)")
	fs.BoolVar(&o.SimLLM, "sim-llm", false, "serve the simulated model (a test double) on loopback and point the target at it (sim_llm)")
}

// TargetArgs returns the replay target's flags set on fs as `sleep run`
// arguments, for a command written to a file that runs nights later (an
// installed script, a schedule): a program path with a directory made
// absolute, options sorted by key. A value that would put a secret in
// that file is refused: an option named like a key, token or password
// (other than an *_env option naming a variable), a secret-shaped value,
// a URL carrying credentials. Keys go in environment variables
// (--target-api-key-env, --target-option env=VAR).
func (o *Options) TargetArgs(fs *flag.FlagSet) ([]string, error) {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	return o.targetArgs(set)
}

func (o *Options) targetArgs(set map[string]bool) ([]string, error) {
	var out []string
	refuse := func(flag, why string) error {
		return UsageError{fmt.Errorf("--%s: %s; it would be written in plain text into what runs the nights: keep keys in an environment variable and name it (--target-api-key-env VAR, --target-option env=VAR)", flag, why)}
	}
	str := func(name, v string) error {
		if u, err := url.Parse(v); err == nil && u.User != nil && u.Scheme != "" {
			return refuse(name, "the URL carries credentials")
		}
		if nightly.ContainsSecret(v) {
			return refuse(name, "the value looks like a secret")
		}
		out = append(out, "--"+name, v)
		return nil
	}
	for _, name := range targetFlags {
		if !set[name] {
			continue
		}
		var err error
		switch name {
		case "target-backend":
			err = str(name, o.TargetBackend)
		case "codex-exec-path", "claude-code-exec-path":
			p := map[string]string{"codex-exec-path": o.CodexExecPath, "claude-code-exec-path": o.ClaudeCodeExecPath}[name]
			if strings.ContainsRune(p, filepath.Separator) {
				if p, err = filepath.Abs(p); err != nil {
					return nil, err
				}
			}
			err = str(name, p)
		case "target-base-url":
			err = str(name, o.TargetBaseURL)
		case "target-api-key-env":
			err = str(name, o.TargetAPIKeyEnv)
		case "target-option":
			keys := slices.Sorted(maps.Keys(o.TargetOptions))
			for _, k := range keys {
				if secretKey(k) {
					return nil, refuse(name, fmt.Sprintf("option %s names a secret (its value is not shown)", k))
				}
				if e := str(name, k+"="+o.TargetOptions[k]); e != nil {
					return nil, refuse(name, fmt.Sprintf("option %s: the value looks like a secret or carries credentials", k))
				}
			}
		case "target-user-login":
			out = append(out, "--"+name+"="+strconv.FormatBool(o.TargetUserLogin))
		case "target-timeout":
			out = append(out, "--"+name, o.TargetTimeout.String())
		case "target-max-retries":
			out = append(out, "--"+name, strconv.Itoa(o.TargetMaxRetries))
		case "sim-llm":
			if o.SimLLM {
				out = append(out, "--"+name)
			} else {
				out = append(out, "--"+name+"=false")
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// secretKey reports whether an option key names a credential itself
// rather than the variable that holds one.
func secretKey(k string) bool {
	k = strings.ToLower(k)
	if strings.HasSuffix(k, "_env") || k == "env" {
		return false
	}
	for _, w := range []string{"key", "token", "secret", "password", "passwd", "credential"} {
		if strings.Contains(k, w) {
			return true
		}
	}
	return false
}

// Resolve turns the flags set on fs over the config file into a night's
// setup: the config (defaults, then the file, then the flags that were
// set) and every path. persona, for --persona, is its sandbox directory.
func (o *Options) Resolve(fs *flag.FlagSet) (n Night, persona string, err error) {
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	if o.Persona != "" {
		if persona, err = o.personaSandbox(); err != nil {
			return n, "", err
		}
	}
	if o.StateDir, err = filepath.Abs(o.StateDir); err != nil {
		return n, "", err
	}
	cfg, err := o.config()
	if err != nil {
		return n, "", err
	}
	n = Night{Config: cfg, StatePath: filepath.Join(o.StateDir, "state.json"), Persona: o.Persona, TasksFile: o.TasksFile,
		ClaudeHome: o.ClaudeHome, CodexHome: o.CodexHome, CursorHome: o.CursorHome, Project: o.Project, OptimizerOptions: o.OptimizerOptions}
	home, _ := os.UserHomeDir()
	if err := n.ResolvePaths(home); err != nil {
		return n, "", UsageError{err}
	}
	n.AdoptCmd = "skillfleet sleep adopt --project " + n.Project
	switch {
	case o.Persona != "":
		n.AdoptCmd = "skillfleet sleep adopt --persona " + o.Persona + " --state-dir " + o.StateDir
	case n.SkillDir != "" && (o.set["skill-dir"] || o.set["skill-path"] || o.set["memory-path"]):
		n.AdoptCmd += " --skill-dir " + n.SkillDir + " --memory-path " + n.MemoryPath
	case n.SkillRoot != "":
		n.AdoptCmd += " --skill-root " + n.SkillRoot + " --all-skills"
	case o.set["skill-path"] || o.set["memory-path"]:
		n.AdoptCmd += " --skill-path " + n.SkillPath + " --memory-path " + n.MemoryPath
	}
	return n, persona, nil
}

// personaSandbox points the flags at --persona's sandbox: its Claude home
// and project, and its skill (a package for a persona that has one).
func (o *Options) personaSandbox() (string, error) {
	if !slices.Contains(nightly.Personas(), o.Persona) {
		return "", UsageError{fmt.Errorf("--persona %q: want one of %s", o.Persona, strings.Join(nightly.Personas(), ", "))}
	}
	// The sandbox lives in the state dir (the default one without
	// --state-dir), so run, status, schedule and adopt of one persona all
	// find the same nights.
	box := filepath.Join(o.StateDir, "persona-"+o.Persona)
	o.ClaudeHome, o.Project, o.Source = filepath.Join(box, "claude"), filepath.Join(box, "project"), nightly.SourceClaude
	if name, _, ok := nightly.PersonaPackage(o.Persona); ok {
		if o.SkillDir == "" && o.SkillPath == "" {
			o.SkillDir = filepath.Join(box, "skills", name)
		}
	} else if o.SkillPath == "" && o.SkillDir == "" {
		o.SkillPath = filepath.Join(box, "skills", nightly.ManagedSkillName, "SKILL.md")
	}
	return box, nil
}

// config is the sleep config: the built-in defaults, the config file
// (--config, else <state-dir>/config.yaml if present), then the flags
// that were set.
func (o *Options) config() (nightly.Config, error) {
	cp, explicit := o.ConfigPath, true
	if cp == "" {
		cp, explicit = filepath.Join(o.StateDir, "config.yaml"), false
	}
	cfg, err := nightly.LoadConfig(cp, explicit)
	if err != nil {
		return cfg, UsageError{err}
	}
	set := func(name string, apply func()) {
		if o.set[name] {
			apply()
		}
	}
	set("source", func() { cfg.Source = o.Source })
	if o.Persona != "" {
		cfg.Source = nightly.SourceClaude
	}
	set("lookback-hours", func() { cfg.LookbackHours = o.LookbackHours })
	set("backend", func() { cfg.Backend = o.Backend })
	set("model", func() { cfg.Model = o.Model })
	set("optimizer-model", func() { cfg.OptimizerModel = o.OptimizerModel })
	set("base-url", func() { cfg.BaseURL = o.BaseURL })
	set("api-key-env", func() { cfg.APIKeyEnv = o.APIKeyEnv })
	// A flag naming the skill overrides the config's skill_path and
	// skill_dir alike; both flags at once are refused below.
	set("skill-path", func() {
		cfg.SkillPath = o.SkillPath
		if !o.set["skill-dir"] {
			cfg.SkillDir = ""
		}
	})
	set("skill-dir", func() {
		cfg.SkillDir = o.SkillDir
		if !o.set["skill-path"] {
			cfg.SkillPath = ""
		}
	})
	set("memory-path", func() { cfg.MemoryPath = o.MemoryPath })
	set("skill-root", func() { cfg.SkillRoot = o.SkillRoot })
	set("max-tasks", func() { cfg.MaxTasks = o.MaxTasks })
	set("max-sessions", func() { cfg.MaxSessions = o.MaxSessions })
	set("max-tokens", func() { cfg.MaxTokens = o.MaxTokens })
	set("max-usd", func() { cfg.MaxUSD = o.MaxUSD })
	set("edit-budget", func() { cfg.EditBudget = o.EditBudget })
	set("no-regression", func() { cfg.GateNoRegression = o.NoRegression })
	set("auto-adopt", func() { cfg.AutoAdopt = o.AutoAdopt })
	set("dream-rollouts", func() { cfg.DreamRollouts = o.DreamRollouts })
	set("dream-factor", func() { cfg.DreamFactor = o.DreamFactor })
	set("recall-k", func() { cfg.RecallK = o.RecallK })
	set("gate-mode", func() { cfg.GateMode = o.GateMode })
	set("preferences", func() { cfg.Preferences = o.Preferences })
	set("scope", func() { cfg.Scope = o.Scope })
	set("target-task-filter", func() { cfg.TargetTaskFilter = &o.TargetTaskFilter })
	set("target-backend", func() { cfg.TargetBackend = o.TargetBackend })
	set("codex-exec-path", func() { cfg.CodexExecPath = o.CodexExecPath })
	set("claude-code-exec-path", func() { cfg.ClaudeCodeExecPath = o.ClaudeCodeExecPath })
	set("target-base-url", func() { cfg.TargetBaseURL = o.TargetBaseURL })
	set("target-api-key-env", func() { cfg.TargetAPIKeyEnv = o.TargetAPIKeyEnv })
	set("target-timeout", func() { cfg.TargetTimeout = o.TargetTimeout })
	set("target-max-retries", func() { cfg.TargetMaxRetries = o.TargetMaxRetries })
	set("sim-llm", func() { cfg.SimLLM = o.SimLLM })
	set("target-option", func() {
		if cfg.TargetOptions == nil {
			cfg.TargetOptions = map[string]any{}
		}
		for k, v := range o.TargetOptions {
			cfg.TargetOptions[k] = v
		}
	})
	set("target-user-login", func() {
		if cfg.TargetOptions == nil {
			cfg.TargetOptions = map[string]any{}
		}
		cfg.TargetOptions["user_login"] = strconv.FormatBool(o.TargetUserLogin)
	})
	if o.Persona != "" && cfg.SkillPath == "" && cfg.SkillDir == "" {
		cfg.SkillPath, cfg.SkillDir = o.SkillPath, o.SkillDir
	}
	f := false
	if o.NoMemory {
		cfg.EvolveMemory = &f
	}
	if o.HeuristicMine {
		cfg.LLMMine = &f
	}
	from := "flags"
	if err := cfg.Validate(); err != nil {
		return cfg, UsageError{fmt.Errorf("flags: %w", err)}
	}
	if cfg.Backend != "" && !slices.Contains(backends.Implementations(), cfg.Backend) && !ChatFamily(cfg.Backend) {
		if !o.set["backend"] {
			from = "config " + cp
		}
		return cfg, UsageError{fmt.Errorf("%s: backend: %q is not a known backend (want one of %s, or an agent CLI's chat family: %s)", from, cfg.Backend,
			strings.Join(backends.Implementations(), ", "), strings.Join(chatFamilies(), ", "))}
	}
	if cfg.TargetBackend != "" {
		if _, ok := backends.LookupFamily(cfg.TargetBackend); !ok {
			if !o.set["target-backend"] {
				from = "config " + cp
			}
			return cfg, UsageError{fmt.Errorf("%s: target_backend: %q is not a known client family (an agent CLI: codex_exec or claude_code_exec)", from, cfg.TargetBackend)}
		}
	}
	if cfg.Model == "" && cfg.Backend == backends.BackendSim {
		cfg.Model = "sim"
	}
	if cfg.Model == "" && cfg.Backend == backends.BackendHandoff {
		// The session that answers is the model; the name is a label.
		cfg.Model = "handoff"
	}
	return cfg, nil
}
