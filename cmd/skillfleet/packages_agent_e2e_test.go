package main

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestCodexTrainsSkillPackage trains a skill package with the real Codex
// CLI as the target (configs/packages/codex-sim.yaml, --assert-improves)
// against a sim-llm process of its own, so that sim-llm's request log can
// be read after the run: each call installed the candidate package as a
// skill directory, and the agent opened reference files of it with shell
// reads (cat .../references/<x>.md) — among them files the optimizer
// created that are in the best package. The test score must rise by at
// least minAgentGain, and the best package must hold a reference file
// the optimizer wrote.
//
// About 90 real CLI calls (95 s quiet, 4.5 min at load 20): opt-in like
// the other real-CLI trainings (SKILLFLEET_AGENT_E2E=1); it skips without
// the CLIs unless SKILLFLEET_REQUIRE_AGENTS=1, and with -short.
func TestCodexTrainsSkillPackage(t *testing.T) {
	requireAgents(t)
	if os.Getenv("SKILLFLEET_AGENT_E2E") != "1" {
		t.Skip("a package training with the real Codex CLI (about 90 CLI calls): set SKILLFLEET_AGENT_E2E=1")
	}
	t.Parallel()
	url := startSimLLMProcess(t)
	out := filepath.Join(t.TempDir(), "run")
	trainPackageWithAgent(t, "configs/packages/codex-sim.yaml", url, out)

	// The best package, as installed: reference files the optimizer wrote.
	seedRefs := map[string]bool{"references/rules.md": true}
	var written []string
	refs, _ := filepath.Glob(filepath.Join(out, "best_skill", "references", "*.md"))
	for _, f := range refs {
		if name := "references/" + filepath.Base(f); !seedRefs[name] {
			written = append(written, name)
		}
	}
	if len(written) == 0 {
		t.Fatalf("best_skill/references holds %v: no reference file the optimizer wrote", refs)
	}

	// sim-llm's request log: the agent listed the installed skill and
	// opened those reference files with shell reads.
	actions, opened := referenceReads(t, url, ".agents/skills/skillfleet-target")
	if actions["list_skill"] == 0 {
		t.Errorf("no agent listed the installed skill directory (actions %v)", actions)
	}
	for _, name := range written {
		if opened[name] == 0 {
			t.Errorf("the best package's %s was never opened by the agent (reads %v)", name, opened)
		}
	}
}

// startSimLLMProcess runs `skillfleet sim-llm` on a free loopback port
// and returns its base URL; the process is killed at cleanup.
func startSimLLMProcess(t *testing.T) string {
	t.Helper()
	cmd := exec.Command(binary, "sim-llm", "--addr", "127.0.0.1:0")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("sim-llm printed no address: %v", err)
	}
	_, url, ok := strings.Cut(strings.TrimSpace(line), "listening on ")
	if !ok {
		t.Fatalf("sim-llm printed %q, want its address", line)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return url
}

type simLogged struct {
	Action    string   `json:"action"`
	ToolCalls []string `json:"tool_calls"`
}

// simRequestLog reads sim-llm's request log (GET /v1/requests).
func simRequestLog(t *testing.T, base string) []simLogged {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, strings.TrimSuffix(base, "/")+"/requests", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var log []simLogged
	if err := json.NewDecoder(resp.Body).Decode(&log); err != nil {
		t.Fatalf("GET %s: %v", path.Join(base, "requests"), err)
	}
	return log
}

// TestCodexTrainsDescription trains configs/packages/codex-describe.yaml
// with the real Codex CLI: the seed package holds the rules but its
// description does not ask to be read, so the agent never opens it; with
// optimizer.train_description the run must raise the test score by at
// least minAgentGain, and the best package's description must be a
// trained one that asks to be read before starting. About 100 CLI calls
// (337 s at load 24-56); opt-in like TestCodexTrainsSkillPackage.
func TestCodexTrainsDescription(t *testing.T) {
	requireAgents(t)
	if os.Getenv("SKILLFLEET_AGENT_E2E") != "1" {
		t.Skip("a description training with the real Codex CLI (about 100 CLI calls): set SKILLFLEET_AGENT_E2E=1")
	}
	t.Parallel()
	out := filepath.Join(t.TempDir(), "run")
	r, err := runAgentCLI(t, "train", "--config", "configs/packages/codex-describe.yaml", "--out", out, "--assert-improves")
	if err != nil {
		t.Fatalf("train --assert-improves: %v\n%s", err, tailLines(r.out, 30))
	}
	var s trainSummary
	if err := json.Unmarshal(readFile(t, filepath.Join(out, "summary.json")), &s); err != nil {
		t.Fatal(err)
	}
	base, best := s.TestHard["baseline"], s.TestHard["best"]
	t.Logf("test score %.3f -> %.3f; %d CLI calls, wall %s, CPU %s", base, best, agentCalls(t, out), r.wall.Round(time.Second), r.cpu.Round(time.Second))
	if best-base < minAgentGain-1e-9 {
		t.Errorf("test score %.3f -> %.3f; want a rise of at least %.1f", base, best, minAgentGain)
	}
	entry := string(readFile(t, filepath.Join(out, "best_skill", "SKILL.md")))
	front, _, _ := strings.Cut(strings.TrimPrefix(entry, "---\n"), "\n---")
	if !strings.Contains(front, "description: Archived records.") || !strings.Contains(front, "before you start") {
		t.Errorf("best_skill/SKILL.md front matter %q: want the seed's description, trained to ask to be read", front)
	}
}

// TestClaudeTrainsSkillPackage trains the same seed package as
// TestCodexTrainsSkillPackage with the real Claude Code as the target
// (configs/harness/claude-sim.yaml, the seed codex_seed installed as
// .claude/skills/archived-records, the directory named as its front
// matter names the skill) against a sim-llm process of its own. Claude
// Code loads the skill with its Skill tool, lists the directory and opens
// the reference files with shell reads (sim-llm's request log); the
// replies the optimizer learns from lead with the backend's note of the
// package files opened, read from Claude Code's stream-json events (the
// run's results journal holds them, reference files named); the test
// score must rise by at least minAgentGain.
//
// About 80 real CLI calls (90 s wall at load 8-19); opt-in like the other
// real-CLI trainings (SKILLFLEET_AGENT_E2E=1).
func TestClaudeTrainsSkillPackage(t *testing.T) {
	requireAgents(t)
	if os.Getenv("SKILLFLEET_AGENT_E2E") != "1" {
		t.Skip("a package training with the real Claude Code (about 80 CLI calls): set SKILLFLEET_AGENT_E2E=1")
	}
	t.Parallel()
	url := startSimLLMProcess(t)
	out := filepath.Join(t.TempDir(), "run")
	trainPackageWithAgent(t, "configs/packages/claude-sim.yaml", url, out)

	actions, opened := referenceReads(t, url, ".claude/skills/archived-records")
	if actions["read_skill"] == 0 || actions["list_skill"] == 0 || len(opened) == 0 {
		t.Fatalf("Claude Code did not load, list and open the installed package (actions %v, reference reads %v)", actions, opened)
	}

	// The replies the run recorded lead with the note, naming references.
	note := regexp.MustCompile(`\[skill files the agent opened: SKILL\.md(, [A-Za-z0-9_./-]+)*\]`)
	notes := note.FindAll(readFile(t, filepath.Join(out, "results.journal")), -1)
	withRef := 0
	for _, n := range notes {
		if strings.Contains(string(n), "references/") {
			withRef++
		}
	}
	t.Logf("%d replies carry the note, %d of them name a reference file", len(notes), withRef)
	if withRef == 0 {
		t.Errorf("no recorded reply leads with a note naming a reference file (%d notes)", len(notes))
	}
}

// referenceReads reads sim-llm's request log: how many requests of each
// action, and how often each reference file of the skill installed at
// skillDir (relative to a call's work directory) was opened with cat.
func referenceReads(t *testing.T, url, skillDir string) (actions, opened map[string]int) {
	t.Helper()
	log := simRequestLog(t, url)
	catRef := regexp.MustCompile(`cat \S*/` + regexp.QuoteMeta(skillDir) + `/(references/[A-Za-z0-9_.-]+\.md)`)
	actions, opened = map[string]int{}, map[string]int{}
	for _, e := range log {
		actions[e.Action]++
		for _, c := range e.ToolCalls {
			if m := catRef.FindStringSubmatch(c); m != nil {
				opened[m[1]]++
			}
		}
	}
	t.Logf("sim-llm request log: %d requests, actions %v; reference reads %v", len(log), actions, opened)
	return actions, opened
}

// trainPackageWithAgent trains config (an agent CLI target) against the
// sim-llm at url into out, with --assert-improves, and fails unless the
// test score rose by minAgentGain.
func trainPackageWithAgent(t *testing.T, config, url, out string) {
	t.Helper()
	r, err := runAgentCLI(t, "train", "--config", config, "--out", out, "--assert-improves",
		"--set", "runtime.sim_llm=false", "--set", "model.optimizer_base_url="+url, "--set", "model.target_base_url="+url)
	if err != nil {
		t.Fatalf("train --assert-improves: %v\n%s", err, tailLines(r.out, 30))
	}
	var s trainSummary
	if err := json.Unmarshal(readFile(t, filepath.Join(out, "summary.json")), &s); err != nil {
		t.Fatal(err)
	}
	base, best := s.TestHard["baseline"], s.TestHard["best"]
	t.Logf("test score %.3f -> %.3f; %d CLI calls, wall %s, CPU %s", base, best, agentCalls(t, out), r.wall.Round(time.Second), r.cpu.Round(time.Second))
	if best-base < minAgentGain-1e-9 {
		t.Errorf("test score %.3f -> %.3f; want a rise of at least %.1f", base, best, minAgentGain)
	}
}
