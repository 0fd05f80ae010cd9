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

	simbench "github.com/skillfleet/skillfleet/pkg/bench/sim"
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

// runAgentCLI runs skillfleet with a planted key in the environment, passed
// to the agent through the env option.
func runAgentCLI(t *testing.T, args ...string) (string, time.Duration, error) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = repoRoot(t)
	cmd.Env = append(os.Environ(), "SKILLFLEET_AGENT_TEST_KEY="+agentPlantedKey)
	start := time.Now()
	b, err := cmd.CombinedOutput()
	return string(b), time.Since(start), err
}

type trainSummary struct {
	TestHard map[string]float64 `json:"test_hard"`
}

// TestAgentHarnessesTrainAndTransfer trains a skill with the real Codex
// CLI and the real Claude Code as the target against sim-llm
// (configs/harness): each run completes and reports baseline and best test
// scores (logged; the issue's +0.3 is not reached reliably, see the
// report), then the Codex-trained skill is evaluated under Claude Code
// (harness transfer) and must beat Claude Code's no-skill baseline. A planted key reaches the agents (the
// env option) but no file of the run directories, their logs or kept
// work directories.
//
// It runs about 170 real CLI calls (10 to 15 minutes on a busy 2-core
// machine), so it runs only with SKILLFLEET_AGENT_E2E=1 and a -timeout of
// 30m or more.
func TestAgentHarnessesTrainAndTransfer(t *testing.T) {
	requireAgents(t)
	if os.Getenv("SKILLFLEET_AGENT_E2E") != "1" {
		t.Skip("runs two trainings and an eval with the real agent CLIs (10-15 min): set SKILLFLEET_AGENT_E2E=1 and -timeout 30m")
	}
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
			log, took, err := runAgentCLI(t, "train", "--config", "configs/harness/"+h+"-sim.yaml", "--out", out,
				"--keep-workdirs", "--set", "model.target_options.work_root="+work,
				"--set", "model.target_options.env=SKILLFLEET_AGENT_TEST_KEY")
			mu.Lock()
			defer mu.Unlock()
			t.Logf("%s: train took %s", h, took.Round(time.Second))
			if err != nil {
				t.Errorf("%s: train: %v\n%s", h, err, tailLines(log, 30))
				return
			}
			if err := os.WriteFile(out+".log", []byte(log), 0o644); err != nil {
				t.Error(err)
			}
			var s trainSummary
			if err := json.Unmarshal(readFile(t, filepath.Join(out, "summary.json")), &s); err != nil {
				t.Error(err)
				return
			}
			t.Logf("%s: test score %.3f -> %.3f", h, s.TestHard["baseline"], s.TestHard["best"])
			if _, ok := s.TestHard["best"]; !ok || len(s.TestHard) < 2 {
				t.Errorf("%s: summary test scores %v, want baseline and best", h, s.TestHard)
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	// Transfer: the Codex-trained skill under Claude Code.
	evalOut := filepath.Join(tmp, "transfer")
	log, took, err := runAgentCLI(t, "eval", "--config", "configs/harness/claude-sim.yaml", "--skill", filepath.Join(runs["codex"], "best_skill.md"),
		"--baseline", "--out", evalOut)
	if err != nil {
		t.Fatalf("transfer eval: %v\n%s", err, tailLines(log, 30))
	}
	if err := os.WriteFile(evalOut+".log", []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	var res []struct {
		Name string `json:"name"`
		By   map[string]struct {
			Hard float64 `json:"hard_acc"`
		} `json:"by_task_type"`
	}
	if err := json.Unmarshal(readFile(t, filepath.Join(evalOut, "eval_summary.json")), &res); err != nil {
		t.Fatal(err)
	}
	score := map[string]float64{}
	for _, r := range res {
		score[r.Name] = r.By["overall"].Hard
	}
	t.Logf("transfer (%s): Claude Code no skill %.3f, seed %.3f, Codex-trained skill %.3f", took.Round(time.Second), score["no_skill"], score["seed_skill"], score["skill"])
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
	// pitfalls (pkg/bench/sim's own distribution).
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
