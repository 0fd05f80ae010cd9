package config

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/pkg/bench"
)

// Update modes (optimizer.skill_update_mode).
const (
	ModePatch       = "patch"
	ModeRewrite     = "rewrite_from_suggestions"
	ModeFullRewrite = "full_rewrite_minibatch"
)

// LR control modes (optimizer.lr_control_mode).
const (
	LRFixed      = "fixed"
	LRAutonomous = "autonomous"
	LRNone       = "none"
)

// Roles.
const (
	RoleOptimizer = "optimizer"
	RoleTarget    = "target"
)

// enum is a closed set of values with SkillOpt's aliases.
type enum struct {
	values  []string          // canonical, in the order error messages list them
	aliases map[string]string // alias -> canonical
}

var (
	updateModes = enum{
		values: []string{ModePatch, ModeRewrite, ModeFullRewrite},
		aliases: map[string]string{
			"edits":   ModePatch,
			"rewrite": ModeRewrite, "suggestions": ModeRewrite, "rewrite_suggestions": ModeRewrite,
			"full_rewrite": ModeFullRewrite, "minibatch_full_rewrite": ModeFullRewrite, "skill_rewrite_minibatch": ModeFullRewrite,
		},
	}
	lrControlModes = enum{
		values: []string{LRFixed, LRAutonomous, LRNone},
		aliases: map[string]string{
			"manual": LRFixed, "scheduler": LRFixed,
			"auto": LRAutonomous, "optimizer": LRAutonomous,
			"off": LRNone, "no_lr": LRNone,
		},
	}
	pairPolicies = enum{
		values: []string{"mixed", "changed", "unchanged"},
		aliases: map[string]string{
			"default": "mixed", "random": "mixed", "all": "mixed",
			"change": "changed", "delta": "changed", "10_01": "changed", "01_10": "changed",
			"stable": "unchanged", "same": "unchanged", "00_11": "unchanged",
		},
	}
	lrSchedulers    = enum{values: []string{"constant", "linear", "cosine", "autonomous"}}
	appendixSources = enum{values: []string{"both", "failure_only"}}
	gateMetrics     = enum{values: []string{"hard", "soft", "mixed"}}
	gateTests       = enum{values: []string{"none", "paired"}}
	prefetchModes   = enum{values: []string{"auto", "on", "off"}, aliases: map[string]string{"true": "on", "false": "off"}}
	splitModes      = enum{values: []string{"ratio", "split_dir"}}
	efforts         = enum{values: []string{"", "none", "minimal", "low", "medium", "high", "xhigh", "max"}}
	azureAuthModes  = enum{values: []string{"", "api_key", "azure_cli", "managed_identity", "aad", "azure_ad", "workload_identity", "token", "openai_compatible"}}
	thinkingModes   = enum{values: []string{"", "server_default", "enabled", "disabled"}}
	minimaxRegions  = enum{values: []string{"", "global_en", "cn_zh"}}

	// envAliases maps SkillOpt's env names to skillfleet's benchmark names
	// where they differ, so that SkillOpt's configs load unchanged.
	envAliases = map[string]string{
		"livemathematicianbench": "livemath",
		"spreadsheetbench":       "spreadsheet",
	}
	// backendPairs maps SkillOpt's model.backend labels to (optimizer,
	// target) families. Any other label names one family for both roles.
	// Which families a backend implements is the backends package's table
	// (backends.CheckConfig), not this file's.
	backendPairs = map[string][2]string{
		"":                  {"openai_chat", "openai_chat"},
		"azure_openai":      {"openai_chat", "openai_chat"},
		"openai_chat":       {"openai_chat", "openai_chat"},
		"openai_compatible": {"openai_compatible", "openai_compatible"},
		"openai":            {"openai", "openai"},
		"anthropic":         {"anthropic", "anthropic"},
		"sim":               {"sim", "sim"},
		"claude":            {"claude_chat", "claude_chat"},
		"claude_chat":       {"claude_chat", "claude_chat"},
		"codex":             {"codex_exec", "codex_exec"},
		"codex_exec":        {"codex_exec", "codex_exec"},
		"copilot":           {"copilot_chat", "copilot_chat"},
		"copilot_chat":      {"copilot_chat", "copilot_chat"},
		"claude_code_exec":  {"openai_chat", "claude_code_exec"},
		"cursor":            {"openai_chat", "cursor_exec"},
		"cursor_exec":       {"openai_chat", "cursor_exec"},
		"copilot_exec":      {"openai_chat", "copilot_exec"},
		"qwen":              {"openai_chat", "qwen_chat"},
		"qwen_chat":         {"openai_chat", "qwen_chat"},
		"minimax":           {"openai_chat", "minimax_chat"},
		"minimax_chat":      {"openai_chat", "minimax_chat"},
	}
)

// canonical maps s to its canonical value: case and surrounding space are
// ignored, "-" reads as "_", and aliases resolve.
func (e enum) canonical(s string) (string, bool) {
	k := strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "-", "_")
	if c, ok := e.aliases[k]; ok {
		return c, true
	}
	for _, v := range e.values {
		if v == k {
			return v, true
		}
	}
	return "", false
}

func (e enum) list() string {
	q := make([]string, len(e.values))
	for i, v := range e.values {
		q[i] = strconv.Quote(v)
		if v != "" && !strings.ContainsAny(v, " :") {
			q[i] = v
		}
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

// source returns the file that set path: its own source, else the
// top-level file.
func (c *Config) source(path string) string {
	if f, ok := c.src[path]; ok {
		return f
	}
	return c.File
}

func (c *Config) fieldErr(path, format string, args ...any) *FieldError {
	return &FieldError{File: c.source(path), Field: path, Msg: fmt.Sprintf(format, args...)}
}

func (c *Config) warn(path, msg string) {
	c.Warnings = append(c.Warnings, Warning{File: c.source(path), Field: path, Msg: msg})
}

// normEnum canonicalises *p in place.
func (c *Config) normEnum(path string, p *string, e enum) error {
	v, ok := e.canonical(*p)
	if !ok {
		return c.fieldErr(path, "unknown value %q (want %s)", *p, e.list())
	}
	*p = v
	return nil
}

// normalize canonicalises enumerations, resolves role backends, and
// applies SkillOpt's forced settings. Load calls it.
func (c *Config) normalize() error {
	m, o, ev, en := &c.Model, &c.Optimizer, &c.Evaluation, &c.Env
	checks := []struct {
		path string
		p    *string
		e    enum
	}{
		{"model.reasoning_effort", &m.ReasoningEffort, efforts},
		{"model.rewrite_reasoning_effort", &m.RewriteReasoningEffort, efforts},
		{"model.azure_openai_auth_mode", &m.Azure.AuthMode, azureAuthModes},
		{"model.optimizer_azure_openai_auth_mode", &m.OptimizerAzure.AuthMode, azureAuthModes},
		{"model.target_azure_openai_auth_mode", &m.TargetAzure.AuthMode, azureAuthModes},
		{"model.qwen_chat_thinking_mode", &m.Qwen.ThinkingMode, thinkingModes},
		{"model.optimizer_qwen_chat_thinking_mode", &m.OptimizerQwen.ThinkingMode, thinkingModes},
		{"model.target_qwen_chat_thinking_mode", &m.TargetQwen.ThinkingMode, thinkingModes},
		{"model.minimax_region", &m.MiniMax.Region, minimaxRegions},
		{"optimizer.lr_scheduler", &o.LRScheduler, lrSchedulers},
		{"optimizer.lr_control_mode", &o.LRControlMode, lrControlModes},
		{"optimizer.skill_update_mode", &o.SkillUpdateMode, updateModes},
		{"optimizer.longitudinal_pair_policy", &o.LongitudinalPairPolicy, pairPolicies},
		{"optimizer.skill_aware_appendix_source", &o.SkillAwareAppendixSource, appendixSources},
		{"evaluation.gate_metric", &ev.GateMetric, gateMetrics},
		{"evaluation.gate_test", &ev.GateTest, gateTests},
		{"env.split_mode", &en.SplitMode, splitModes},
		{"runtime.prefetch", &c.Runtime.Prefetch, prefetchModes},
	}
	for _, ch := range checks {
		if err := c.normEnum(ch.path, ch.p, ch.e); err != nil {
			return err
		}
	}
	if err := c.resolveRoles(); err != nil {
		return err
	}
	if err := c.checkHarness(); err != nil {
		return err
	}
	if n, ok := envAliases[en.Name]; ok {
		en.Name = n
	}

	// SkillOpt forces lr_control_mode none under full rewrite: there is no
	// item list to budget.
	if o.SkillUpdateMode == ModeFullRewrite {
		o.LRControlMode = LRNone
	}
	if c.Model.CodexExecFullAuto != nil {
		c.warn("model.codex_exec_full_auto", "deprecated and ignored")
	}
	if _, ok := c.src["train.steps_per_epoch"]; ok && c.Train.StepsPerEpoch != 0 {
		c.warn("train.steps_per_epoch", "ignored: steps per epoch are derived from the train split")
	}
	if _, ok := c.src["optimizer.meta_learning_rate"]; ok && o.MetaLearningRate != 0 {
		c.warn("optimizer.meta_learning_rate", "unused")
	}
	if o.UseSkillAwareReflection && o.SkillUpdateMode == ModeFullRewrite {
		c.warn("optimizer.use_skill_aware_reflection", "has no effect with skill_update_mode full_rewrite_minibatch")
	}
	return nil
}

// resolveRoles applies model.backend's pairing to roles left "" or
// openai_chat (SkillOpt's rule: an explicitly different role wins).
func (c *Config) resolveRoles() error {
	m := &c.Model
	label := familyToken(m.Backend)
	if !validFamily.MatchString(label) {
		return c.fieldErr("model.backend", "invalid value %q (want a backend family such as azure_openai, openai_compatible, anthropic, codex_exec or sim)", m.Backend)
	}
	pair, ok := backendPairs[label]
	if !ok {
		pair = [2]string{label, label}
	}
	m.Backend = label
	for i, r := range []struct {
		path string
		p    *string
	}{{"model.optimizer_backend", &m.OptimizerBackend}, {"model.target_backend", &m.TargetBackend}} {
		v := familyToken(*r.p)
		if v == "" {
			v = "openai_chat"
		}
		if !validFamily.MatchString(v) {
			return c.fieldErr(r.path, "invalid value %q (want a backend family such as openai_chat, openai_compatible, anthropic, claude_code_exec or sim)", *r.p)
		}
		if v == "openai_chat" {
			v = pair[i]
		}
		*r.p = v
	}
	return nil
}

// validFamily is the shape of a client family name; which families exist
// is for the backends to say.
var validFamily = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// familyToken canonicalises a family name as enums are: case and
// surrounding space ignored, "-" read as "_".
func familyToken(s string) string {
	return strings.ReplaceAll(strings.ToLower(strings.TrimSpace(s)), "-", "_")
}

// IsSet reports whether a file or an override set the key path
// ("model.target_backend"), as opposed to its default.
func (c *Config) IsSet(path string) bool {
	_, ok := c.src[path]
	return ok
}

// SetHere reports whether the key path was set by the file Load was given
// or by --set, not inherited from a _base_ file. Warnings about keys that
// would do nothing use it: a shared base may set keys for every backend.
func (c *Config) SetHere(path string) bool {
	src, ok := c.src[path]
	if !ok {
		return false
	}
	if src == SourceOverride || src == c.File {
		return true
	}
	a, errA := filepath.Abs(src)
	b, errB := filepath.Abs(c.File)
	return errA == nil && errB == nil && a == b
}

// FieldError returns an error about the key path, naming the file that set
// it (or the top-level file when the key kept its default). Checks made
// outside this package (backends.CheckConfig) word their errors with it.
func (c *Config) FieldError(path, format string, args ...any) *FieldError {
	return c.fieldErr(path, format, args...)
}

// Validate checks ranges and combinations. It returns the first problem
// as a *[FieldError] naming the file that set the key (or the top-level
// file when the key kept its default). It does no I/O.
func (c *Config) Validate() error {
	var errs []*FieldError
	check := func(ok bool, path, format string, args ...any) {
		if !ok {
			errs = append(errs, c.fieldErr(path, format, args...))
		}
	}
	positive := func(v int64, path string) { check(v > 0, path, "must be > 0, got %d", v) }
	nonNeg := func(v int64, path string) { check(v >= 0, path, "must be >= 0, got %d", v) }
	dur := func(v time.Duration, path string) { check(v > 0, path, "must be > 0, got %s", v) }

	m := c.Model
	check(m.Optimizer != "", "model.optimizer", "required")
	check(m.Target != "", "model.target", "required")
	positive(int64(m.RewriteMaxCompletionTokens), "model.rewrite_max_completion_tokens")
	nonNeg(int64(m.OptimizerMaxTokens), "model.optimizer_max_tokens")
	nonNeg(int64(m.TargetMaxTokens), "model.target_max_tokens")
	temp := func(t *float64, path string) {
		check(t == nil || (*t >= 0 && *t <= 2), path, "must be in [0, 2], got %v", deref(t))
	}
	temp(m.OptimizerTemperature, "model.optimizer_temperature")
	temp(m.TargetTemperature, "model.target_temperature")
	dur(m.Timeout, "model.timeout")
	nonNeg(int64(m.MaxRetries), "model.max_retries")

	t := c.Train
	positive(int64(t.NumEpochs), "train.num_epochs")
	nonNeg(int64(t.TrainSize), "train.train_size")
	positive(int64(t.BatchSize), "train.batch_size")
	positive(int64(t.Accumulation), "train.accumulation")

	g := c.Gradient
	positive(int64(g.MinibatchSize), "gradient.minibatch_size")
	check(g.MergeBatchSize >= 2, "gradient.merge_batch_size", "must be >= 2, got %d", g.MergeBatchSize)

	o := c.Optimizer
	positive(int64(o.LearningRate), "optimizer.learning_rate")
	nonNeg(int64(o.MinLearningRate), "optimizer.min_learning_rate")
	check(o.MinLearningRate <= o.LearningRate, "optimizer.min_learning_rate",
		"must be <= optimizer.learning_rate (%d), got %d", o.LearningRate, o.MinLearningRate)
	check(o.LRControlMode != LRNone || o.SkillUpdateMode == ModeFullRewrite, "optimizer.lr_control_mode",
		"none is only valid with skill_update_mode %s", ModeFullRewrite)
	if o.UseSlowUpdate || o.UseMetaSkill {
		positive(int64(o.SlowUpdateSamples), "optimizer.slow_update_samples")
	}
	nonNeg(int64(o.SkillAwareConsolidateThreshold), "optimizer.skill_aware_consolidate_threshold")

	e := c.Evaluation
	check(e.GateMixedWeight >= 0 && e.GateMixedWeight <= 1, "evaluation.gate_mixed_weight", "must be in [0, 1], got %v", e.GateMixedWeight)
	check(e.SemanticDensityWeight >= 0, "evaluation.semantic_density_weight", "must be >= 0, got %v", e.SemanticDensityWeight)
	check(!e.UseSemanticDensity || len(e.LeadingWords) > 0, "evaluation.leading_words", "required when use_semantic_density is true")
	nonNeg(int64(e.SelEnvNum), "evaluation.sel_env_num")
	nonNeg(int64(e.TestEnvNum), "evaluation.test_env_num")
	check(e.MinCoverage > 0 && e.MinCoverage <= 1, "evaluation.min_coverage", "must be in (0, 1], got %v", e.MinCoverage)
	check(e.GateAlpha > 0 && e.GateAlpha < 1, "evaluation.gate_alpha", "must be in (0, 1), got %v", e.GateAlpha)
	positive(int64(e.GateRepeats), "evaluation.gate_repeats")

	en := c.Env
	check(en.Name != "", "env.name", "required")
	check(en.SkillInit != "", "env.skill_init", "required")
	if en.SplitMode == "ratio" {
		_, err := SplitRatio(en.SplitRatio)
		check(err == nil, "env.split_ratio", "want three positive integers like 2:1:7, got %q", en.SplitRatio)
	}
	dur(en.ExecTimeout, "env.exec_timeout")
	nonNeg(int64(en.Workers), "env.workers")
	nonNeg(int64(en.Limit), "env.limit")
	positive(int64(en.MaxCompletionTokens), "env.max_completion_tokens")
	nonNeg(int64(en.MaxTurns), "env.max_turns")

	b := c.Budget
	nonNeg(b.MaxTokens, "budget.max_tokens")
	check(b.MaxUSD >= 0, "budget.max_usd", "must be >= 0, got %v", b.MaxUSD)
	nonNeg(b.MaxCalls, "budget.max_calls")
	check(b.MaxWall >= 0, "budget.max_wall", "must be >= 0, got %s", b.MaxWall)

	r := c.Runtime
	nonNeg(int64(r.Workers), "runtime.workers")
	positive(int64(r.RolloutConcurrency), "runtime.rollout_concurrency")
	positive(int64(r.OptimizerConcurrency), "runtime.optimizer_concurrency")
	dur(r.TaskTimeout, "runtime.task_timeout")
	positive(int64(r.MaxDeliveries), "runtime.max_deliveries")
	check(r.HedgeBudget > 0 && r.HedgeBudget <= 1, "runtime.hedge_budget", "must be a fraction of a wave's tasks in (0, 1], got %v", r.HedgeBudget)
	check(r.HedgeMaxExtra > 0 && r.HedgeMaxExtra <= 1, "runtime.hedge_max_extra", "must be a fraction of the run's tasks in (0, 1], got %v", r.HedgeMaxExtra)
	check(r.HedgeQuantile > 0 && r.HedgeQuantile < 1, "runtime.hedge_quantile", "must be a quantile in (0, 1) such as 0.75, got %v", r.HedgeQuantile)
	check(r.HedgeMultiplier >= 1, "runtime.hedge_multiplier", "must be at least 1, got %v", r.HedgeMultiplier)
	check(r.NATSReplicas >= 0 && r.NATSReplicas <= 5, "runtime.nats_replicas", "must be 0 (keep the current count) to 5, got %d", r.NATSReplicas)

	if len(errs) > 0 {
		return errs[0]
	}
	return nil
}

func deref(p *float64) float64 {
	if p == nil {
		return 0
	}
	return *p
}

// checkFiles checks that env.skill_init exists (SkillOpt silently starts
// from a blank skill instead; B16).
func (c *Config) checkFiles() error {
	_, err := os.Stat(c.Env.SkillInit)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return c.fieldErr("env.skill_init", "file not found: %s", c.Env.SkillInit)
	default:
		return c.fieldErr("env.skill_init", "%v", err)
	}
}

// SplitRatio parses a train:val:test ratio of positive integers ("2:1:7").
func SplitRatio(s string) ([3]int, error) { return bench.ParseRatio(s) }

// Role is the resolved settings of one model role, for backends.
type Role struct {
	// Name is RoleOptimizer or RoleTarget.
	Name string
	// Backend is the client family (model.optimizer_backend or target_backend).
	Backend string
	// Model is the model or deployment name.
	Model string
	// BaseURL is the server URL ("" = the backend's default).
	BaseURL string
	// APIKeyEnv names the environment variable with the key ("" = the
	// backend's default variable).
	APIKeyEnv string
	// APIKey is a key written in the config (discouraged).
	APIKey Secret
	// Temperature is nil when not configured.
	Temperature *float64
	// MaxTokens caps a reply (0 = the stage's default).
	MaxTokens int
	// ReasoningEffort is "" when not sent.
	ReasoningEffort string
	// Timeout bounds one call; MaxRetries bounds retries.
	Timeout    time.Duration
	MaxRetries int
	// Options are the backend options (model.<role>_options).
	Options map[string]any
}

// Role returns the settings of RoleOptimizer or RoleTarget; any other name
// panics (it is a programming error, not user input).
func (m *Model) Role(name string) Role {
	r := Role{Name: name, ReasoningEffort: m.ReasoningEffort, Timeout: m.Timeout, MaxRetries: m.MaxRetries}
	switch name {
	case RoleOptimizer:
		r.Backend, r.Model, r.BaseURL = m.OptimizerBackend, m.Optimizer, m.OptimizerBaseURL
		r.APIKeyEnv, r.APIKey = m.OptimizerAPIKeyEnv, m.OptimizerAPIKey
		r.Temperature, r.MaxTokens = m.OptimizerTemperature, m.OptimizerMaxTokens
		r.Options = m.OptimizerOptions
	case RoleTarget:
		r.Backend, r.Model, r.BaseURL = m.TargetBackend, m.Target, m.TargetBaseURL
		r.APIKeyEnv, r.APIKey = m.TargetAPIKeyEnv, m.TargetAPIKey
		r.Temperature, r.MaxTokens = m.TargetTemperature, m.TargetMaxTokens
		r.Options = m.TargetOptions
	default:
		panic("config: unknown role " + strconv.Quote(name))
	}
	if r.Backend == "minimax_chat" {
		m.applyMiniMax(&r)
	}
	if r.Backend == "qwen_chat" {
		m.applyQwen(&r)
	}
	return r
}

// MiniMax's OpenAI-compatible endpoints by model.minimax_region.
const (
	MiniMaxGlobalURL = "https://api.minimax.io/v1"
	MiniMaxChinaURL  = "https://api.minimaxi.com/v1"
	// MiniMaxKeyEnv is the variable a minimax_chat role reads its key from
	// unless model.<role>_api_key_env names another.
	MiniMaxKeyEnv = "MINIMAX_API_KEY"
)

// applyMiniMax fills a minimax_chat role from SkillOpt's MiniMax keys. A
// minimax_chat role is served by the OpenAI-compatible client: skillfleet's
// own <role>_* keys win, then the role's <role>_minimax_* override, then the
// shared minimax_* value, then the region's URL. The model name gpt-5.4 or
// gpt-5.5 (SkillOpt's unset sentinel) reads as model.minimax_model.
func (m *Model) applyMiniMax(r *Role) {
	ep := m.OptimizerMiniMax
	if r.Name == RoleTarget {
		ep = m.TargetMiniMax
	}
	if r.BaseURL == "" {
		r.BaseURL = cmp.Or(ep.BaseURL, m.MiniMax.BaseURL)
	}
	if r.BaseURL == "" {
		r.BaseURL = MiniMaxGlobalURL
		if m.MiniMax.Region == "cn_zh" {
			r.BaseURL = MiniMaxChinaURL
		}
	}
	if r.APIKeyEnv == "" {
		r.APIKeyEnv = MiniMaxKeyEnv
	}
	if r.APIKey.IsZero() {
		r.APIKey = ep.APIKey
	}
	if r.APIKey.IsZero() {
		r.APIKey = m.MiniMax.APIKey
	}
	if (r.Model == "gpt-5.5" || r.Model == "gpt-5.4") && m.MiniMax.Model != "" {
		r.Model = m.MiniMax.Model
	}
	if r.Temperature == nil {
		t := m.MiniMax.Temperature
		r.Temperature = &t
	}
	if r.MaxTokens == 0 {
		r.MaxTokens = m.MiniMax.MaxTokens
	}
}

// Key returns the role's API key: the variable APIKeyEnv names when it is
// set and non-empty, else the key written in the config (possibly empty).
func (r Role) Key(getenv func(string) string) Secret {
	if r.APIKeyEnv != "" {
		if v := getenv(r.APIKeyEnv); v != "" {
			return NewSecret(v)
		}
	}
	return r.APIKey
}
