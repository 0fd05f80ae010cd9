package queue

import (
	"testing"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

func TestClassesAndSubjects(t *testing.T) {
	roll := func(stage string) *pb.Task {
		return &pb.Task{Stage: stage, Kind: &pb.Task_Rollout{Rollout: &pb.RolloutTask{}}}
	}
	for stage, want := range map[string]Class{
		"rollout": ClassCritical, "gate": ClassCritical, "final_selection": ClassCritical, "slow_update_e1": ClassCritical,
		"baseline": ClassBulk, "test_baseline": ClassBulk, "test_best": ClassBulk, "eval_skill": ClassBulk,
	} {
		if got := ClassOf(roll(stage)); got != want {
			t.Errorf("stage %s: class %s, want %s", stage, got, want)
		}
	}
	if got := ClassOf(&pb.Task{Stage: "test", Kind: &pb.Task_Reflect{Reflect: &pb.OptimizerTask{}}}); got != ClassOptimizer {
		t.Errorf("reflect: class %s", got)
	}
	if got := RunToken("runs/a.b c*>"); got != "runs_a_b_c__" {
		t.Errorf("RunToken = %q", got)
	}
	if got := TaskSubject(ClassBulk, KindRollout, "r1"); got != "skillfleet.tasks.bulk.rollout.r1" {
		t.Errorf("TaskSubject = %q", got)
	}
	if ClassSubjects(ClassCritical) != "skillfleet.tasks.crit.>" || RunSubjects("r1") != "skillfleet.tasks.*.*.r1" {
		t.Error("filters")
	}
}

// TestRedactURL: every server of a comma-separated list loses its password.
func TestRedactURL(t *testing.T) {
	for in, want := range map[string]string{
		"nats://127.0.0.1:4222":                         "nats://127.0.0.1:4222",
		"nats://u:secret@a:4222,nats://u:secret@b:4222": "nats://u:xxxxx@a:4222,nats://u:xxxxx@b:4222",
		"nats://a:4222, nats://u:secret@b:4222":         "nats://a:4222,nats://u:xxxxx@b:4222",
		"nats://u:sec%zzret@a:4222":                     "(unparsable URL)",
	} {
		if got := redactURL(in); got != want {
			t.Errorf("redactURL(%q) = %q, want %q", in, got, want)
		}
	}
}
