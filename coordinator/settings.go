package coordinator

import (
	"encoding/json"
	"time"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Settings are the resolved run parameters the trainer reads. They are
// built from the run config (see FromConfig) and never change during a run.
type Settings struct {
	RunID  string
	RunDir string
	// ConfigHash identifies the resolved config; a run dir made by another
	// config is refused on resume.
	ConfigHash string

	// train
	Seed         int64
	NumEpochs    int
	BatchSize    int
	Accumulation int
	TrainSize    int

	// gradient
	MinibatchSize  int
	MergeBatchSize int
	FailureOnly    bool

	// optimizer
	LR                   int
	MinLR                int
	LRScheduler          string // constant, linear, cosine, autonomous
	LRControl            string // fixed, autonomous, none
	UpdateMode           string // patch, rewrite_from_suggestions, full_rewrite_minibatch
	UseSlowUpdate        bool
	SlowUpdateSamples    int
	SlowUpdateGate       bool
	PairPolicy           string // mixed, changed, unchanged
	UseMetaSkill         bool
	SkillAware           bool
	AppendixSource       string // both, failure_only
	ConsolidateThreshold int
	FilterRejected       bool
	// UseStepBuffer feeds the epoch's previous steps back to the optimizer.
	UseStepBuffer bool
	// NormalizeOps matches op names case-insensitively with synonyms (fix B15).
	NormalizeOps bool

	// evaluation
	UseGate       bool
	GateMetric    string // hard, soft, mixed
	MixedWeight   float64
	UseDensity    bool
	DensityWeight float64
	LeadingWords  []string
	SelEnvNum     int
	TestEnvNum    int
	EvalTest      bool
	EarlyStop     bool
	// IdleFill: see config runtime.idle_fill.
	IdleFill bool
	// Speculate: see config runtime.speculate.
	Speculate   bool
	MinCoverage float64
	GateTest    string // none, paired
	GateAlpha   float64
	GateRepeats int

	// env
	Bench       string
	BenchConfig json.RawMessage
	BenchHash   string
	SkillInit   string

	// models (no secrets: keys are named by environment variable only)
	Target *pb.ModelSpec
	// TargetCacheID names the target model and sampling as configured
	// (before a run-local sim endpoint is filled in), for the rollout
	// cache key.
	TargetCacheID string
	Optimizer     *pb.ModelSpec
	Rewriter      *pb.ModelSpec

	TaskTimeout time.Duration
	// RetryFailed re-dispatches tasks whose recorded outcome is a failure
	// (once per resume) instead of reusing the failure.
	RetryFailed bool

	// Budgets (0 = unlimited).
	MaxTokens int64
	MaxCalls  int64
	MaxUSD    float64
	MaxWall   time.Duration
}
