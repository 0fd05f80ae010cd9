package trainer

import (
	"encoding/json"
	"time"

	"github.com/skillfleet/skillfleet/coordinator/gate"
	"github.com/skillfleet/skillfleet/coordinator/schedule"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// PairPolicy is optimizer.longitudinal_pair_policy: which longitudinal
// pairs the epoch boundary keeps.
type PairPolicy string

// Pair policies.
const (
	// PairMixed keeps every sampled pair.
	PairMixed PairPolicy = "mixed"
	// PairChanged keeps improved and regressed pairs, topped up from the
	// rest of the shuffled train split.
	PairChanged PairPolicy = "changed"
	// PairUnchanged keeps persistent failures and stable successes.
	PairUnchanged PairPolicy = "unchanged"
)

// GateTest is evaluation.gate_test: how the gate decides.
type GateTest string

// Gate tests.
const (
	// GateTestNone: the candidate's mean gate score must strictly beat
	// current's.
	GateTestNone GateTest = "none"
	// GateTestPaired: in addition, a paired test over the selection items
	// (exact McNemar on the hard outcomes, or a paired bootstrap over
	// soft or repeated scores) must find the improvement significant at
	// evaluation.gate_alpha.
	GateTestPaired GateTest = "paired"
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
	LRScheduler          schedule.Kind
	LRControl            schedule.ControlMode
	UpdateMode           string // patch, rewrite_from_suggestions, full_rewrite_minibatch
	UseSlowUpdate        bool
	SlowUpdateSamples    int
	SlowUpdateGate       bool
	PairPolicy           PairPolicy
	UseMetaSkill         bool
	SkillAware           bool
	AppendixSource       string // both, failure_only
	ConsolidateThreshold int
	FilterRejected       bool
	// UseStepBuffer feeds the epoch's previous steps back to the optimizer.
	UseStepBuffer bool
	// NormalizeOps matches op names case-insensitively with synonyms (fix B15).
	NormalizeOps bool
	// TrainDescription lets set_description edits replace SKILL.md's
	// front-matter description (config optimizer.train_description).
	TrainDescription bool

	// evaluation
	UseGate       bool
	GateMetric    gate.Metric
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
	// GateWindow: see config runtime.gate_window. It never changes a
	// decision, so it is left out of the decision hash (and of JSON): a
	// run dir made before the setting existed resumes with it.
	GateWindow bool `json:"-"`
	// Hedge: see config runtime.hedge. It never changes a decision, so it
	// is left out of the decision hash (and of JSON).
	Hedge HedgePolicy `json:"-"`
	// Speculate: see config runtime.speculate.
	Speculate bool
	// Prefetch: see config runtime.prefetch (auto, on or off). It never
	// changes a decision, so it is left out of the decision hash.
	Prefetch    string `json:"-"`
	MinCoverage float64
	GateTest    GateTest
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
