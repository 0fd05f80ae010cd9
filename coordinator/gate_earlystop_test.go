package coordinator_test

import (
	"fmt"
	"slices"
	"testing"
)

// TestEarlyStopNeverChangesADecision trains a small cut of the paper
// preset (one epoch, batch 100, a 60-item selection split, no test
// evaluation) over 20 seeds with early stop on and off: the accept/reject
// sequence, with each candidate's hash, must be the same. Early stop only
// skips rollouts of candidates that can no longer strictly beat current.
//
// The step buffer is off: by design it shows the optimizer a rejected
// candidate's score only when early stop is off (a stopped evaluation has
// no full score), so with it on the optimizer's later inputs, and so its
// later candidates, differ between the two settings.
func TestEarlyStopNeverChangesADecision(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the paper preset 40 times")
	}
	f := newFleet(t)
	stopped := 0
	for seed := 1; seed <= 20; seed++ {
		var seqs [2][]string
		for i, es := range []bool{true, false} {
			dir, _, err := f.runPreset(t, paperPreset, nil, fmt.Sprintf("train.seed=%d", seed), "train.num_epochs=1", "train.batch_size=100",
				"evaluation.sel_env_num=60", "evaluation.eval_test=false", "optimizer.use_step_buffer=false", fmt.Sprintf("evaluation.early_stop=%v", es))
			if err != nil {
				t.Fatalf("seed %d early_stop=%v: %v", seed, es, err)
			}
			for _, e := range events(t, dir) {
				if e.Type == "step" || e.Type == "slow_update" {
					seqs[i] = append(seqs[i], fmt.Sprintf("%s %d %s %s", e.Type, e.Step, e.Action, e.CandidateHash))
				}
				if e.EarlyStopped {
					stopped++
				}
			}
		}
		if !slices.Equal(seqs[0], seqs[1]) {
			t.Errorf("seed %d: decisions differ\nearly stop on:  %q\nearly stop off: %q", seed, seqs[0], seqs[1])
		}
	}
	t.Logf("%d candidate evaluations stopped early over 20 seeds", stopped)
	if stopped == 0 {
		t.Error("early stop never fired: the test compares nothing")
	}
}
