// Package catalogue names the work skillfleet dispatches, once: the task
// kinds (the proto Task's kind oneof and the kind token of a task subject),
// the role that serves each, and the stages a trainer files its work
// under. The coordinator, the workers and pkg/queue read it; none of them
// keeps its own switch over kinds.
//
// Which kind an optimizer prompt travels as, and the reply it must parse
// into, are columns of pkg/prompts' prompt table, so a new optimizer prompt
// is one row there plus its template. A new task kind is a field of the
// proto oneof plus one row in [kinds] (a test checks the two agree).
package catalogue

import (
	"fmt"
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Task kinds. Each is the name of a field of Task's kind oneof.
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

// Role is the model role that serves a kind.
type Role string

// The roles (config.RoleOptimizer and config.RoleTarget name the same).
const (
	RoleTarget    Role = "target"
	RoleOptimizer Role = "optimizer"
)

// kinds is the table of task kinds and the role serving each.
var kinds = []struct {
	name string
	role Role
}{
	{KindRollout, RoleTarget},
	{KindNoop, RoleTarget},
	{KindReflect, RoleOptimizer},
	{KindMerge, RoleOptimizer},
	{KindRank, RoleOptimizer},
	{KindSlowUpdate, RoleOptimizer},
	{KindMeta, RoleOptimizer},
	{KindRewrite, RoleOptimizer},
	{KindLR, RoleOptimizer},
	{KindConsolidate, RoleOptimizer},
}

// kindOneof is Task's kind oneof; its field names are the kinds.
var kindOneof = (&pb.Task{}).ProtoReflect().Descriptor().Oneofs().ByName("kind")

var optimizerTaskName = (&pb.OptimizerTask{}).ProtoReflect().Descriptor().FullName()

// Kinds returns every task kind, target kinds first.
func Kinds() []string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = k.name
	}
	return out
}

// KindOf returns a task's kind, or "" when none is set.
func KindOf(t *pb.Task) string {
	if t == nil {
		return ""
	}
	fd := t.ProtoReflect().WhichOneof(kindOneof)
	if fd == nil {
		return ""
	}
	return string(fd.Name())
}

// RoleOf returns the role that serves kind ("" for an unknown kind).
func RoleOf(kind string) Role {
	for _, k := range kinds {
		if k.name == kind {
			return k.role
		}
	}
	return ""
}

// Optimizer returns the optimizer call a task carries, or nil when the
// task is not an optimizer kind.
func Optimizer(t *pb.Task) *pb.OptimizerTask {
	if t == nil {
		return nil
	}
	fd := t.ProtoReflect().WhichOneof(kindOneof)
	if fd == nil || fd.Message() == nil || fd.Message().FullName() != optimizerTaskName {
		return nil
	}
	ot, _ := t.ProtoReflect().Get(fd).Message().Interface().(*pb.OptimizerTask)
	return ot
}

// OptimizerTask returns a task of an optimizer kind carrying ot.
func OptimizerTask(kind string, ot *pb.OptimizerTask) (*pb.Task, error) {
	fd := kindOneof.Fields().ByName(protoreflect.Name(kind))
	if fd == nil || RoleOf(kind) != RoleOptimizer || fd.Message() == nil || fd.Message().FullName() != optimizerTaskName {
		return nil, fmt.Errorf("catalogue: %q is not an optimizer task kind", kind)
	}
	t := &pb.Task{}
	t.ProtoReflect().Set(fd, protoreflect.ValueOfMessage(ot.ProtoReflect()))
	return t, nil
}

// Stages a trainer files its work under (the Task's stage, span and
// accounting rows). Test and eval stages carry a suffix: test_<skill>,
// eval_<skill>.
const (
	StageBaseline       = "baseline"
	StageRollout        = "rollout"
	StageReflect        = "reflect"
	StageMerge          = "merge"
	StageRank           = "rank"
	StageLR             = "lr"
	StageRewrite        = "rewrite"
	StageGate           = "gate"
	StageConsolidate    = "appendix_consolidate"
	StageSlowUpdate     = "slow_update"
	StageMetaSkill      = "meta_skill"
	StageFinalSelection = "final_selection"
	StageTest           = "test"
	StageEval           = "eval"
)

// IsBulkStage reports whether nothing waits on a stage's target work yet:
// the selection baseline, test and eval measurements (and idle fill, which
// runs as test_baseline). Such work goes to the bulk class.
func IsBulkStage(stage string) bool {
	return stage == StageBaseline || strings.HasPrefix(stage, StageTest) || strings.HasPrefix(stage, StageEval)
}
