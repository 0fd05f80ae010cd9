package coordinator_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	simmodel "github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/coordinator"
)

// TestSpeculationKeepsDecisions: starting the next step's rollouts for
// both possible skills during the gate changes no decision and no skill,
// and the speculative rollouts are really used (the real steps find fewer
// rollouts to make than there are rollout tasks).
func TestSpeculationKeepsDecisions(t *testing.T) {
	plain, _, err := runDemo(t, &scripted{inner: simmodel.New(simmodel.Options{})})
	if err != nil {
		t.Fatal(err)
	}
	m := &scripted{inner: simmodel.New(simmodel.Options{})}
	spec, _, err := runDemo(t, m, "runtime.speculate=true")
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
	ByStage map[string]coordinator.Totals `json:"by_stage"`
} {
	t.Helper()
	var out struct {
		ByStage map[string]coordinator.Totals `json:"by_stage"`
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
