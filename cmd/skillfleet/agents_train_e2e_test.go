package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// TestStandInAgentsTrain trains with the Copilot CLI, pi and opencode
// harnesses as the target (configs/harness/*-sim.yaml, --assert-improves)
// where each CLI is testdata/fakeagent: a stand-in that takes the real
// CLI's argv and environment, finds the endpoint and the skill where
// that CLI would, and runs the tool loop with sim-llm, which opens the
// skill only if it is listed where the harness installed it. The test
// score must rise by at least minAgentGain for each: the harness's
// argv, skill layout, provider wiring and output parser carry a trained
// skill to the model and its answer back. (The real CLIs:
// TestMoreAgentsAgainstSimLLM in backends/exec.)
func TestStandInAgentsTrain(t *testing.T) {
	t.Parallel()
	binDir, err := os.MkdirTemp("", "skillfleet-standin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(binDir) })
	build := exec.Command("go", "build", "-o", filepath.Join(binDir, "fakeagent"), "./testdata/fakeagent")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the stand-in: %v\n%s", err, out)
	}
	for _, tc := range []struct{ agent, pathKey string }{
		{"copilot", "model.copilot_exec_path"},
		{"pi", "model.target_options.bin"},
		{"opencode", "model.target_options.bin"},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			bin := filepath.Join(binDir, tc.agent)
			if err := os.Link(filepath.Join(binDir, "fakeagent"), bin); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(t.TempDir(), "run")
			r, err := runAgentCLI(t, "train", "--config", "configs/harness/"+tc.agent+"-sim.yaml", "--out", out, "--assert-improves",
				"--set", tc.pathKey+"="+bin, "--set", "model.target_options.sandbox=none")
			if err != nil {
				t.Fatalf("train --assert-improves: %v\n%s", err, tailLines(r.out, 30))
			}
			var s trainSummary
			if err := json.Unmarshal(readFile(t, filepath.Join(out, "summary.json")), &s); err != nil {
				t.Fatal(err)
			}
			base, best := s.TestHard["baseline"], s.TestHard["best"]
			t.Logf("%s: test score %.3f -> %.3f; wall %s", tc.agent, base, best, r.wall)
			if best-base < minAgentGain {
				t.Errorf("%s: test score %.3f -> %.3f, want a rise of at least %.1f", tc.agent, base, best, minAgentGain)
			}
		})
	}
}
