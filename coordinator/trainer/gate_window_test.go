package trainer_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/skillfleet/skillfleet/internal/fleettest"
)

// TestGateWindowKeepsDecisionsAndSavesCalls trains a cut of the paper
// preset (one epoch, batch 100, a 60-item selection split, no test
// evaluation) on a fleet as wide as the selection split, with the gate
// window on and off. The decisions must be the same; with every selection
// task in flight, a stopped gate pays for the calls its stop did not need,
// so the windowed runs must make fewer calls.
func TestGateWindowKeepsDecisionsAndSavesCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the paper preset 8 times")
	}
	t.Parallel()
	var calls [2]int64
	stopped := 0
	for seed := 1; seed <= 4; seed++ {
		var seqs [2][]string
		for i, window := range []bool{true, false} {
			dir := t.TempDir()
			sum, err := new(fleettest.Runner).Run(t, dir, fleettest.Paper, nil,
				fmt.Sprintf("train.seed=%d", seed), "train.num_epochs=1", "train.batch_size=100",
				"evaluation.sel_env_num=60", "evaluation.eval_test=false", "evaluation.early_stop=true",
				fmt.Sprintf("runtime.gate_window=%v", window))
			if err != nil {
				t.Fatalf("seed %d, gate_window=%v: %v", seed, window, err)
			}
			calls[i] += sum.Tokens.Calls
			for _, e := range fleettest.Events(t, dir) {
				if e.Type == "step" || e.Type == "slow_update" {
					seqs[i] = append(seqs[i], fmt.Sprintf("%s %d %s %s", e.Type, e.Step, e.Action, e.CandidateHash))
				}
				if e.EarlyStopped && window {
					stopped++
				}
			}
		}
		if !slices.Equal(seqs[0], seqs[1]) {
			t.Errorf("seed %d: decisions differ\nwindow on:  %q\nwindow off: %q", seed, seqs[0], seqs[1])
		}
	}
	if stopped == 0 {
		t.Fatal("no gate evaluation stopped early: the test compares nothing")
	}
	t.Logf("%d stopped gates; calls with the window %d, without %d", stopped, calls[0], calls[1])
	if calls[0] >= calls[1] {
		t.Errorf("calls with the gate window = %d, want fewer than without it (%d)", calls[0], calls[1])
	}
}
