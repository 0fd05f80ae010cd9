package coordinator

import (
	"testing"

	"github.com/skillfleet/skillfleet/coordinator/trainer"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// TestEstimateShowsHedgeCopies: with wave hedging on, the estimate has a
// hedge row per role whose most calls are the run's cap of that role's
// most calls (plus one wave's copy); with it off there is none.
func TestEstimateShowsHedgeCopies(t *testing.T) {
	stages := []StageEstimate{
		{Stage: "rollout", Role: "target", Lo: 100, Exp: 1000, Hi: 2000, InPerCall: 300, OutLo: 5, OutHi: 50},
		{Stage: "reflect", Role: "optimizer", Lo: 10, Exp: 100, Hi: 200, InPerCall: 3000, OutLo: 50, OutHi: 500},
	}
	s := trainer.Settings{Hedge: trainer.DefaultHedge(), Target: &pb.ModelSpec{Model: "t"}, Optimizer: &pb.ModelSpec{Model: "o"}}
	rows := hedgeEstimates(s, stages)
	if len(rows) != 2 {
		t.Fatalf("hedge rows %+v, want one per role", rows)
	}
	for i, want := range []struct {
		role    string
		exp, hi int64
		in      int64
	}{{"target", 20, 101, 300}, {"optimizer", 2, 11, 3000}} {
		r := rows[i]
		if r.Stage != "hedge" || r.Role != want.role || r.Lo != 0 || r.Exp != want.exp || r.Hi != want.hi || r.InPerCall != want.in {
			t.Errorf("row %d = %+v, want role %s, 0/%d/%d calls of %d input tokens", i, r, want.role, want.exp, want.hi, want.in)
		}
	}
	s.Hedge = trainer.HedgePolicy{}
	if rows := hedgeEstimates(s, stages); len(rows) != 0 {
		t.Errorf("hedging off: rows %+v, want none", rows)
	}
}
