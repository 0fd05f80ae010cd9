package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMoreFailingAgentsAreNotAScore is TestFailingAgentIsNotAScore for
// the Copilot CLI, pi and opencode as training targets: stand-ins that
// print each CLI's own event stream (configs/harness/*-sim.yaml with the
// stand-in as the binary) exit non-zero, hang until killed, or break
// their stream on four of the ten test items; `skillfleet eval` scores
// the six others only and logs each failure with its type, no process of
// a hung stand-in is left, and `skillfleet train` refuses its gate for
// too few scored items instead of scoring them 0. With the binary
// missing, every item is a bad task naming the path, none scored.
func TestMoreFailingAgentsAreNotAScore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ agent, version, pathKey, answer string }{
		{"copilot", "GitHub Copilot CLI 1.0.102", "model.copilot_exec_path",
			`{"type":"assistant.message","data":{"content":"<answer>%s</answer>"}}\n{"type":"result","exitCode":0}`},
		{"pi", "0.73.1", "model.target_options.bin",
			`{"type":"session","version":3,"id":"s","cwd":"/w"}\n{"type":"message_end","message":{"role":"assistant","content":[{"type":"text","text":"<answer>%s</answer>"}],"usage":{"input":100,"output":5,"cacheRead":0,"cacheWrite":0},"stopReason":"stop"}}\n{"type":"agent_end","messages":[]}`},
		{"opencode", "1.18.33", "model.target_options.bin",
			`{"type":"text","part":{"type":"text","text":"<answer>%s</answer>"}}\n{"type":"step_finish","part":{"type":"step-finish","reason":"stop","tokens":{"input":100,"output":5,"reasoning":0,"cache":{"read":0,"write":0}}}}`},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			binDir, err := os.MkdirTemp("", "skillfleet-fakeagent-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(binDir) })
			if err := os.Chmod(binDir, 0o755); err != nil {
				t.Fatal(err)
			}
			bin := filepath.Join(binDir, tc.agent)
			if err := os.WriteFile(bin, []byte(fmt.Sprintf(fakeAgentScript, tc.version, tc.answer)), 0o755); err != nil {
				t.Fatal(err)
			}
			config := "configs/harness/" + tc.agent + "-sim.yaml"
			common := []string{"--config", config, "--set", tc.pathKey + "=" + bin,
				"--set", "model.timeout=5s", "--set", "model.max_retries=0", "--set", "runtime.max_deliveries=2",
				"--set", "model.target_options.sandbox=none"}
			out := filepath.Join(dir, "eval")
			r, err := runAgentCLI(t, append([]string{"eval", "--skill", "configs/skills/sim_demo_seed.md", "--out", out}, common...)...)
			if err != nil {
				t.Fatalf("eval: %v\n%s", err, tailLines(r.out, 30))
			}
			var res []struct {
				By map[string]struct {
					Total  int     `json:"total"`
					Scored int     `json:"scored"`
					Hard   float64 `json:"hard_acc"`
				} `json:"by_task_type"`
			}
			if err := json.Unmarshal(readFile(t, filepath.Join(out, "eval_summary.json")), &res); err != nil || len(res) != 1 {
				t.Fatalf("eval_summary.json: %v (%d results)", err, len(res))
			}
			if o := res[0].By["overall"]; o.Total != 10 || o.Scored != 6 || o.Hard != 1 {
				t.Errorf("overall %+v: want 6 of 10 items scored, all right (hard 1)", o)
			}
			for _, want := range []string{"OUTCOME_INVALID_REPLY", "exited with exit status 3: boom"} {
				if !strings.Contains(r.out, want) {
					t.Errorf("the eval's log has no %q:\n%s", want, tailLines(r.out, 20))
				}
			}
			// The hung stand-in is given up by the call's timeout, or
			// earlier by the adaptive stall deadline the quick replies of
			// the others set: a timeout either way.
			if !strings.Contains(r.out, "timed out after 5s; process group killed") && !strings.Contains(r.out, "no reply within the stall deadline") {
				t.Errorf("the eval's log names no timeout of the hung stand-in:\n%s", tailLines(r.out, 20))
			}
			if strings.Contains(r.out, "OUTCOME_OK") {
				t.Errorf("a failure logged as OK")
			}
			if pids := procsMentioning(t, binDir); len(pids) > 0 {
				t.Errorf("processes of the stand-in still run: %v", pids)
			}

			r, err = runAgentCLI(t, append([]string{"train", "--out", filepath.Join(dir, "train")}, common...)...)
			if err == nil || !strings.Contains(r.out, "too few items scored") || !strings.Contains(r.out, "of 8 selection items") {
				t.Errorf("train with a failing agent: %v; want the gate refused for too few scored items:\n%s", err, tailLines(r.out, 10))
			}

			missing := filepath.Join(binDir, "no-such-"+tc.agent)
			args := append([]string{"eval", "--skill", "configs/skills/sim_demo_seed.md", "--out", filepath.Join(dir, "missing")}, common...)
			args = append(args, "--set", tc.pathKey+"="+missing)
			// The preflight finds the missing binary before any item runs.
			r, err = runAgentCLI(t, args...)
			if err == nil || !strings.Contains(r.out, "preflight") || !strings.Contains(r.out, missing+" --version") {
				t.Errorf("eval with a missing binary: %v; want the preflight to refuse it, naming %s:\n%s", err, missing, tailLines(r.out, 10))
			}
			if _, err := os.Stat(filepath.Join(dir, "missing", "eval_skill")); err == nil {
				t.Errorf("eval refused by its preflight still ran items")
			}
			// Without the preflight every item is a bad task naming the
			// binary, none scored.
			if r, err = runAgentCLI(t, append(args, "--no-preflight")...); err != nil {
				t.Fatalf("eval --no-preflight with a missing binary: %v\n%s", err, tailLines(r.out, 10))
			}
			var rows []struct{ Outcome, Error string }
			for _, l := range strings.Split(strings.TrimSpace(string(readFile(t, filepath.Join(dir, "missing", "eval_skill", "results.jsonl")))), "\n") {
				var row struct{ Outcome, Error string }
				if err := json.Unmarshal([]byte(l), &row); err != nil {
					t.Fatal(err)
				}
				rows = append(rows, row)
			}
			if len(rows) != 10 {
				t.Fatalf("%d result rows with a missing binary, want 10", len(rows))
			}
			for _, row := range rows {
				if row.Outcome != "bad_task" || !strings.Contains(row.Error, missing+" --version") {
					t.Errorf("with a missing binary an item is %q: %q; want bad_task naming %s", row.Outcome, row.Error, missing)
				}
			}
		})
	}
}
