package trainer_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/internal/fleettest"
)

// idleFillOn is the setting of the demo reference run that
// TestSpeculationKeepsDecisions and TestIdleFillKeepsResults share
// (fleettest.Reference): the default, stated.
const idleFillOn = "runtime.idle_fill=true"

// TestSpeculationKeepsDecisions: starting the next step's rollouts for
// both possible skills during the gate changes no decision and no skill,
// and the speculative rollouts are really used (the real steps find fewer
// rollouts to make than there are rollout tasks).
func TestSpeculationKeepsDecisions(t *testing.T) {
	t.Parallel()
	plain, _, err := fleettest.Reference(t, fleettest.Demo, idleFillOn)
	if err != nil {
		t.Fatal(err)
	}
	spec, _, err := fleettest.RunDemo(t, nil, idleFillOn, "runtime.speculate=true")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"events.jsonl", "best_skill.md"} {
		a, err := os.ReadFile(filepath.Join(plain, f))
		if err != nil {
			t.Fatal(err)
		}
		b, err := os.ReadFile(filepath.Join(spec, f))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs with runtime.speculate=true:\n%s\nwant:\n%s", f, b, a)
		}
	}
	tok := readTokens(t, spec)
	if r := tok.ByStage["rollout"].Reused; r == 0 {
		t.Errorf("no speculative rollout was reused by a real step (rollout stage: %+v)", tok.ByStage["rollout"])
	}
}

func readTokens(t *testing.T, dir string) struct {
	ByStage map[string]trainer.Totals `json:"by_stage"`
} {
	t.Helper()
	var out struct {
		ByStage map[string]trainer.Totals `json:"by_stage"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "tokens.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestIdleFillKeepsResults: running the seed skill's test evaluation in
// idle target time gives the same events and scores as running it at the
// end, and the final evaluation really finds its results.
func TestIdleFillKeepsResults(t *testing.T) {
	t.Parallel()
	off, sumOff, err := fleettest.RunDemo(t, nil, "runtime.idle_fill=false")
	if err != nil {
		t.Fatal(err)
	}
	on, sumOn, err := fleettest.Reference(t, fleettest.Demo, idleFillOn)
	if err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(filepath.Join(off, "events.jsonl"))
	b, _ := os.ReadFile(filepath.Join(on, "events.jsonl"))
	if !bytes.Equal(a, b) {
		t.Errorf("events.jsonl differs with runtime.idle_fill=true")
	}
	if sumOn.TestHard["baseline"] != sumOff.TestHard["baseline"] || sumOn.TestHard["baseline"] == 0 {
		t.Errorf("baseline test score %v with idle fill, %v without", sumOn.TestHard["baseline"], sumOff.TestHard["baseline"])
	}
	tok := readTokens(t, on)
	if st := tok.ByStage["test_baseline"]; st.Reused == 0 || st.Tasks == 0 {
		t.Errorf("the final evaluation reused no background test result: %+v", st)
	}
	if st := readTokens(t, off).ByStage["test_baseline"]; st.Reused != 0 {
		t.Errorf("test_baseline reused %d results with idle fill off", st.Reused)
	}
}
