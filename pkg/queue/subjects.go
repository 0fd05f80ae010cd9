package queue

// Names of the JetStream objects and subjects skillfleet uses. They are
// the only place these strings appear.
const (
	// StreamName is the one work-queue stream that holds every task.
	StreamName = "SKILLFLEET_TASKS"
	// SubjectPrefix precedes the task kind: skillfleet.tasks.rollout, ...
	SubjectPrefix = "skillfleet.tasks."
	// SubjectAll matches every task subject.
	SubjectAll = "skillfleet.tasks.>"
	// ConsumerRollout and ConsumerOptimizer are the durable pull consumers
	// all workers share: one for target work (rollouts), one for optimizer
	// calls, so each class has its own concurrency on every worker.
	ConsumerRollout   = "skillfleet-rollout"
	ConsumerOptimizer = "skillfleet-optimizer"
	// CancelSubject carries task ids whose in-flight work should stop (core NATS).
	CancelSubject = "skillfleet.control.cancel"
	// maxDeliveriesAdvisory is where JetStream reports a message that ran out of deliveries.
	maxDeliveriesAdvisory = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + StreamName + ".*"
)

// Task kinds, the last token of a task subject.
const (
	KindRollout     = "rollout"
	KindReflect     = "reflect"
	KindMerge       = "merge"
	KindRank        = "rank"
	KindSlowUpdate  = "slow_update"
	KindMeta        = "meta"
	KindRewrite     = "rewrite"
	KindLR          = "lr"
	KindConsolidate = "consolidate"
	KindNoop        = "noop"
)

// RolloutKinds go to the rollout consumer; every other kind is optimizer work.
var RolloutKinds = []string{KindRollout, KindNoop}

// OptimizerKinds are the kinds the optimizer consumer takes.
var OptimizerKinds = []string{KindReflect, KindMerge, KindRank, KindSlowUpdate, KindMeta, KindRewrite, KindLR, KindConsolidate}

// Subject returns the subject tasks of a kind are published on.
func Subject(kind string) string { return SubjectPrefix + kind }
