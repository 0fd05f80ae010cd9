package telemetry

import (
	"testing"

	"google.golang.org/grpc/stats"
)

// TestOnlyTaskCallsAreTraced: GetSkill, made for a task, is traced;
// Register, Heartbeat and the Report stream are not (each result gets its
// own report and record spans instead).
func TestOnlyTaskCallsAreTraced(t *testing.T) {
	for method, want := range map[string]bool{
		"/skillfleet.v1.Coordinator/GetSkill":  true,
		"/skillfleet.v1.Coordinator/Register":  false,
		"/skillfleet.v1.Coordinator/Heartbeat": false,
		"/skillfleet.v1.Coordinator/Report":    false,
	} {
		if got := tracedRPC(&stats.RPCTagInfo{FullMethodName: method}); got != want {
			t.Errorf("%s traced: %v, want %v", method, got, want)
		}
	}
}

// TestStepNeverNegative: an epoch-level wave's tasks (step −epoch) carry
// the epoch and no step; step 0 (the baseline) and positive steps stay.
func TestStepNeverNegative(t *testing.T) {
	for _, c := range []struct {
		a           Attrs
		step, epoch int64 // -1: absent
	}{
		{Attrs{Run: "r", Step: -2, Stage: "pair"}, -1, 2},
		{Attrs{Run: "r", Step: -2, Epoch: 3}, -1, 3},
		{Attrs{Run: "r", Step: 0, Stage: "baseline"}, 0, -1},
		{Attrs{Run: "r", Step: 4, Epoch: 1}, 4, 1},
	} {
		step, epoch := int64(-1), int64(-1)
		for _, kv := range c.a.KeyValues() {
			switch kv.Key {
			case KeyStep:
				step = kv.Value.AsInt64()
			case KeyEpoch:
				epoch = kv.Value.AsInt64()
			}
		}
		if step != c.step || epoch != c.epoch {
			t.Errorf("%+v: step %d, epoch %d; want %d, %d (-1: absent)", c.a, step, epoch, c.step, c.epoch)
		}
	}
}
