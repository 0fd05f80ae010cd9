package main

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// realAgentBin returns the pinned CLI scripts/install-agents.sh put in
// .tools/agents, or skips naming what to run (fails instead with
// SKILLFLEET_REQUIRE_AGENTS=1).
func realAgentBin(t *testing.T, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the real agent CLIs")
	}
	p := agentCLI(t, name)
	if _, err := os.Stat(p); err != nil {
		msg := "agent CLI " + name + " not installed at " + p + ": run scripts/install-agents.sh"
		if os.Getenv("SKILLFLEET_REQUIRE_AGENTS") == "1" {
			t.Fatal(msg + " (SKILLFLEET_REQUIRE_AGENTS=1)")
		}
		t.Skip(msg)
	}
	return p
}

// TestRealMoreAgentsTrain trains with the real Copilot CLI, pi and
// opencode as the target against sim-llm (configs/harness/<cli>-sim.yaml,
// the demo world of the harness configs, --assert-improves), the three
// at once: each test score must rise by at least minAgentGain, every
// target call is a run of the CLI (tokens.json counts them), and the
// planted key passed to the agents (option env) is in no file of the run
// directories or the kept work directories. Each training's wall, CPU
// time and calls are logged (docs/backends.md has the figures).
//
// About 200 CLI calls in all, so it is opt-in as
// TestAgentHarnessesTrainAndTransfer is: SKILLFLEET_AGENT_E2E=1 and a
// -timeout of 40m. A CLI that is not installed skips its subtest.
func TestRealMoreAgentsTrain(t *testing.T) {
	if os.Getenv("SKILLFLEET_AGENT_E2E") != "1" {
		t.Skip("three trainings with the real Copilot CLI, pi and opencode (about 200 CLI calls): set SKILLFLEET_AGENT_E2E=1 and -timeout 40m")
	}
	t.Parallel()
	for _, tc := range []struct{ agent, pathKey string }{
		{"copilot", "model.copilot_exec_path"},
		{"pi", "model.target_options.bin"},
		{"opencode", "model.target_options.bin"},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			bin := realAgentBin(t, tc.agent)
			t.Parallel()
			tmp := t.TempDir()
			work := filepath.Join(tmp, "workdirs")
			if err := os.MkdirAll(work, 0o755); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(tmp, "run")
			r, err := runAgentCLI(t, "train", "--config", "configs/harness/"+tc.agent+"-sim.yaml", "--out", out, "--assert-improves",
				"--set", tc.pathKey+"="+bin, "--keep-workdirs", "--set", "model.target_options.work_root="+work,
				"--set", "model.target_options.env=SKILLFLEET_AGENT_TEST_KEY")
			if werr := os.WriteFile(out+".log", []byte(r.out), 0o644); werr != nil {
				t.Error(werr)
			}
			if err != nil {
				t.Fatalf("train --assert-improves: %v\n%s", err, tailLines(r.out, 30))
			}
			var s trainSummary
			if err := json.Unmarshal(readFile(t, filepath.Join(out, "summary.json")), &s); err != nil {
				t.Fatal(err)
			}
			calls := agentCalls(t, out)
			base, okBase := s.TestHard["baseline"]
			best, okBest := s.TestHard["best"]
			t.Logf("%s: test score %.3f -> %.3f; %d CLI calls, wall %s, CPU %s (%.1f CPU-s a call)", tc.agent, base, best,
				calls, r.wall.Round(time.Second), r.cpu.Round(time.Second), r.cpu.Seconds()/float64(max(calls, 1)))
			if !okBase || !okBest {
				t.Fatalf("summary test scores %v, want baseline and best", s.TestHard)
			}
			if best-base < minAgentGain-1e-9 {
				t.Errorf("test score %.3f -> %.3f, a rise of %.3f; want at least %.1f", base, best, best-base, minAgentGain)
			}
			kept, _ := filepath.Glob(filepath.Join(work, "skillfleet-exec-*"))
			if calls < 40 || len(kept) < calls {
				t.Errorf("%d target calls in tokens.json, %d kept work directories: want a CLI run for each call, at least 40 calls", calls, len(kept))
			}
			scanned := 0
			if err := filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
				if err != nil || !d.Type().IsRegular() {
					return nil
				}
				b, err := os.ReadFile(p)
				if err != nil {
					return nil
				}
				scanned++
				if bytes.Contains(b, []byte(agentPlantedKey)) {
					t.Errorf("the planted key is in %s", p)
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if scanned < 100 {
				t.Errorf("%d files scanned for the planted key: the scan saw too little", scanned)
			}
		})
	}
}
