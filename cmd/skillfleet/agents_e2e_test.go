package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
)

// requireAgents skips when the agent CLIs are not installed
// (scripts/install-agents.sh), or fails when SKILLFLEET_REQUIRE_AGENTS=1.
func requireAgents(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the real agent CLIs")
	}
	for _, b := range []string{"codex", "claude"} {
		p := filepath.Join(repoRoot(t), ".tools", "agents", "node_modules", ".bin", b)
		if _, err := os.Stat(p); err != nil {
			msg := "agent CLI " + b + " not installed at " + p + ": run scripts/install-agents.sh"
			if os.Getenv("SKILLFLEET_REQUIRE_AGENTS") == "1" {
				t.Fatal(msg + " (SKILLFLEET_REQUIRE_AGENTS=1)")
			}
			t.Skip(msg)
		}
	}
}

const agentPlantedKey = "sk-agent-planted-c0ffee1234"

// agentRun is one skillfleet process run with the agent CLIs.
type agentRun struct {
	out  string
	wall time.Duration
	// cpu is the user+system time of skillfleet and every process it
	// waited for (the CLIs and their children).
	cpu time.Duration
}

// runAgentCLI runs skillfleet with a planted key in the environment, passed
// to the agent through the env option.
func runAgentCLI(t *testing.T, args ...string) (agentRun, error) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "SKILLFLEET_AGENT_TEST_KEY="+agentPlantedKey)
	start := time.Now()
	b, err := cmd.CombinedOutput()
	r := agentRun{out: string(b), wall: time.Since(start)}
	if cmd.ProcessState != nil {
		r.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	}
	return r, err
}

type trainSummary struct {
	TestHard map[string]float64 `json:"test_hard"`
}

// minAgentGain is the least rise of the test score (hard accuracy) that
// training with either real CLI must show (issue #22).
const minAgentGain = 0.3

// TestAgentHarnessesTrainAndTransfer trains a skill with the real Codex
// CLI and the real Claude Code as the target against sim-llm
// (configs/harness, --assert-improves), the two at once: each must raise
// the test score by at least minAgentGain. Then the Codex-trained skill is
// evaluated under Claude Code (harness transfer) and must beat Claude
// Code's no-skill baseline. A planted key reaches the agents (the env
// option) but no file of the run directories, their logs or kept work
// directories.
//
// About 180 real CLI calls, near 10 CPU-minutes: 14 min of wall on this
// 2-core machine under the load of a CI run (load average 40-60), so it is
// opt-in: SKILLFLEET_AGENT_E2E=1 (and a -timeout of 30m). Each training's
// wall, CPU time and calls are logged (docs/backends.md has the figures).
// It skips without the CLIs (scripts/install-agents.sh), unless
// SKILLFLEET_REQUIRE_AGENTS=1, and with -short.
func TestAgentHarnessesTrainAndTransfer(t *testing.T) {
	requireAgents(t)
	if os.Getenv("SKILLFLEET_AGENT_E2E") != "1" {
		t.Skip("two trainings and a transfer eval with the real agent CLIs (about 180 CLI calls, 10 CPU-minutes): set SKILLFLEET_AGENT_E2E=1 and -timeout 30m")
	}
	t.Parallel()
	tmp := t.TempDir()
	work := filepath.Join(tmp, "workdirs")
	if err := os.MkdirAll(work, 0o755); err != nil {
		t.Fatal(err)
	}
	runs := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, h := range []string{"codex", "claude"} {
		out := filepath.Join(tmp, h)
		runs[h] = out
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := runAgentCLI(t, "train", "--config", "configs/harness/"+h+"-sim.yaml", "--out", out, "--assert-improves",
				"--keep-workdirs", "--set", "model.target_options.work_root="+work,
				"--set", "model.target_options.env=SKILLFLEET_AGENT_TEST_KEY")
			mu.Lock()
			defer mu.Unlock()
			if err := os.WriteFile(out+".log", []byte(r.out), 0o644); err != nil {
				t.Error(err)
			}
			if err != nil {
				t.Errorf("%s: train --assert-improves: %v\n%s", h, err, tailLines(r.out, 30))
				return
			}
			var s trainSummary
			if err := json.Unmarshal(readFile(t, filepath.Join(out, "summary.json")), &s); err != nil {
				t.Error(err)
				return
			}
			calls := agentCalls(t, out)
			t.Logf("%s: test score %.3f -> %.3f; %d CLI calls, wall %s, CPU %s (%.1f CPU-s a call)", h, s.TestHard["baseline"], s.TestHard["best"],
				calls, r.wall.Round(time.Second), r.cpu.Round(time.Second), r.cpu.Seconds()/float64(max(calls, 1)))
			base, okBase := s.TestHard["baseline"]
			best, okBest := s.TestHard["best"]
			if !okBase || !okBest {
				t.Errorf("%s: summary test scores %v, want baseline and best", h, s.TestHard)
			} else if best-base < minAgentGain-1e-9 {
				t.Errorf("%s: test score %.3f -> %.3f, a rise of %.3f; want at least %.1f", h, base, best, best-base, minAgentGain)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	// Transfer: the Codex-trained skill under Claude Code.
	evalOut := filepath.Join(tmp, "transfer")
	r, err := runAgentCLI(t, "eval", "--config", "configs/harness/claude-sim.yaml", "--skill", filepath.Join(runs["codex"], "best_skill.md"),
		"--baseline", "--out", evalOut)
	if err := os.WriteFile(evalOut+".log", []byte(r.out), 0o644); err != nil {
		t.Fatal(err)
	}
	if err != nil {
		t.Fatalf("transfer eval: %v\n%s", err, tailLines(r.out, 30))
	}
	var res []struct {
		Name string `json:"name"`
		By   map[string]struct {
			Total  int     `json:"total"`
			Scored int     `json:"scored"`
			Hard   float64 `json:"hard_acc"`
		} `json:"by_task_type"`
	}
	if err := json.Unmarshal(readFile(t, filepath.Join(evalOut, "eval_summary.json")), &res); err != nil {
		t.Fatal(err)
	}
	score := map[string]float64{}
	for _, r := range res {
		o := r.By["overall"]
		if o.Total == 0 || o.Scored != o.Total {
			t.Fatalf("transfer eval %s: %d of %d items scored", r.Name, o.Scored, o.Total)
		}
		score[r.Name] = o.Hard
	}
	t.Logf("transfer (wall %s, CPU %s): Claude Code with no skill %.3f, the seed skill %.3f, the Codex-trained skill %.3f",
		r.wall.Round(time.Second), r.cpu.Round(time.Second), score["no_skill"], score["seed_skill"], score["skill"])
	if score["skill"] <= score["no_skill"] {
		t.Fatalf("the Codex-trained skill scores %.3f under Claude Code, no better than no skill (%.3f)", score["skill"], score["no_skill"])
	}

	// The planted key reached the agents (they ran with the env option)
	// and is in no file the runs left: run dirs, logs, kept work dirs.
	n := 0
	if err := filepath.WalkDir(tmp, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		n++
		if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, []byte(agentPlantedKey)) {
			t.Errorf("the planted key is in %s", p)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	kept, _ := filepath.Glob(filepath.Join(work, "skillfleet-exec-*"))
	if len(kept) == 0 || n < 100 {
		t.Fatalf("%d kept work dirs, %d files scanned: the scan saw too little", len(kept), n)
	}
	t.Logf("planted key absent from %d files (%d kept work dirs)", n, len(kept))
}

// agentCalls counts a run's target calls (every one a CLI run) from its
// tokens.json.
func agentCalls(t *testing.T, runDir string) int {
	t.Helper()
	var tok struct {
		Rows []struct {
			Role  string `json:"role"`
			Calls int    `json:"calls"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(readFile(t, filepath.Join(runDir, "tokens.json")), &tok); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range tok.Rows {
		if r.Role == "target" {
			n += r.Calls
		}
	}
	return n
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// The agent harness configs (configs/harness) train on a small sim world
// kept in configs/harness/world: six pitfalls, one per category (so the
// two broad categories' lures stay out), and items drawn from the paper
// preset's worlds (seeds 1 to agentWorldSources), each split from the same
// split, keeping only the items whose pitfalls are all among the six, in
// the generator's own shares of 0, 1, 2 and 3 pitfalls per item. With six
// rules to find instead of twelve, a run of three short steps (24 real CLI
// calls of rollouts) can reach them.
var (
	agentWorldPitfalls = []string{"units_km", "rounding_tens", "approx_prefix", "thousands_sep", "negative_sign", "off_by_one"}
	agentWorldSizes    = map[string]int{"train": 24, "val": 8, "test": 10}
	// agentWorldShares are the shares of items with 0, 1, 2 and 3
	// pitfalls (pkg/bench/simbench's own distribution).
	agentWorldShares = []float64{0.10, 0.30, 0.35, 0.25}
)

const agentWorldSources = 40

// agentWorld builds the world's splits.
func agentWorld(t *testing.T) map[string][]simbench.Item {
	t.Helper()
	pools := map[string][][]simbench.Item{}
	for sp := range agentWorldSizes {
		pools[sp] = make([][]simbench.Item, len(agentWorldShares))
	}
	for seed := int64(1); seed <= agentWorldSources; seed++ {
		w, err := simbench.Generate(simbench.PresetPaper, seed)
		if err != nil {
			t.Fatal(err)
		}
		for sp, items := range map[string][]simbench.Item{"train": w.Train, "val": w.Val, "test": w.Test} {
			for _, it := range items {
				inside := true
				for _, p := range it.Pitfalls {
					inside = inside && slices.Contains(agentWorldPitfalls, p)
				}
				if inside {
					it.ID = fmt.Sprintf("paper%02d-%s", seed, it.ID)
					pools[sp][len(it.Pitfalls)] = append(pools[sp][len(it.Pitfalls)], it)
				}
			}
		}
	}
	out := map[string][]simbench.Item{}
	for sp, n := range agentWorldSizes {
		// Each count's quota, by largest remainder.
		quota := make([]int, len(agentWorldShares))
		left := n
		for c, s := range agentWorldShares {
			quota[c] = int(float64(n) * s)
			left -= quota[c]
		}
		byRemainder := []int{0, 1, 2, 3}
		sort.SliceStable(byRemainder, func(i, j int) bool {
			ri := float64(n)*agentWorldShares[byRemainder[i]] - float64(quota[byRemainder[i]])
			rj := float64(n)*agentWorldShares[byRemainder[j]] - float64(quota[byRemainder[j]])
			return ri > rj
		})
		for _, c := range byRemainder[:left] {
			quota[c]++
		}
		var items []simbench.Item
		for c, q := range quota {
			if len(pools[sp][c]) < q {
				t.Fatalf("%s: %d items with %d pitfalls among the six, want %d", sp, len(pools[sp][c]), c, q)
			}
			items = append(items, pools[sp][c][:q]...)
		}
		r := simbench.HashRNG([]byte("agents-world"), []byte(sp))
		r.Shuffle(len(items), func(i, j int) { items[i], items[j] = items[j], items[i] })
		out[sp] = items
	}
	return out
}

// TestAgentWorldIsCurrent checks configs/harness/world against its
// generator; SKILLFLEET_UPDATE_AGENT_WORLD=1 rewrites it.
func TestAgentWorldIsCurrent(t *testing.T) {
	dir := filepath.Join(repoRoot(t), "configs", "harness", "world")
	world := agentWorld(t)
	for sp, items := range world {
		want, err := json.MarshalIndent(items, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, '\n')
		p := filepath.Join(dir, sp, "items.json")
		if os.Getenv("SKILLFLEET_UPDATE_AGENT_WORLD") == "1" {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if got := readFile(t, p); !bytes.Equal(got, want) {
			t.Errorf("%s differs from its generator (agentWorld): run SKILLFLEET_UPDATE_AGENT_WORLD=1 go test ./cmd/skillfleet -run TestAgentWorldIsCurrent", p)
		}
		// Every item's pitfalls are among the six, as its question cues them.
		for _, it := range items {
			if got := simbench.PitfallsInQuestion(it.Question); !slices.Equal(got, it.Pitfalls) {
				t.Errorf("%s %s: question cues %v, item lists %v", sp, it.ID, got, it.Pitfalls)
			}
		}
	}
}

// fakeAgentScript is a stand-in codex or claude: it passes the version
// check and answers by the last digit of the task's record value: 1 exits
// with status 3, 2 hangs, 3 prints one event then garbage and exits 0 (a
// broken stream); any other prints the record value (the gold answer) in
// the CLI's JSON output.
const fakeAgentScript = `#!/bin/bash
[ "$1" = "--version" ] && { echo '%s'; exit 0; }
task=$(cat task.md)
v=$(grep -o 'Record value: [0-9]*' <<<"$task" | tail -1 | grep -o '[0-9]*$')
case "$v" in
*1) echo "boom" >&2; exit 3 ;;
*2) sleep 300 ;;
*3) echo '{"type":"thread.started"}'; echo '<html>502 Bad Gateway</html>' ;;
*) printf '%s\n' "$v" ;;
esac
`

// TestFailingAgentIsNotAScore: under a stand-in Codex CLI and Claude Code
// (fakeAgentScript) that exit non-zero, hang or print garbage on four of
// the ten test items, `skillfleet eval` scores the six others only (all
// right: 1.0 over 6, not 0.6 over 10), logs each failure with its type,
// and leaves no process of a hung agent behind; `skillfleet train` refuses
// its gate for too few scored items instead of scoring them 0. About 45 s
// of wall, mostly waiting on the hung stand-ins' 5 s timeouts (short ones
// kill slow healthy calls on a loaded machine); both agents at once.
func TestFailingAgentIsNotAScore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ agent, version, answer string }{
		{"codex", "codex-cli 0.169.0", `{"type":"thread.started"}\n{"type":"item.completed","item":{"type":"agent_message","text":"<answer>%s</answer>"}}\n{"type":"turn.completed","usage":{"input_tokens":100,"cached_input_tokens":0,"output_tokens":5}}`},
		{"claude", "2.1.328 (Claude Code)", `{"type":"result","subtype":"success","is_error":false,"result":"<answer>%s</answer>","usage":{"input_tokens":100,"output_tokens":5}}`},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			// A directory others can enter (t.TempDir's is not), as a
			// sandboxed stand-in needs (a root worker's sandbox is uid 65534).
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
			pathKey := map[string]string{"codex": "model.codex_exec_path", "claude": "model.claude_code_exec_path"}[tc.agent]
			common := []string{"--config", "configs/harness/" + tc.agent + "-sim.yaml", "--set", pathKey + "=" + bin,
				"--set", "model.timeout=5s", "--set", "model.max_retries=0", "--set", "runtime.max_deliveries=2",
				// Unsandboxed (the logged opt-out): the 5 s timeouts that keep
				// this test short are below a sandboxed call's start-up time
				// on a heavily loaded machine (over 5 s at load 64, so the
				// failing stand-ins time out instead of exiting). Sandboxed
				// failures and timeouts: backends/exec's sandbox tests.
				"--set", "model.target_options.sandbox=none",
				// No circuit breaker: with the healthy items done, the failing
				// ones alone would open it and the hung one would fail fast
				// ("circuit open") instead of reaching its timeout.
				"--set", "model.target_options.circuit=off"}
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
			for _, want := range []string{"OUTCOME_INVALID_REPLY", "exited with exit status 3: boom", "timed out after 5s; process group killed"} {
				if !strings.Contains(r.out, want) {
					t.Errorf("the eval's log has no %q:\n%s", want, tailLines(r.out, 20))
				}
			}
			if strings.Contains(r.out, "OUTCOME_OK") {
				t.Errorf("a failure logged as OK")
			}
			// The hung agents' process groups were killed: no process runs
			// the stand-in any more.
			if pids := procsMentioning(t, binDir); len(pids) > 0 {
				t.Errorf("processes of the stand-in still run: %v", pids)
			}

			r, err = runAgentCLI(t, append([]string{"train", "--out", filepath.Join(dir, "train")}, common...)...)
			if err == nil || !strings.Contains(r.out, "too few items scored") || !strings.Contains(r.out, "of 8 selection items") {
				t.Errorf("train with a failing agent: %v; want the gate refused for too few scored items:\n%s", err, tailLines(r.out, 10))
			}
		})
	}
}

// procsMentioning lists the processes whose command line holds s.
func procsMentioning(t *testing.T, s string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.Name()[0] < '0' || e.Name()[0] > '9' {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && bytes.Contains(b, []byte(s)) {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}
