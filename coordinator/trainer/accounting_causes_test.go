package trainer

import (
	"testing"

	"github.com/skillfleet/skillfleet/pkg/usage"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// TestAccountingCountsFailureCauses: the causes a result's usage carries
// add up per stage and in the total, late (cancelled) results included.
func TestAccountingCountsFailureCauses(t *testing.T) {
	t.Parallel()
	a := NewAccounting()
	a.Add("gate", "target", "m", &pb.Result{TaskId: "r/1", Outcome: pb.Outcome_OUTCOME_OK,
		Usage: &pb.Usage{Calls: 3, FailedCalls: 2, FailedCauses: map[string]int32{"stall": 1, "server_5xx": 1}}})
	a.Add("gate", "target", "m", &pb.Result{TaskId: "r/2", Outcome: pb.Outcome_OUTCOME_CANCELLED,
		Usage: &pb.Usage{Calls: 1, InputTokens: 40, OutputTokens: 4}})
	a.Add("reflect", "optimizer", "o", &pb.Result{TaskId: "r/3", Outcome: pb.Outcome_OUTCOME_INVALID_REPLY,
		Usage: &pb.Usage{Calls: 2, FailedCalls: 1, FailedCauses: map[string]int32{"transport": 1, "invalid_reply": 1}}})
	// The same result again counts nothing new.
	a.Add("gate", "target", "m", &pb.Result{TaskId: "r/1", Usage: &pb.Usage{Calls: 3, FailedCauses: map[string]int32{"stall": 1}}})
	tot := a.Total()
	want := usage.Causes{Stall: 1, Server5xx: 1, Transport: 1, InvalidReply: 1}
	if tot.Causes != want || tot.Calls != 6 || tot.Input != 40 {
		t.Fatalf("total %+v, want causes %+v over 6 calls, 40 input tokens", tot, want)
	}
	if g := a.Snapshot()["gate"].Causes; g != (usage.Causes{Stall: 1, Server5xx: 1}) {
		t.Fatalf("gate causes %+v", g)
	}
}
