package coordinator

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/backends/exec"
	"github.com/skillfleet/skillfleet/coordinator/gate"
	"github.com/skillfleet/skillfleet/coordinator/schedule"
	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/pkg/config"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// LoadConfig reads a run config file with its --set overrides and checks
// that a backend implements each model family it names. A bad key or
// value is a [*ConfigError] naming the file and the key.
func LoadConfig(path string, sets []string) (*config.Config, error) {
	cfg, err := config.Load(path, sets)
	if err == nil {
		err = errors.Join(CheckEnvKeys(cfg), backends.CheckConfig(cfg))
	}
	var fe *config.FieldError
	if errors.As(err, &fe) {
		return nil, &ConfigError{err}
	}
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

// FromConfig builds the trainer's settings from a loaded config. runID and
// runDir name the run; the initial skill is read from env.skill_init. A
// client family no backend implements is refused (backends.CheckConfig).
func FromConfig(c *config.Config, runID, runDir string) (trainer.Settings, error) {
	if err := backends.CheckConfig(c); err != nil {
		return trainer.Settings{}, err
	}
	// A file is read verbatim; a skill package directory as its bundle.
	initText, err := skillpkg.ReadInit(c.Env.SkillInit, skillpkg.Limits{})
	if err != nil {
		return trainer.Settings{}, fmt.Errorf("config: %s: env.skill_init: %w", c.File, err)
	}
	s := trainer.Settings{
		RunID: runID, RunDir: runDir,
		Seed: c.Train.Seed, NumEpochs: c.Train.NumEpochs, BatchSize: c.Train.BatchSize, Accumulation: c.Train.Accumulation, TrainSize: c.Train.TrainSize,
		MinibatchSize: c.Gradient.MinibatchSize, MergeBatchSize: c.Gradient.MergeBatchSize, FailureOnly: c.Gradient.FailureOnly,
		LR: c.Optimizer.LearningRate, MinLR: c.Optimizer.MinLearningRate, LRControl: schedule.ControlMode(c.Optimizer.LRControlMode),
		UpdateMode: c.Optimizer.SkillUpdateMode, UseSlowUpdate: c.Optimizer.UseSlowUpdate, SlowUpdateSamples: c.Optimizer.SlowUpdateSamples,
		SlowUpdateGate: c.Optimizer.SlowUpdateGateWithSelection, PairPolicy: trainer.PairPolicy(c.Optimizer.LongitudinalPairPolicy), UseMetaSkill: c.Optimizer.UseMetaSkill,
		SkillAware: c.Optimizer.UseSkillAwareReflection, AppendixSource: c.Optimizer.SkillAwareAppendixSource,
		ConsolidateThreshold: c.Optimizer.SkillAwareConsolidateThreshold, FilterRejected: c.Optimizer.FilterRejected, UseStepBuffer: c.Optimizer.UseStepBuffer, NormalizeOps: true, TrainDescription: c.Optimizer.TrainDescription,
		UseGate: c.Evaluation.UseGate, MixedWeight: c.Evaluation.GateMixedWeight,
		UseDensity: c.Evaluation.UseSemanticDensity, DensityWeight: c.Evaluation.SemanticDensityWeight, LeadingWords: c.Evaluation.LeadingWords,
		SelEnvNum: c.Evaluation.SelEnvNum, TestEnvNum: c.Evaluation.TestEnvNum, EvalTest: c.Evaluation.EvalTest,
		EarlyStop: c.Evaluation.EarlyStop, Speculate: c.Runtime.Speculate, Prefetch: c.Runtime.Prefetch, Hedge: hedgePolicy(c.Runtime), IdleFill: c.Runtime.IdleFill, GateWindow: c.Runtime.GateWindow, MinCoverage: c.Evaluation.MinCoverage, GateTest: trainer.GateTest(c.Evaluation.GateTest),
		GateAlpha: c.Evaluation.GateAlpha, GateRepeats: c.Evaluation.GateRepeats,
		Bench: c.Env.Name, BenchHash: c.BenchHash(), SkillInit: string(initText),
		TaskTimeout: c.Runtime.TaskTimeout,
		MaxTokens:   c.Budget.MaxTokens, MaxCalls: c.Budget.MaxCalls, MaxUSD: c.Budget.MaxUSD, MaxWall: c.Budget.MaxWall,
	}
	// The enums travel typed from here on; config.Load validated the
	// names, so an error here is a config that bypassed it.
	if s.GateMetric, err = gate.ParseMetric(c.Evaluation.GateMetric); err != nil {
		return trainer.Settings{}, fmt.Errorf("config: %s: evaluation.gate_metric: %w", c.File, err)
	}
	if s.LRScheduler, err = schedule.ParseKind(c.Optimizer.LRScheduler); err != nil {
		return trainer.Settings{}, fmt.Errorf("config: %s: optimizer.lr_scheduler: %w", c.File, err)
	}
	switch s.PairPolicy {
	case trainer.PairMixed, trainer.PairChanged, trainer.PairUnchanged:
	default:
		return trainer.Settings{}, fmt.Errorf("config: %s: optimizer.longitudinal_pair_policy: unknown %q (want mixed, changed or unchanged)", c.File, s.PairPolicy)
	}
	switch s.LRControl {
	case schedule.ControlFixed, schedule.ControlAutonomous, schedule.ControlNone:
	default:
		return trainer.Settings{}, fmt.Errorf("config: %s: optimizer.lr_control_mode: unknown %q (want fixed, autonomous or none)", c.File, s.LRControl)
	}
	switch s.GateTest {
	case trainer.GateTestNone, trainer.GateTestPaired:
	default:
		return trainer.Settings{}, fmt.Errorf("config: %s: evaluation.gate_test: unknown %q (want none or paired)", c.File, s.GateTest)
	}
	bc, err := BenchConfig(c)
	if err != nil {
		return trainer.Settings{}, err
	}
	s.BenchConfig = bc
	s.Target = RoleSpec(c, config.RoleTarget)
	s.TargetCacheID = targetCacheID(s.Target)
	s.Optimizer = RoleSpec(c, config.RoleOptimizer)
	s.Rewriter = RoleSpec(c, config.RoleOptimizer)
	if e := c.Model.RewriteReasoningEffort; e != "" {
		s.Rewriter.ReasoningEffort = e
	}
	if n := c.Model.RewriteMaxCompletionTokens; n > 0 {
		s.Rewriter.MaxTokens = int32(n)
	}
	s.ConfigHash = decisionHash(s)
	return s, nil
}

// BenchConfig is the benchmark's settings as the JSON workers receive.
func BenchConfig(c *config.Config) (json.RawMessage, error) {
	m := map[string]any{}
	for k, v := range c.Env.Extra {
		m[k] = v
	}
	m["name"] = c.Env.Name
	m["max_turns"] = c.Env.MaxTurns
	m["max_completion_tokens"] = c.Env.MaxCompletionTokens
	m["exec_timeout"] = c.Env.ExecTimeout.String()
	// Benchmarks resolve their asset paths (images, workbooks, documents)
	// against the split directory, or the raw data file's directory in
	// ratio mode.
	if dir := c.Env.SplitDir; dir != "" {
		m["split_dir"] = absPath(dir)
	} else if c.Env.DataPath != "" {
		m["split_dir"] = absPath(filepath.Dir(c.Env.DataPath))
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("config: %s: env: %w", c.File, err)
	}
	return b, nil
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}

// RoleSpec maps a config role (config.RoleTarget or config.RoleOptimizer)
// to the wire ModelSpec (no secrets: only the name of the variable that
// holds the key). `train` and `sleep` build their roles with it.
func RoleSpec(c *config.Config, role string) *pb.ModelSpec {
	r := c.Model.Role(role)
	spec := &pb.ModelSpec{
		Backend: BackendName(r.Backend), Model: r.Model, BaseUrl: r.BaseURL, ApiKeyEnv: r.APIKeyEnv,
		MaxTokens: int32(r.MaxTokens), ReasoningEffort: r.ReasoningEffort,
		TimeoutMs: r.Timeout.Milliseconds(), MaxRetries: int32(r.MaxRetries), Options: map[string]string{},
	}
	if r.Temperature != nil {
		v := *r.Temperature
		spec.Temperature = &v
	}
	for k, v := range r.Options {
		spec.Options[k] = optionString(v)
	}
	switch spec.Backend {
	case "azure":
		az := c.Model.AzureFor(role)
		spec.BaseUrl = firstNonEmpty(spec.GetBaseUrl(), firstNonEmpty(az.Endpoint, os.Getenv("AZURE_OPENAI_ENDPOINT")))
		spec.Options["api_version"] = firstNonEmpty(az.APIVersion, "2024-12-01-preview")
		backends.AzureOptions(az, spec.Options)
		if spec.ApiKeyEnv == "" {
			spec.ApiKeyEnv = "AZURE_OPENAI_API_KEY"
		}
	case "openai":
		if spec.ApiKeyEnv == "" {
			spec.ApiKeyEnv = "OPENAI_API_KEY"
		}
	case "anthropic":
		if spec.ApiKeyEnv == "" {
			spec.ApiKeyEnv = "ANTHROPIC_API_KEY"
		}
	case "exec":
		// SkillOpt's harness families name the agent and its binary.
		f, _ := backends.LookupFamily(r.Backend)
		agent, bin := f.Agent, ""
		switch agent {
		case exec.AgentCodex:
			bin = c.Model.CodexExecPath
		case exec.AgentClaude:
			bin = c.Model.ClaudeCodeExecPath
		}
		if _, set := spec.Options["agent"]; !set && agent != "" {
			spec.Options["agent"] = agent
		}
		if _, set := spec.Options["bin"]; !set && bin != "" {
			spec.Options["bin"] = bin
		}
	}
	return spec
}

// optionString renders a backend option from YAML: scalars as written,
// lists and mappings as JSON (the form backends parse them in).
func optionString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case map[string]any, []any:
		b, _ := json.Marshal(x)
		return string(b)
	case nil:
		return ""
	}
	return fmt.Sprint(v)
}

// BackendName maps a config client family to the backend implementation
// serving it (backends' family table); an unknown family maps to itself
// (backends.CheckConfig refuses it at load).
func BackendName(family string) string {
	if f, ok := backends.LookupFamily(family); ok {
		return f.Backend
	}
	return family
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// decisionHash identifies everything that can change a decision. Runtime
// sizes, budgets, timeouts and the run dir are left out, so a run can be
// resumed with more workers or a larger budget.
func decisionHash(s trainer.Settings) string {
	c := s
	c.RunDir, c.ConfigHash = "", ""
	c.MaxTokens, c.MaxCalls, c.MaxUSD, c.MaxWall = 0, 0, 0, 0
	c.TaskTimeout, c.RetryFailed = 0, false
	c.TargetCacheID = ""
	strip := func(m *pb.ModelSpec) *pb.ModelSpec {
		if m == nil {
			return nil
		}
		return &pb.ModelSpec{Backend: m.Backend, Model: m.Model, Temperature: m.Temperature, MaxTokens: m.MaxTokens, ReasoningEffort: m.ReasoningEffort}
	}
	c.Target, c.Optimizer, c.Rewriter = strip(c.Target), strip(c.Optimizer), strip(c.Rewriter)
	b, _ := json.Marshal(c)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// hedgePolicy is the trainer's wave hedging from runtime.hedge*.
func hedgePolicy(r config.Runtime) trainer.HedgePolicy {
	if !r.Hedge {
		return trainer.HedgePolicy{}
	}
	p := trainer.DefaultHedge()
	p.Budget, p.MaxExtra, p.Quantile, p.Multiplier = r.HedgeBudget, r.HedgeMaxExtra, r.HedgeQuantile, r.HedgeMultiplier
	return p
}
