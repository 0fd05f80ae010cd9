package queue

import (
	"strings"

	"github.com/skillfleet/skillfleet/pkg/catalogue"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Names of the JetStream objects and subjects skillfleet uses. They are
// the only place these strings appear.
//
// One stream holds every task of every run. A task's subject is
//
//	skillfleet.tasks.<class>.<kind>.<run>
//
// where class says which shared consumer serves it (critical target work,
// bulk target work, optimizer work), kind is the task kind and run the
// run's token (see [RunToken]). Workers serve every run through the three
// class consumers; the run token lets a finished run purge what it left.
const (
	// StreamName is the one work-queue stream that holds every task.
	StreamName = "SKILLFLEET_TASKS"
	// SubjectPrefix precedes the class: skillfleet.tasks.crit.rollout.<run>, ...
	SubjectPrefix = "skillfleet.tasks."
	// SubjectAll matches every task subject.
	SubjectAll = "skillfleet.tasks.>"
	// ConsumerCritical, ConsumerBulk and ConsumerOptimizer are the durable
	// pull consumers all workers share. Target slots take critical work
	// before bulk work; optimizer slots take optimizer work.
	ConsumerCritical  = "skillfleet-critical"
	ConsumerBulk      = "skillfleet-bulk"
	ConsumerOptimizer = "skillfleet-optimizer"
	// CancelSubject carries task ids whose in-flight work should stop (core NATS).
	CancelSubject = "skillfleet.control.cancel"
	// AbandonNotice is the second word of a line on CancelSubject that
	// asks the worker finishing a cancelled task's call in flight to end
	// the call at once and report what it spent (the run has ended and
	// waits for that report only). A worker that does not know it reads
	// the word as a stream sequence it cannot parse and ignores the line.
	AbandonNotice = "abandon"
	// ReadySubject rings when tasks were published (core NATS; the body is
	// the class), so idle workers fetch at once instead of at their next poll.
	ReadySubject = "skillfleet.control.ready"
	// RunsBucket is the key-value bucket where each live run announces the
	// address of its coordinator (key: run token).
	RunsBucket = "skillfleet_runs"
	// maxDeliveriesAdvisory is where JetStream reports a message that ran out of deliveries.
	maxDeliveriesAdvisory = "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES." + StreamName + ".*"
)

// Task kinds, the kind token of a task subject (pkg/catalogue's table).
const (
	KindRollout     = catalogue.KindRollout
	KindReflect     = catalogue.KindReflect
	KindMerge       = catalogue.KindMerge
	KindRank        = catalogue.KindRank
	KindSlowUpdate  = catalogue.KindSlowUpdate
	KindMeta        = catalogue.KindMeta
	KindRewrite     = catalogue.KindRewrite
	KindLR          = catalogue.KindLR
	KindConsolidate = catalogue.KindConsolidate
	KindNoop        = catalogue.KindNoop
)

// Class is the scheduling class of a task: which shared consumer serves it.
type Class string

// The scheduling classes.
const (
	// ClassCritical is target work a decision waits on (rollouts, gates,
	// slow-update rollouts, the final selection).
	ClassCritical Class = "crit"
	// ClassBulk is target work no decision waits on yet (baseline and test
	// evaluations, eval runs, idle fill).
	ClassBulk Class = "bulk"
	// ClassOptimizer is every optimizer call (all of it on the critical path).
	ClassOptimizer Class = "opt"
)

// Consumer is the durable consumer that serves the class.
func (c Class) Consumer() string {
	switch c {
	case ClassBulk:
		return ConsumerBulk
	case ClassOptimizer:
		return ConsumerOptimizer
	default:
		return ConsumerCritical
	}
}

// Classes lists every class.
var Classes = []Class{ClassCritical, ClassBulk, ClassOptimizer}

// IsTargetKind reports whether tasks of kind run on target (rollout) slots.
func IsTargetKind(kind string) bool { return catalogue.RoleOf(kind) == catalogue.RoleTarget }

// ClassOf is the scheduling class of a task, from its kind and stage.
func ClassOf(t *pb.Task) Class {
	if !IsTargetKind(KindOf(t)) {
		return ClassOptimizer
	}
	if catalogue.IsBulkStage(t.GetStage()) {
		return ClassBulk
	}
	return ClassCritical
}

// TaskSubject is the subject a task is published on.
func TaskSubject(c Class, kind, runToken string) string {
	if runToken == "" {
		runToken = "_"
	}
	return SubjectPrefix + string(c) + "." + kind + "." + runToken
}

// ClassOfSubject is the class of a task message's subject (see
// [TaskSubject]); ok is false for any other subject.
func ClassOfSubject(subject string) (c Class, ok bool) {
	rest, found := strings.CutPrefix(subject, SubjectPrefix)
	if !found {
		return "", false
	}
	name, _, _ := strings.Cut(rest, ".")
	for _, c := range Classes {
		if string(c) == name {
			return c, true
		}
	}
	return "", false
}

// ClassSubjects is the filter of a class consumer.
func ClassSubjects(c Class) string { return SubjectPrefix + string(c) + ".>" }

// RunSubjects matches every task subject of one run.
func RunSubjects(runToken string) string { return SubjectPrefix + "*.*." + runToken }

// RunToken turns a run id into a token that is safe as a subject token and
// a key-value key: letters, digits, '-' and '_' are kept, anything else
// becomes '_'.
func RunToken(runID string) string {
	if runID == "" {
		return "_"
	}
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, runID)
}
