package trainer_test

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/skillfleet/skillfleet/coordinator/fleettest"
)

// TestEarlyStopNeverChangesADecision trains a small cut of the paper
// preset (one epoch, batch 100, a 60-item selection split, no test
// evaluation) over 20 seeds with early stop on and off: the accept/reject
// sequence, with each candidate's hash, must be the same. Early stop only
// skips rollouts of candidates that can no longer strictly beat current.
//
// The step buffer is on (the default): it shows the optimizer the same
// thing in both modes (a rejected candidate that did not score higher is
// "not higher", never a partial or full score), so the optimizer's later
// inputs, and so its later candidates, do not depend on early stop. Five
// more seeds run the paired gate (McNemar, one sample per item), whose
// rejected-but-higher candidates are shown with their full score.
func TestEarlyStopNeverChangesADecision(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the paper preset 50 times")
	}
	t.Parallel()
	var stopped atomic.Int64
	type variant struct {
		name  string
		seeds int
		sets  []string
	}
	for _, v := range []variant{
		{"strict", 20, nil},
		{"paired", 5, []string{"evaluation.gate_test=paired", "evaluation.gate_alpha=0.2"}},
	} {
		for seed := 1; seed <= v.seeds; seed++ {
			t.Run(fmt.Sprintf("%s/seed%d", v.name, seed), func(t *testing.T) {
				t.Parallel()
				var seqs [2][]string
				for i, es := range []bool{true, false} {
					sets := append([]string{fmt.Sprintf("train.seed=%d", seed), "train.num_epochs=1", "train.batch_size=100",
						"evaluation.sel_env_num=60", "evaluation.eval_test=false", fmt.Sprintf("evaluation.early_stop=%v", es)}, v.sets...)
					dir := t.TempDir()
					if _, err := new(fleettest.Runner).Run(t, dir, fleettest.Paper, nil, sets...); err != nil {
						t.Fatalf("early_stop=%v: %v", es, err)
					}
					for _, e := range fleettest.Events(t, dir) {
						if e.Type == "step" || e.Type == "slow_update" {
							seqs[i] = append(seqs[i], fmt.Sprintf("%s %d %s %s", e.Type, e.Step, e.Action, e.CandidateHash))
						}
						if e.EarlyStopped && es {
							stopped.Add(1)
						}
					}
				}
				if !slices.Equal(seqs[0], seqs[1]) {
					t.Errorf("decisions differ\nearly stop on:  %q\nearly stop off: %q", seqs[0], seqs[1])
				}
			})
		}
	}
	t.Cleanup(func() {
		t.Logf("%d candidate evaluations stopped early", stopped.Load())
		if stopped.Load() == 0 {
			t.Error("early stop never fired: the test compares nothing")
		}
	})
}
