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
	// ConsumerName is the durable pull consumer shared by all workers.
	ConsumerName = "skillfleet-workers"
	// CancelSubject carries task ids whose in-flight work should stop (core NATS).
	CancelSubject = "skillfleet.control.cancel"
	// maxDeliveriesAdvisory is where JetStream reports a message that ran out of deliveries.
	maxDeliveriesAdvisory = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + StreamName + "." + ConsumerName
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

// Subject returns the subject tasks of a kind are published on.
func Subject(kind string) string { return SubjectPrefix + kind }
