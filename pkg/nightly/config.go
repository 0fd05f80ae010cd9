package nightly

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
)

// Config is a night's configuration: built-in defaults, then the config
// file, then command-line flags.
type Config struct {
	// Source of transcripts: claude, codex, cursor or all.
	Source string `yaml:"source"`
	// LookbackHours is how far the first night of a project looks back.
	LookbackHours float64 `yaml:"lookback_hours"`
	// MaxSessions caps the sessions mined per night (0 = 3 × MaxTasks).
	MaxSessions int `yaml:"max_sessions_per_night"`
	// MaxTasks caps the tasks replayed per night.
	MaxTasks int `yaml:"max_tasks_per_night"`
	// MaxTokens bounds the tokens a night spends (mining, replays, judges,
	// reflection). 0 = no bound.
	MaxTokens int64 `yaml:"max_tokens_per_night"`
	// MaxUSD bounds the dollars a night spends at the price table's prices.
	MaxUSD float64 `yaml:"max_usd_per_night"`
	// ValFraction and TestFraction split tasks by a stable hash of their id.
	ValFraction  float64 `yaml:"val_fraction"`
	TestFraction float64 `yaml:"test_fraction"`
	// Backend is the model backend: a name of the backends' table (sim,
	// the simulated model, is a test double). The command checks it: this
	// package does not know the backends.
	Backend string `yaml:"backend"`
	// Model is the target model; OptimizerModel the miner's, reflector's
	// and judge's (default Model).
	Model          string `yaml:"model"`
	OptimizerModel string `yaml:"optimizer_model"`
	BaseURL        string `yaml:"base_url"`
	// APIKeyEnv names the environment variable holding the key.
	APIKeyEnv string `yaml:"api_key_env"`
	// TargetBackend, when set, is the replay target's client family, as
	// train's model.target_backend: codex_exec or claude_code_exec replay
	// through that agent CLI (the exec backend, sandboxed by default),
	// with Model as the agent's model; Backend and OptimizerModel stay the
	// miner's, reflector's and judge's. "" replays on Backend.
	TargetBackend string `yaml:"target_backend"`
	// TargetBaseURL and TargetAPIKeyEnv point the target at a server
	// (train's model.target_base_url and target_api_key_env).
	TargetBaseURL   string `yaml:"target_base_url"`
	TargetAPIKeyEnv string `yaml:"target_api_key_env"`
	// TargetOptions are the target backend's options, as train's
	// model.target_options (the exec agent's sandbox, timeout, env...).
	TargetOptions map[string]any `yaml:"target_options"`
	// CodexExecPath and ClaudeCodeExecPath are the agent CLIs' programs
	// (train's model.codex_exec_path and claude_code_exec_path).
	CodexExecPath      string `yaml:"codex_exec_path"`
	ClaudeCodeExecPath string `yaml:"claude_code_exec_path"`
	// TargetTimeout bounds one replay call, an agent's whole tool loop
	// (default 5m); TargetMaxRetries is how often a failed call is retried
	// (0 = the backend's default, negative = never).
	TargetTimeout    time.Duration `yaml:"target_timeout"`
	TargetMaxRetries int           `yaml:"target_max_retries"`
	// SimLLM serves the simulated model (a test double) on loopback for
	// the night and points the target at it, as train's runtime.sim_llm.
	SimLLM bool `yaml:"sim_llm"`
	// GateMetric is hard, soft or mixed; GateMixedWeight is the weight of
	// the soft score in mixed, (1-w)*hard + w*soft, as the trainer's
	// evaluation.gate_mixed_weight.
	GateMetric      string  `yaml:"gate_metric"`
	GateMixedWeight float64 `yaml:"gate_mixed_weight"`
	// GateNoRegression refuses an edit under which any val task scores lower.
	GateNoRegression bool `yaml:"gate_no_regression"`
	// EditBudget caps the edits one reflection proposes.
	EditBudget   int   `yaml:"edit_budget"`
	EvolveSkill  *bool `yaml:"evolve_skill"`
	EvolveMemory *bool `yaml:"evolve_memory"`
	// LLMMine mines with the model (else the heuristic miner).
	LLMMine *bool `yaml:"llm_mine"`
	// SkillPath is the live skill (default
	// ~/.claude/skills/skillfleet-sleep-learned/SKILL.md); MemoryPath the
	// live memory file (default <project>/CLAUDE.md).
	SkillPath  string `yaml:"skill_path"`
	MemoryPath string `yaml:"memory_path"`
	// SkillDir, instead of SkillPath, names a skill package directory
	// (SKILL.md, references/, scripts/): the night trains the whole
	// package. Setting both is an error.
	SkillDir string `yaml:"skill_dir"`
	// AutoAdopt adopts an accepted night at once (opt-in).
	AutoAdopt bool  `yaml:"auto_adopt"`
	Seed      int64 `yaml:"seed"`
	// Preferences are house rules shown to the reflector.
	Preferences string `yaml:"preferences"`
	// DreamRollouts is how many attempts each train task gets per train
	// wave (1 = one; more lets the reflector contrast the best attempt
	// with the worst). DreamFactor is how many rephrasings of each train
	// task the night adds as train tasks of origin dream. RecallK is how
	// many archived tasks similar to tonight's the night brings back as
	// train tasks of origin recall. Each is off (1, 0, 0) by default.
	DreamRollouts int `yaml:"dream_rollouts"`
	DreamFactor   int `yaml:"dream_factor"`
	RecallK       int `yaml:"recall_k"`
	// GateMode is on (an edit is kept only when the val score rises) or
	// off: every edit that applies is kept and the night is accepted
	// without the gate, for a user who reviews every proposal by hand (it
	// cannot be combined with auto_adopt).
	GateMode string `yaml:"gate_mode"`
	// Scope is project (the sessions of --project only) or all (the
	// sessions of every project; the memory file, one project's, is then
	// not evolved).
	Scope string `yaml:"scope"`
	// TargetTaskFilter keeps, when the night trains a skill the user
	// named (not the managed one), only the tasks that exercise it (see
	// [FilterForSkill]).
	TargetTaskFilter *bool `yaml:"target_task_filter"`
	// SkillRoot, instead of SkillPath or SkillDir, is a directory of
	// skills (each subdirectory with a SKILL.md): the night resolves the
	// skill each task exercises and runs one gated consolidation, and
	// stages one proposal, per skill (see [AssignSkills]).
	SkillRoot string `yaml:"skill_root"`
}

// Gate modes and scopes.
const (
	GateOn       = "on"
	GateOff      = "off"
	ScopeProject = "project"
	ScopeAll     = "all"
)

// Bounds of the dream and recall keys: a night's cost grows with each.
const (
	MaxDreamRollouts = 8
	MaxDreamFactor   = 4
	MaxRecallK       = 50
)

// DefaultConfig is the built-in configuration.
func DefaultConfig() Config {
	t := true
	return Config{Source: "all", LookbackHours: 72, MaxTasks: 40, MaxTokens: 400000, ValFraction: 0.34,
		GateMetric: "mixed", GateMixedWeight: 0.5, EditBudget: 4, EvolveSkill: &t, EvolveMemory: &t, LLMMine: &t, Seed: 42, DreamRollouts: 1,
		GateMode: GateOn, Scope: ScopeProject, TargetTaskFilter: &t}
}

// LoadConfig reads a YAML config file over the defaults; unknown keys are
// errors naming the file and key. A missing file at an implicit path is
// not an error (explicit=false).
func LoadConfig(path string, explicit bool) (Config, error) {
	c := DefaultConfig()
	if path == "" {
		return c, nil
	}
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) && !explicit {
		return c, nil
	}
	if err != nil {
		return c, fmt.Errorf("config: %w", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	if err := dec.Decode(&c); err != nil && !errors.Is(err, io.EOF) {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("config %s: %w", path, err)
	}
	return c, nil
}

// Validate checks every field; errors name the field.
func (c Config) Validate() error {
	switch {
	case c.Source != "all" && !slices.Contains(Sources(), c.Source):
		return fmt.Errorf("source: %q: want one of %s or all", c.Source, strings.Join(Sources(), ", "))
	case c.LookbackHours <= 0:
		return fmt.Errorf("lookback_hours: %v: must be positive", c.LookbackHours)
	case c.MaxTasks <= 0:
		return fmt.Errorf("max_tasks_per_night: %d: must be positive", c.MaxTasks)
	case c.MaxSessions < 0 || c.MaxTokens < 0 || c.MaxUSD < 0:
		return errors.New("max_sessions_per_night, max_tokens_per_night, max_usd_per_night: must not be negative")
	case c.ValFraction < 0 || c.TestFraction < 0 || c.ValFraction+c.TestFraction >= 1:
		return fmt.Errorf("val_fraction %v + test_fraction %v: each ≥ 0, sum < 1", c.ValFraction, c.TestFraction)
	case !slices.Contains([]string{"hard", "soft", "mixed"}, c.GateMetric):
		return fmt.Errorf("gate_metric: %q: want hard, soft or mixed", c.GateMetric)
	case c.GateMixedWeight < 0 || c.GateMixedWeight > 1:
		return fmt.Errorf("gate_mixed_weight: %v: want 0..1", c.GateMixedWeight)
	case c.EditBudget <= 0:
		return fmt.Errorf("edit_budget: %d: must be positive", c.EditBudget)
	case c.TargetTimeout < 0:
		return fmt.Errorf("target_timeout: %v: must not be negative", c.TargetTimeout)
	case c.DreamRollouts < 1 || c.DreamRollouts > MaxDreamRollouts:
		return fmt.Errorf("dream_rollouts: %d: want 1..%d (1 = one attempt per train task)", c.DreamRollouts, MaxDreamRollouts)
	case c.DreamFactor < 0 || c.DreamFactor > MaxDreamFactor:
		return fmt.Errorf("dream_factor: %d: want 0..%d (0 = no dream tasks)", c.DreamFactor, MaxDreamFactor)
	case c.RecallK < 0 || c.RecallK > MaxRecallK:
		return fmt.Errorf("recall_k: %d: want 0..%d (0 = no recall)", c.RecallK, MaxRecallK)
	case c.GateMode != GateOn && c.GateMode != GateOff:
		return fmt.Errorf("gate_mode: %q: want on or off", c.GateMode)
	case c.GateMode == GateOff && c.AutoAdopt:
		return errors.New("gate_mode off with auto_adopt: an ungated night must be reviewed before it is adopted; turn one of them off")
	case c.Scope != ScopeProject && c.Scope != ScopeAll:
		return fmt.Errorf("scope: %q: want project or all", c.Scope)
	case c.SkillRoot != "" && (c.SkillPath != "" || c.SkillDir != ""):
		return fmt.Errorf("skill_root %q with skill_path %q or skill_dir %q: set one (skill_root trains every skill below it)", c.SkillRoot, c.SkillPath, c.SkillDir)
	case c.SkillRoot != "" && c.AutoAdopt:
		return errors.New("skill_root with auto_adopt: adopt a multi-skill night's proposals with sleep adopt --skill NAME or --all-skills")
	case c.SkillPath != "" && c.SkillDir != "":
		return fmt.Errorf("skill_path %q and skill_dir %q: set one (skill_dir trains the whole package, skill_path one SKILL.md)", c.SkillPath, c.SkillDir)
	}
	return nil
}
