// Package config loads a run configuration: SkillOpt's YAML shape (sections
// model, train, gradient, optimizer, evaluation, env) plus skillfleet's own
// budget and runtime sections.
//
// A file may name a parent with `_base_: relative/path.yaml`; parents are
// deep-merged under their children, recursively, and a key may be written
// nested (`train: {seed: 1}`) or flat at the top level (`train.seed: 1`).
// Overrides given as `section.key=value` (the CLI's --set) are applied last.
// Every error names the file and the key it is about ([FieldError]); keys
// outside env.* are checked strictly, and enumerations are normalised from
// SkillOpt's aliases to one canonical spelling.
//
// The package does no I/O beyond reading the config files, checking that
// env.skill_init exists, and [Config.WriteResolved]. Derived quantities
// (steps per epoch, total steps) belong to the trainer.
package config

import (
	"cmp"
	"runtime"
	"time"
)

// Config is one resolved run configuration. Load returns it normalised and
// validated; Default returns SkillOpt's base recipe.
type Config struct {
	Model      Model      `yaml:"model"`
	Train      Train      `yaml:"train"`
	Gradient   Gradient   `yaml:"gradient"`
	Optimizer  Optimizer  `yaml:"optimizer"`
	Evaluation Evaluation `yaml:"evaluation"`
	Env        Env        `yaml:"env"`
	Budget     Budget     `yaml:"budget"`
	Runtime    Runtime    `yaml:"runtime"`

	// File is the config file Load was given ("" for Default).
	File string `yaml:"-"`
	// Files lists every file read, the most basic parent first.
	Files []string `yaml:"-"`
	// Warnings are accepted but questionable settings: secrets written in a
	// file, deprecated or ignored keys, forced settings. Callers log them.
	Warnings []Warning `yaml:"-"`

	// src maps "section.key" to the file (or "--set") that set it.
	src map[string]string
}

// Model says which models play the two roles and how to reach them.
//
// The azure_openai_*, qwen_chat_*, minimax_*, codex_exec_*,
// claude_code_exec_*, cursor_exec_* and copilot_* keys are SkillOpt's and
// are accepted so that its configs load; skillfleet's own backends read
// the role settings returned by [Model.Role].
type Model struct {
	// Backend is the high-level label that pairs role backends (SkillOpt's
	// model_backend): azure_openai, openai_compatible, claude, codex, ...
	// Default azure_openai.
	Backend string `yaml:"backend"`
	// Optimizer and Target are model (or deployment) names. Default gpt-5.5.
	Optimizer string `yaml:"optimizer"`
	Target    string `yaml:"target"`
	// OptimizerBackend and TargetBackend are client families. After Load they
	// hold the resolved family: a role left "" or openai_chat takes the
	// label's pairing. Default openai_chat.
	OptimizerBackend string `yaml:"optimizer_backend"`
	TargetBackend    string `yaml:"target_backend"`
	// ReasoningEffort is the global effort ("" = not sent). Default medium.
	ReasoningEffort string `yaml:"reasoning_effort"`
	// RewriteReasoningEffort is the effort of the rewrite call ("" = global).
	RewriteReasoningEffort string `yaml:"rewrite_reasoning_effort"`
	// RewriteMaxCompletionTokens caps the rewrite reply. Default 64000.
	RewriteMaxCompletionTokens int `yaml:"rewrite_max_completion_tokens"`

	// skillfleet's per-role settings.

	// OptimizerBaseURL and TargetBaseURL point an OpenAI-compatible client
	// at a server ("" = the backend's default).
	OptimizerBaseURL string `yaml:"optimizer_base_url"`
	TargetBaseURL    string `yaml:"target_base_url"`
	// OptimizerAPIKeyEnv and TargetAPIKeyEnv name the environment variables
	// that hold the keys ("" = the backend's default variable). Never keys.
	OptimizerAPIKeyEnv string `yaml:"optimizer_api_key_env"`
	TargetAPIKeyEnv    string `yaml:"target_api_key_env"`
	// OptimizerAPIKey and TargetAPIKey are keys written in the config;
	// accepted with a warning. Prefer the *_api_key_env variables.
	OptimizerAPIKey Secret `yaml:"optimizer_api_key"`
	TargetAPIKey    Secret `yaml:"target_api_key"`
	// OptimizerTemperature and TargetTemperature are sampling temperatures
	// (nil = not sent).
	OptimizerTemperature *float64 `yaml:"optimizer_temperature"`
	TargetTemperature    *float64 `yaml:"target_temperature"`
	// OptimizerMaxTokens caps every optimizer reply (0 = each stage's own
	// cap: 16384 for analysts, rewrite_max_completion_tokens for rewrites).
	OptimizerMaxTokens int `yaml:"optimizer_max_tokens"`
	// TargetMaxTokens caps every target reply (0 = env.max_completion_tokens).
	TargetMaxTokens int `yaml:"target_max_tokens"`
	// Timeout bounds one model call, retries excluded. Default 10m.
	Timeout time.Duration `yaml:"timeout"`
	// MaxRetries is how often a retryable call failure is retried. Default 3.
	MaxRetries int `yaml:"max_retries"`
	// OptimizerOptions and TargetOptions are handed to the role's backend
	// as they are: rate limits (rpm, tpm, max_concurrency), retry and
	// circuit settings, the OpenAI wire policy, Anthropic prompt caching,
	// the exec agent's command (docs/backends.md lists every key).
	OptimizerOptions map[string]any `yaml:"optimizer_options"`
	TargetOptions    map[string]any `yaml:"target_options"`

	// SkillOpt's harness and client keys.

	CodexExecPath            string `yaml:"codex_exec_path"`
	CodexExecSandbox         string `yaml:"codex_exec_sandbox"`
	CodexExecProfile         string `yaml:"codex_exec_profile"`
	CodexExecReasoningEffort string `yaml:"codex_exec_reasoning_effort"`
	CodexExecUseSDK          *bool  `yaml:"codex_exec_use_sdk"`
	CodexExecNetworkAccess   *bool  `yaml:"codex_exec_network_access"`
	// CodexExecWebSearch is kept as written (a boolean or a mode name).
	CodexExecWebSearch      string `yaml:"codex_exec_web_search"`
	CodexExecApprovalPolicy string `yaml:"codex_exec_approval_policy"`
	// CodexExecFullAuto is deprecated in SkillOpt and ignored (a warning).
	CodexExecFullAuto *bool `yaml:"codex_exec_full_auto"`
	// CodexTraceToOptimizer adds exec-harness trace summaries to analyst
	// input. Default true.
	CodexTraceToOptimizer bool `yaml:"codex_trace_to_optimizer"`

	ClaudeCodeExecPath              string `yaml:"claude_code_exec_path"`
	ClaudeCodeExecProfile           string `yaml:"claude_code_exec_profile"`
	ClaudeCodeExecUseSDK            string `yaml:"claude_code_exec_use_sdk"`
	ClaudeCodeExecEffort            string `yaml:"claude_code_exec_effort"`
	ClaudeCodeExecMaxThinkingTokens int    `yaml:"claude_code_exec_max_thinking_tokens"`

	CursorExecPath    string `yaml:"cursor_exec_path"`
	CursorExecSandbox string `yaml:"cursor_exec_sandbox"`

	CopilotExecPath           string        `yaml:"copilot_exec_path"`
	CopilotExecHome           string        `yaml:"copilot_exec_home"`
	CopilotExecAllowAllTools  *bool         `yaml:"copilot_exec_allow_all_tools"`
	CopilotChatOptimizerModel string        `yaml:"copilot_chat_optimizer_model"`
	CopilotChatTargetModel    string        `yaml:"copilot_chat_target_model"`
	CopilotChatTimeout        time.Duration `yaml:"copilot_chat_timeout"`

	// Azure holds the azure_openai_* keys; OptimizerAzure and TargetAzure
	// the optimizer_/target_ prefixed variants ("" = use Azure's value).
	// The legacy keys azure_endpoint, azure_api_version and azure_api_key
	// are read into Azure with a warning.
	Azure          Azure `yaml:",inline"`
	OptimizerAzure Azure `yaml:",inline" prefix:"optimizer_"`
	TargetAzure    Azure `yaml:",inline" prefix:"target_"`

	// Qwen holds the qwen_chat_* keys, with role-prefixed variants.
	Qwen          Qwen `yaml:",inline"`
	OptimizerQwen Qwen `yaml:",inline" prefix:"optimizer_"`
	TargetQwen    Qwen `yaml:",inline" prefix:"target_"`

	// MiniMax holds the minimax_* keys; OptimizerMiniMax and TargetMiniMax
	// the per-role optimizer_/target_ minimax_base_url and minimax_api_key
	// overrides ("" = MiniMax's value). [Model.Role] applies them to a role
	// whose backend is minimax_chat.
	MiniMax          MiniMax         `yaml:",inline"`
	OptimizerMiniMax MiniMaxEndpoint `yaml:",inline" prefix:"optimizer_"`
	TargetMiniMax    MiniMaxEndpoint `yaml:",inline" prefix:"target_"`
}

// Azure is SkillOpt's Azure OpenAI client block.
type Azure struct {
	Endpoint   string `yaml:"azure_openai_endpoint"`
	APIVersion string `yaml:"azure_openai_api_version"`
	APIKey     Secret `yaml:"azure_openai_api_key"`
	// AuthMode is api_key, azure_cli, managed_identity (aad, azure_ad),
	// workload_identity, token or openai_compatible ("" = the
	// AZURE_OPENAI_AUTH_MODE variable, else api_key when
	// AZURE_OPENAI_API_KEY is set and azure_cli when not).
	AuthMode                string `yaml:"azure_openai_auth_mode"`
	ADScope                 string `yaml:"azure_openai_ad_scope"`
	ManagedIdentityClientID string `yaml:"azure_openai_managed_identity_client_id"`
}

// AzureFor returns the Azure settings of a role: each optimizer_/target_
// prefixed key that is set wins over the shared azure_openai_* key.
func (m *Model) AzureFor(role string) Azure {
	a, o := m.Azure, m.OptimizerAzure
	if role == RoleTarget {
		o = m.TargetAzure
	}
	a.Endpoint = cmp.Or(o.Endpoint, a.Endpoint)
	a.APIVersion = cmp.Or(o.APIVersion, a.APIVersion)
	if !o.APIKey.IsZero() {
		a.APIKey = o.APIKey
	}
	a.AuthMode = cmp.Or(o.AuthMode, a.AuthMode)
	a.ADScope = cmp.Or(o.ADScope, a.ADScope)
	a.ManagedIdentityClientID = cmp.Or(o.ManagedIdentityClientID, a.ManagedIdentityClientID)
	return a
}

// Qwen is SkillOpt's Qwen (OpenAI-compatible HTTP) client block. Nil and
// empty values defer to the QWEN_CHAT_* variables.
type Qwen struct {
	BaseURL        string   `yaml:"qwen_chat_base_url"`
	APIKey         Secret   `yaml:"qwen_chat_api_key"`
	Temperature    *float64 `yaml:"qwen_chat_temperature"`
	TimeoutSeconds *float64 `yaml:"qwen_chat_timeout_seconds"`
	MaxTokens      *int     `yaml:"qwen_chat_max_tokens"`
	EnableThinking *bool    `yaml:"qwen_chat_enable_thinking"`
	// ThinkingMode is "" (server default), server_default, enabled or disabled.
	ThinkingMode string `yaml:"qwen_chat_thinking_mode"`
}

// MiniMax is SkillOpt's MiniMax target block.
type MiniMax struct {
	// Region is "" , global_en or cn_zh.
	Region         string  `yaml:"minimax_region"`
	BaseURL        string  `yaml:"minimax_base_url"`
	APIKey         Secret  `yaml:"minimax_api_key"`
	Model          string  `yaml:"minimax_model"`
	Temperature    float64 `yaml:"minimax_temperature"`
	MaxTokens      int     `yaml:"minimax_max_tokens"`
	EnableThinking bool    `yaml:"minimax_enable_thinking"`
}

// MiniMaxEndpoint is a role's MiniMax server and key (SkillOpt's
// optimizer_minimax_* and target_minimax_* keys).
type MiniMaxEndpoint struct {
	BaseURL string `yaml:"minimax_base_url"`
	APIKey  Secret `yaml:"minimax_api_key"`
}

// Train is the epoch and batch plan.
type Train struct {
	// NumEpochs is the number of epochs. Default 4.
	NumEpochs int `yaml:"num_epochs"`
	// TrainSize, if > 0, must equal the train split's size. Default 0.
	TrainSize int `yaml:"train_size"`
	// StepsPerEpoch is accepted for SkillOpt configs and ignored: the
	// trainer derives it from the train split.
	StepsPerEpoch int `yaml:"steps_per_epoch"`
	// BatchSize is the items per rollout batch. Default 40.
	BatchSize int `yaml:"batch_size"`
	// Accumulation is the rollout+reflect batches per step. Default 1.
	Accumulation int `yaml:"accumulation"`
	// Seed is the root seed of every sampling decision. Default 42.
	Seed int64 `yaml:"seed"`
}

// Gradient is reflection and aggregation.
type Gradient struct {
	// MinibatchSize is the trajectories per analyst call. Default 8.
	MinibatchSize int `yaml:"minibatch_size"`
	// MergeBatchSize is the patches per merge call (>= 2). Default 8.
	MergeBatchSize int `yaml:"merge_batch_size"`
	// FailureOnly skips the success analysts. Default false.
	FailureOnly bool `yaml:"failure_only"`
	// gradient.analyst_workers is read into Runtime.OptimizerConcurrency.
}

// Optimizer is the learning-rate (edit budget) control and the skill update.
type Optimizer struct {
	// LearningRate is the maximum number of items applied per step, and the
	// item cap of each analyst reply. Default 4.
	LearningRate int `yaml:"learning_rate"`
	// MinLearningRate is the floor of the linear and cosine schedules. Default 2.
	MinLearningRate int `yaml:"min_learning_rate"`
	// LRScheduler is constant, linear, cosine or autonomous (no cap).
	// Default cosine.
	LRScheduler string `yaml:"lr_scheduler"`
	// LRControlMode is fixed (the scheduler), autonomous (an optimizer call
	// picks the budget) or none (full rewrite only). Default fixed.
	LRControlMode string `yaml:"lr_control_mode"`
	// SkillUpdateMode is patch, rewrite_from_suggestions or
	// full_rewrite_minibatch. Default patch.
	SkillUpdateMode string `yaml:"skill_update_mode"`
	// MetaLearningRate is accepted for SkillOpt configs and unused.
	MetaLearningRate int `yaml:"meta_learning_rate"`
	// UseSlowUpdate runs the epoch-boundary slow update. Default true.
	UseSlowUpdate bool `yaml:"use_slow_update"`
	// SlowUpdateSamples is the train items compared across epochs. Default 20.
	SlowUpdateSamples int `yaml:"slow_update_samples"`
	// SlowUpdateGateWithSelection gates the slow update on the selection
	// split instead of force-accepting it. Default false.
	SlowUpdateGateWithSelection bool `yaml:"slow_update_gate_with_selection"`
	// LongitudinalPairPolicy is mixed, changed or unchanged. Default mixed.
	LongitudinalPairPolicy string `yaml:"longitudinal_pair_policy"`
	// UseMetaSkill keeps the optimizer's epoch-level memory. Default true.
	UseMetaSkill bool `yaml:"use_meta_skill"`
	// UseSkillAwareReflection splits failures into skill defects and
	// execution lapses (lapses go to the appendix). Default false.
	UseSkillAwareReflection bool `yaml:"use_skill_aware_reflection"`
	// SkillAwareAppendixSource is both or failure_only. Default both.
	SkillAwareAppendixSource string `yaml:"skill_aware_appendix_source"`
	// SkillAwareConsolidateThreshold > 0 compacts the appendix once it holds
	// more notes than this. Default 0.
	SkillAwareConsolidateThreshold int `yaml:"skill_aware_consolidate_threshold"`
	// FilterRejected drops merged items equal to an edit rejected earlier
	// in the epoch before ranking (skillfleet). Default false.
	FilterRejected bool `yaml:"filter_rejected"`
	// UseStepBuffer feeds the epoch's previous steps (rejected edits,
	// failure patterns) back to the analysts, LR controller and rewriter.
	// Default true; off only to measure what the buffer is worth.
	UseStepBuffer bool `yaml:"use_step_buffer"`
	// TrainDescription lets patch edits replace SKILL.md's front-matter
	// description (set_description, one line of at most 1024 characters;
	// docs/skill-packages.md). Default false: the description is kept.
	TrainDescription bool `yaml:"train_description"`
}

// Evaluation is the validation gate and the final evaluation.
type Evaluation struct {
	// UseGate gates candidates on the selection split; false force-accepts.
	// Default true.
	UseGate bool `yaml:"use_gate"`
	// GateMetric is hard, soft or mixed. Default hard.
	GateMetric string `yaml:"gate_metric"`
	// GateMixedWeight is the soft weight of the mixed metric, in [0,1].
	// Default 0.5.
	GateMixedWeight float64 `yaml:"gate_mixed_weight"`
	// UseSemanticDensity adds a leading-word density bonus. Default false.
	UseSemanticDensity bool `yaml:"use_semantic_density"`
	// SemanticDensityWeight is the bonus weight. Default 0.05.
	SemanticDensityWeight float64 `yaml:"semantic_density_weight"`
	// LeadingWords is the density vocabulary (a list or a comma string).
	LeadingWords []string `yaml:"leading_words"`
	// SelEnvNum and TestEnvNum take the first N items of the selection and
	// test splits (0 = all). Default 0.
	SelEnvNum  int `yaml:"sel_env_num"`
	TestEnvNum int `yaml:"test_env_num"`
	// EvalTest runs the final validation and test evaluations. Default true.
	EvalTest bool `yaml:"eval_test"`

	// EarlyStop stops a candidate's selection rollouts once it can no
	// longer beat the current score (skillfleet). Default true.
	EarlyStop bool `yaml:"early_stop"`
	// MinCoverage is the least fraction of gate items that must be scored
	// (not infrastructure failures), in (0,1]. Default 0.95.
	MinCoverage float64 `yaml:"min_coverage"`
	// GateTest is none (strict improvement) or paired (a paired test at
	// GateAlpha). Default none.
	GateTest string `yaml:"gate_test"`
	// GateAlpha is the paired test's (one-sided) significance level.
	// Default 0.2: a candidate no better than current passes at most one
	// time in five, against about one in two for the strict gate, while
	// real improvements on a small selection split still get through
	// (docs/skillopt.md has the measurement).
	GateAlpha float64 `yaml:"gate_alpha"`
	// GateRepeats is the samples per gate item. Default 1.
	GateRepeats int `yaml:"gate_repeats"`
}

// Env is the benchmark and its data. Keys it does not name are kept in
// Extra for the benchmark, which decodes them with [Env.DecodeExtra].
type Env struct {
	// Name is the benchmark's registry key. Required.
	Name string `yaml:"name"`
	// SkillInit is the initial skill's path (relative to the working
	// directory). Required; the file must exist.
	SkillInit string `yaml:"skill_init"`
	// OutRoot is the run directory ("" = the CLI picks one).
	OutRoot string `yaml:"out_root"`
	// SplitMode is ratio (split data_path) or split_dir. Default ratio.
	SplitMode string `yaml:"split_mode"`
	// SplitRatio is train:val:test in positive integers. Default "2:1:7".
	SplitRatio string `yaml:"split_ratio"`
	// SplitSeed seeds the ratio split's shuffle. Default 42.
	SplitSeed int64 `yaml:"split_seed"`
	// SplitDir, DataPath and SplitOutputDir are data locations.
	SplitDir       string `yaml:"split_dir"`
	DataPath       string `yaml:"data_path"`
	SplitOutputDir string `yaml:"split_output_dir"`
	// ExecTimeout bounds one target call or task (a duration or seconds).
	// Default 120s.
	ExecTimeout time.Duration `yaml:"exec_timeout"`
	// Workers is SkillOpt's rollout pool size (0 = benchmark default); our
	// workers size their pools with runtime.rollout_concurrency.
	Workers int `yaml:"workers"`
	// Limit truncates every split to its first N items (0 = no limit).
	Limit int `yaml:"limit"`
	// MaxCompletionTokens caps target replies. Default 16384.
	MaxCompletionTokens int `yaml:"max_completion_tokens"`
	// MaxTurns is the agent's turn limit (0 = benchmark default).
	MaxTurns int `yaml:"max_turns"`
	// IDField names the item field that holds each item's id ("" = the
	// benchmark's own id fields; data where no item has one is numbered
	// by row: row-N, or <split>-row-N in a split directory).
	IDField string `yaml:"id_field"`

	// Extra holds every other env key, decoded as YAML scalars, lists and
	// maps. Values of secret-like keys (*_api_key, *_token, ...) are Secrets.
	Extra map[string]any `yaml:"-"`

	// extra keeps the nodes behind Extra, for file-naming errors.
	extra map[string]*tnode
}

// Budget stops a run cleanly (with a checkpoint) when any limit is reached.
// Zero means no limit.
type Budget struct {
	// MaxTokens limits input+output tokens over both roles.
	MaxTokens int64 `yaml:"max_tokens"`
	// MaxUSD limits the estimated cost in US dollars.
	MaxUSD float64 `yaml:"max_usd"`
	// MaxCalls limits model calls over both roles.
	MaxCalls int64 `yaml:"max_calls"`
	// MaxWall limits the run's wall-clock time.
	MaxWall time.Duration `yaml:"max_wall"`
}

// Runtime sizes the distributed execution. None of it changes a decision.
type Runtime struct {
	// Workers is the in-process workers of all-in-one mode. Default: the
	// number of CPUs.
	Workers int `yaml:"workers"`
	// RolloutConcurrency is the rollouts one worker runs at once. Default 24.
	RolloutConcurrency int `yaml:"rollout_concurrency"`
	// OptimizerConcurrency is the optimizer calls one worker runs at once;
	// SkillOpt's gradient.analyst_workers sets the same value. Default 16.
	OptimizerConcurrency int `yaml:"optimizer_concurrency"`
	// TaskTimeout bounds one task (an agent loop or an optimizer call with
	// its retries). Default 30m.
	TaskTimeout time.Duration `yaml:"task_timeout"`
	// MaxDeliveries is how often a task is delivered before it is given up
	// as failed. Default 5.
	MaxDeliveries int `yaml:"max_deliveries"`
	// SimLLM starts the simulated model (a test double) on a loopback port
	// inside `skillfleet train` and points both roles at it through the
	// OpenAI-compatible HTTP client. For demos and tests only.
	SimLLM bool `yaml:"sim_llm"`
	// Speculate starts the next step's rollouts for both possible skills
	// (candidate and current) while a gate runs, and cancels the branch the
	// gate rules out. It trades extra target calls (the cancelled branch's
	// rollouts already running) for wall time on a wide worker pool; the
	// decisions are the same. Default false.
	Speculate bool `yaml:"speculate"`
	// Prefetch starts the next step's rollouts for the current skill in
	// the target slots a step's optimizer waves leave idle, betting that
	// the gate rejects (most do): the next step then finds its rollouts
	// done or under way. When the gate accepts instead, the prefetched
	// rollouts are withdrawn, and those that ran are paid for (tokens.json
	// stage "prefetch"): at most one batch of rollouts per accepted step.
	// auto prefetches once the target model's observed task times have a
	// heavy tail (their 90th percentile at least twice their median and
	// half a second beyond it; it needs hedge on, which observes them), where a rollout wave waits
	// longest for its slowest call; on always; off never. The decisions
	// are the same. Default auto.
	Prefetch string `yaml:"prefetch"`
	// Hedge re-issues the stragglers of the waves the training loop waits
	// for (rollouts, gate evaluations, optimizer waves; not background
	// work): once a wave is down to its last round and a task has been out
	// HedgeMultiplier × the HedgeQuantile of its model and stage's
	// observed times (and at least twice their median), a copy goes to
	// the queue; the first answer stands for the task and the other is
	// cancelled, its calls counted as hedged in tokens.json. Decisions are
	// the same. Default true.
	Hedge bool `yaml:"hedge"`
	// HedgeBudget caps one wave's copies at this fraction of its tasks,
	// rounded up (at least two, or the wave's one task). Default 0.15.
	HedgeBudget float64 `yaml:"hedge_budget"`
	// HedgeMaxExtra caps the run's copies at this fraction of the tasks
	// the loop waited for (plus one wave's budget). Default 0.05.
	HedgeMaxExtra float64 `yaml:"hedge_max_extra"`
	// HedgeQuantile and HedgeMultiplier set the delay (defaults 0.8 and
	// 2: about 4.6 medians under a log-normal tail of sigma 1, the
	// slowest 6% of calls; two under a steady latency, where next to
	// nothing is that late).
	HedgeQuantile   float64 `yaml:"hedge_quantile"`
	HedgeMultiplier float64 `yaml:"hedge_multiplier"`
	// IdleFill runs the seed skill's test evaluation (needed only by the
	// final report) in the target slots the optimizer waves leave idle,
	// instead of after training. Same results, less wall time; it spends
	// those test calls early. Default true.
	IdleFill bool `yaml:"idle_fill"`
	// NATSReplicas is how many servers of a NATS cluster keep the task
	// stream and the run directory (1 to 5, at most the cluster's size);
	// --nats-replicas overrides it. 0 keeps their current count (1 for
	// new ones).
	NATSReplicas int `yaml:"nats_replicas"`
	// GateWindow bounds an early-stoppable gate evaluation's tasks in
	// flight: no more than the results its stopping rule still needs to
	// reject the candidate, plus one for each selection item the candidate
	// has passed so far, so the window widens while the candidate keeps up.
	// A rejected candidate then costs about the calls the stop needed
	// whatever the fleet's width; an accepted one takes a few more waves.
	// The decisions are the same either way. Default true.
	GateWindow bool `yaml:"gate_window"`
}

// defaultLeadingWords is SkillOpt's leading-word vocabulary for the
// semantic-density bonus.
var defaultLeadingWords = []string{
	"MUST", "ALWAYS", "NEVER", "ONLY", "CRITICAL", "IMPORTANT",
	"RESOLVE", "PREFER", "ENSURE", "STRICT", "VERIFY",
}

// DefaultLeadingWords returns SkillOpt's leading-word vocabulary.
func DefaultLeadingWords() []string { return append([]string(nil), defaultLeadingWords...) }

// Default returns SkillOpt's base recipe with skillfleet's additions. It is
// not valid on its own: env.name and env.skill_init must be set.
func Default() *Config {
	return &Config{
		Model: Model{
			OptimizerOptions:           map[string]any{},
			TargetOptions:              map[string]any{},
			Backend:                    "azure_openai",
			Optimizer:                  "gpt-5.5",
			Target:                     "gpt-5.5",
			OptimizerBackend:           "openai_chat",
			TargetBackend:              "openai_chat",
			ReasoningEffort:            "medium",
			RewriteMaxCompletionTokens: 64000,
			Timeout:                    10 * time.Minute,
			MaxRetries:                 3,
			CodexTraceToOptimizer:      true,

			ClaudeCodeExecPath:              "claude",
			ClaudeCodeExecUseSDK:            "auto",
			ClaudeCodeExecEffort:            "medium",
			ClaudeCodeExecMaxThinkingTokens: 16384,

			Azure: Azure{
				APIVersion: "2024-12-01-preview",
				ADScope:    "https://cognitiveservices.azure.com/.default",
			},
			MiniMax: MiniMax{
				Model:       "MiniMax-M3",
				Temperature: 0.7,
				MaxTokens:   8000,
			},
		},
		Train: Train{
			NumEpochs:    4,
			BatchSize:    40,
			Accumulation: 1,
			Seed:         42,
		},
		Gradient: Gradient{
			MinibatchSize:  8,
			MergeBatchSize: 8,
		},
		Optimizer: Optimizer{
			LearningRate:             4,
			MinLearningRate:          2,
			LRScheduler:              "cosine",
			LRControlMode:            "fixed",
			SkillUpdateMode:          "patch",
			UseSlowUpdate:            true,
			SlowUpdateSamples:        20,
			LongitudinalPairPolicy:   "mixed",
			UseMetaSkill:             true,
			UseStepBuffer:            true,
			SkillAwareAppendixSource: "both",
		},
		Evaluation: Evaluation{
			UseGate:               true,
			GateMetric:            "hard",
			GateMixedWeight:       0.5,
			SemanticDensityWeight: 0.05,
			LeadingWords:          DefaultLeadingWords(),
			EvalTest:              true,
			EarlyStop:             true,
			MinCoverage:           0.95,
			GateTest:              "none",
			GateAlpha:             0.2,
			GateRepeats:           1,
		},
		Env: Env{
			SplitMode:           "ratio",
			SplitRatio:          "2:1:7",
			SplitSeed:           42,
			ExecTimeout:         120 * time.Second,
			MaxCompletionTokens: 16384,
		},
		Runtime: Runtime{
			Workers:              runtime.NumCPU(),
			RolloutConcurrency:   24,
			OptimizerConcurrency: 16,
			TaskTimeout:          30 * time.Minute,
			MaxDeliveries:        5,
			IdleFill:             true,
			Prefetch:             "auto",
			Hedge:                true,
			HedgeBudget:          0.15,
			HedgeMaxExtra:        0.05,
			HedgeQuantile:        0.8,
			HedgeMultiplier:      2,
			GateWindow:           true,
		},
	}
}
