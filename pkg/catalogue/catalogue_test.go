package catalogue

import (
	"errors"
	"slices"
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/pkg/prompts"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// TestKindsMatchTheProto: the table has one row per field of Task's kind
// oneof, and a row is an optimizer kind exactly when its field carries an
// OptimizerTask.
func TestKindsMatchTheProto(t *testing.T) {
	t.Parallel()
	fields := kindOneof.Fields()
	if fields.Len() != len(kinds) {
		t.Errorf("proto oneof has %d kinds, table %d", fields.Len(), len(kinds))
	}
	for i := range fields.Len() {
		fd := fields.Get(i)
		name := string(fd.Name())
		wantRole := RoleTarget
		if fd.Message().FullName() == optimizerTaskName {
			wantRole = RoleOptimizer
		}
		if got := RoleOf(name); got != wantRole {
			t.Errorf("RoleOf(%s) = %q, want %q", name, got, wantRole)
		}
	}
	if RoleOf("nope") != "" {
		t.Error(`RoleOf("nope") is not ""`)
	}
}

func TestOptimizerTaskRoundTrip(t *testing.T) {
	t.Parallel()
	for _, k := range Kinds() {
		ot := &pb.OptimizerTask{Prompt: "p-" + k}
		task, err := OptimizerTask(k, ot)
		if RoleOf(k) != RoleOptimizer {
			if err == nil {
				t.Errorf("OptimizerTask(%s) = nil error, want a refusal for a target kind", k)
			}
			continue
		}
		if err != nil {
			t.Fatalf("OptimizerTask(%s) = %v", k, err)
		}
		// Through the wire, as a worker receives it.
		b, err := proto.Marshal(task)
		if err != nil {
			t.Fatal(err)
		}
		got := &pb.Task{}
		if err := proto.Unmarshal(b, got); err != nil {
			t.Fatal(err)
		}
		if KindOf(got) != k {
			t.Errorf("KindOf(OptimizerTask(%s)) = %q", k, KindOf(got))
		}
		if o := Optimizer(got); o.GetPrompt() != "p-"+k {
			t.Errorf("Optimizer(OptimizerTask(%s)).Prompt = %q, want %q", k, o.GetPrompt(), "p-"+k)
		}
	}
	if _, err := OptimizerTask("reflection", &pb.OptimizerTask{}); err == nil {
		t.Error("OptimizerTask accepted an unknown kind")
	}
}

func TestKindOfTargetTasks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		task *pb.Task
		kind string
	}{
		{&pb.Task{Kind: &pb.Task_Rollout{Rollout: &pb.RolloutTask{}}}, KindRollout},
		{&pb.Task{Kind: &pb.Task_Noop{Noop: &pb.NoopTask{}}}, KindNoop},
		{&pb.Task{Kind: &pb.Task_Lr{Lr: &pb.OptimizerTask{}}}, KindLR},
		{&pb.Task{}, ""},
		{nil, ""},
	}
	for _, tt := range tests {
		if got := KindOf(tt.task); got != tt.kind {
			t.Errorf("KindOf(%v) = %q, want %q", tt.task, got, tt.kind)
		}
		if tt.kind == KindRollout || tt.kind == KindNoop || tt.kind == "" {
			if Optimizer(tt.task) != nil {
				t.Errorf("Optimizer(%v) is not nil", tt.task)
			}
		}
	}
	if !slices.Equal(Kinds()[:2], []string{KindRollout, KindNoop}) {
		t.Errorf("Kinds() = %v, want target kinds first", Kinds())
	}
}

func TestIsBulkStage(t *testing.T) {
	t.Parallel()
	for stage, want := range map[string]bool{
		StageBaseline: true, "test_baseline": true, "test_best": true, "eval_seed": true,
		StageRollout: false, StageGate: false, StageFinalSelection: false, "slow_update_gate": false, StageReflect: false,
	} {
		if got := IsBulkStage(stage); got != want {
			t.Errorf("IsBulkStage(%q) = %v, want %v", stage, got, want)
		}
	}
}

// TestEveryPromptHasARow: each prompt pkg/prompts renders travels as an
// optimizer kind and has a reply type; no row names a prompt that does
// not exist.
func TestEveryPromptHasARow(t *testing.T) {
	t.Parallel()
	names := prompts.Names()
	for _, name := range names {
		kind, err := PromptKind(name)
		if err != nil {
			t.Errorf("prompt %s has no catalogue row: %v", name, err)
			continue
		}
		if RoleOf(kind) != RoleOptimizer {
			t.Errorf("prompt %s travels as %q, not an optimizer kind", name, kind)
		}
		task, err := PromptTask(&pb.OptimizerTask{Prompt: name})
		if err != nil || Optimizer(task).GetPrompt() != name || KindOf(task) != kind {
			t.Errorf("PromptTask(%s) = %v, %v; want a %s task carrying it", name, task, err, kind)
		}
	}
	for _, p := range optimizerPrompts {
		if !slices.Contains(names, p.name) {
			t.Errorf("catalogue row %s names no prompt of pkg/prompts", p.name)
		}
	}
	if _, err := PromptTask(&pb.OptimizerTask{Prompt: "analyst"}); !errors.Is(err, prompts.ErrUnknownPrompt) {
		t.Errorf("PromptTask(analyst) = %v, want ErrUnknownPrompt", err)
	}
}

func TestCheckReply(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, raw string
		ok        bool
	}{
		{prompts.Ranking, `{"selected_indices": [0, 2]}`, true},
		{prompts.LRController, `{"learning_rate": 2}`, true},
		{prompts.Consolidate, `{"notes": "not a list"}`, false},
		{prompts.AnalystFailure, `[1, 2]`, false},
		{"nope", `{}`, false},
	}
	for _, tt := range tests {
		err := CheckReply(tt.name, []byte(tt.raw))
		if (err == nil) != tt.ok {
			t.Errorf("CheckReply(%s, %s) = %v, want ok=%v", tt.name, tt.raw, err, tt.ok)
		}
	}
	v, err := NewReply(prompts.MergeFinal)
	if _, ok := v.(*prompts.MergeReply); !ok || err != nil {
		t.Errorf("NewReply(merge_final) = %T, %v, want *prompts.MergeReply", v, err)
	}
}
