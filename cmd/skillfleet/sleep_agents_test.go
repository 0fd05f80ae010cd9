package main

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/nightly"
)

// standInAgent writes an executable stand-in for an agent CLI that
// answers --version as the pinned one does and then runs body, in a
// directory others can enter (a sandboxed stand-in needs it).
func standInAgent(t *testing.T, name, version, body string) (bin, dir string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "skillfleet-sleep-standin-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	bin = filepath.Join(dir, name)
	script := fmt.Sprintf("#!/bin/bash\n[ \"$1\" = \"--version\" ] && { echo '%s'; exit 0; }\n%s\n", version, body)
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, dir
}

// TestSleepFailingReplayAgentStopsTheNight: a night whose replay target
// is an agent CLI that is missing, exits 1, never answers or breaks its
// output stream stops with one line naming the agent's failure (exit 1):
// no staging directory, no night in the state, no evidence or score
// written anywhere under the state dir, and no stand-in process left.
func TestSleepFailingReplayAgentStopsTheNight(t *testing.T) {
	t.Parallel()
	codex := []string{"codex", "codex-cli 0.169.0", "codex_exec", "--codex-exec-path"}
	claude := []string{"claude", "2.1.328 (Claude Code)", "claude_code_exec", "--claude-code-exec-path"}
	for _, tc := range []struct {
		name, body string
		agent      []string
		missing    bool
		want       string
	}{
		{name: "missing binary", agent: codex, missing: true, want: "no-such-codex"},
		{name: "exit 1", agent: codex, body: "echo 'not logged in: run codex login' >&2; exit 1", want: "exited with exit status 1: not logged in"},
		{name: "never answers", agent: codex, body: "sleep 300", want: "timed out after 3s"},
		// Claude Code's stream cut inside an event, before its result.
		// A Codex stream that stops after one event, the CLI exiting 0.
		{name: "codex broken stream", agent: codex, body: `echo '{"type":"thread.started","thread_id":"t1"}'`, want: "codex-json output: output ended without turn.completed (last event: thread.started)"},
		{name: "broken stream", agent: claude, body: `printf '%s\n' '{"type":"system"}' '{"type":"assistant","message":{"cont'`, want: "unreadable agent output: claude-json output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			state := t.TempDir()
			bin, dir := standInAgent(t, tc.agent[0], tc.agent[1], tc.body)
			if tc.missing {
				bin = filepath.Join(dir, "no-such-codex")
			}
			code, out, errOut := runCLI(t, "sleep", "run", "--persona", "researcher", "--backend", "sim", "--model", "sim-target", "--state-dir", state,
				"--target-backend", tc.agent[2], tc.agent[3], bin, "--target-option", "sandbox=none",
				"--target-timeout", "3s", "--target-max-retries", "-1", "--workers", "1")
			if code != exitError {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitError, out, errOut)
			}
			var lines []string
			for _, l := range strings.Split(strings.TrimSpace(errOut), "\n") {
				if strings.HasPrefix(l, "skillfleet:") {
					lines = append(lines, l)
				}
			}
			if len(lines) != 1 || !strings.Contains(lines[0], "the replay agent failed") || !strings.Contains(lines[0], tc.want) ||
				!strings.Contains(lines[0], "nothing was staged") {
				t.Fatalf("stderr %q: want one line saying the replay agent failed, naming %q", errOut, tc.want)
			}
			t.Logf("%s", lines[0])
			if _, err := os.Stat(stagingRoot(state)); !os.IsNotExist(err) {
				t.Errorf("a staging directory exists (%v): the night staged something", err)
			}
			st, err := nightly.LoadState(filepath.Join(state, "state.json"))
			if err != nil || st.Night != 0 || len(st.History) != 0 || len(st.LastHarvest) != 0 {
				t.Errorf("state %+v (%v): a failed night must leave it as it was", st, err)
			}
			_ = filepath.WalkDir(state, func(p string, d fs.DirEntry, err error) error {
				if err == nil && !d.IsDir() && (d.Name() == "evidence.jsonl" || d.Name() == "report.json") {
					t.Errorf("%s written: a failed night records no score", p)
				}
				return nil
			})
			if pids := procsMentioning(t, dir); len(pids) > 0 {
				t.Errorf("processes of the stand-in still run: %v", pids)
			}
		})
	}
}

// TestSleepNightWithRealAgentCLIs runs a researcher night whose replay
// target is the pinned real Codex CLI, and one with the pinned Claude
// Code, against sim-llm (the optimizer is the in-process sim), each in
// the agent sandbox: the night must improve the skill on fresh replays
// (--assert-improves), every final replay must note that the agent
// opened the skill's SKILL.md, and adopt then undo must install the
// proposal and put the old skill back. It skips without the CLIs
// (scripts/install-agents.sh) unless SKILLFLEET_REQUIRE_AGENTS=1.
func TestSleepNightWithRealAgentCLIs(t *testing.T) {
	requireAgents(t)
	t.Parallel()
	for _, tc := range []struct{ agent, family, pathFlag string }{
		{"codex", "codex_exec", "--codex-exec-path"},
		{"claude", "claude_code_exec", "--claude-code-exec-path"},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			t.Parallel()
			state := t.TempDir()
			bin := filepath.Join(repoRoot(t), ".tools", "agents", "node_modules", ".bin", tc.agent)
			args := []string{"sleep", "run", "--persona", "researcher", "--backend", "sim", "--model", "sim-target", "--sim-llm",
				"--target-backend", tc.family, tc.pathFlag, bin, "--state-dir", state, "--workers", "1", "--concurrency", "4", "--assert-improves",
				// An agent call carries the CLI's own prompts and tool
				// loop, some 10k tokens: the default night budget (400k)
				// stops before the final check.
				"--max-tokens", "0"}
			code, out, errOut := runCLI(t, args...)
			if code != exitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			dir, err := nightly.Latest(stagingRoot(state))
			if err != nil {
				t.Fatal(err)
			}
			var rep struct {
				Outcome struct {
					Baseline struct{ Score float64 } `json:"baseline"`
					Final    struct{ Score float64 } `json:"final_fresh"`
				} `json:"outcome"`
			}
			if err := json.Unmarshal(readFile(t, filepath.Join(dir, "report.json")), &rep); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: val score %.3f → %.3f on fresh replays", tc.agent, rep.Outcome.Baseline.Score, rep.Outcome.Final.Score)
			finals := 0
			for _, line := range strings.Split(strings.TrimSpace(string(readFile(t, filepath.Join(dir, "evidence.jsonl")))), "\n") {
				var r struct {
					Stage  string   `json:"stage"`
					Opened []string `json:"opened"`
					Err    string   `json:"error"`
				}
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					t.Fatalf("evidence line %q: %v", line, err)
				}
				if r.Stage != "final_fresh" {
					continue
				}
				finals++
				if !slices.Contains(r.Opened, "SKILL.md") {
					t.Errorf("a final replay notes no opened SKILL.md: %s", line)
				}
			}
			if finals == 0 {
				t.Fatal("no final replays in the evidence")
			}
			skill := filepath.Join(state, "persona-researcher", "skills", nightly.ManagedSkillName, "SKILL.md")
			before, errBefore := os.ReadFile(skill)
			if code, out, errOut := runCLI(t, "sleep", "adopt", "--persona", "researcher", "--state-dir", state); code != exitOK {
				t.Fatalf("adopt exit %d\n%s\n%s", code, out, errOut)
			}
			if got, want := readFile(t, skill), readFile(t, filepath.Join(dir, "proposed_SKILL.md")); string(got) != string(want) {
				t.Fatalf("adopted skill:\n%s\nwant the proposal:\n%s", got, want)
			}
			if code, out, errOut := runCLI(t, "sleep", "adopt", "--undo", "--persona", "researcher", "--state-dir", state); code != exitOK {
				t.Fatalf("undo exit %d\n%s\n%s", code, out, errOut)
			}
			if got, err := os.ReadFile(skill); string(got) != string(before) || os.IsNotExist(err) != os.IsNotExist(errBefore) {
				t.Fatalf("after undo: %q (%v)\nwant the skill as before: %q (%v)", got, err, before, errBefore)
			}
		})
	}
}

// TestSleepNightWithTheUsersLogin: a night whose replay target is a
// stand-in Codex that fails unless its CODEX_HOME holds the user's
// login (and prints the login's token in its reply) runs with
// --target-user-login, sandboxed and not: the night completes on the
// login copied from the process's HOME, and no value of the login
// appears anywhere under the state dir (the kept run dir, the staging
// directory's evidence and report, the state file) or in the temporary
// directory, nor in the output. Without the flag the same night stops
// with the agent's not-logged-in failure.
func TestSleepNightWithTheUsersLogin(t *testing.T) {
	t.Parallel()
	const access, refresh = "eyJplanted-login-access-3e1f", "rt_planted-login-refresh-90c2"
	body := `case "$CODEX_HOME" in "$HOME"/*) ;; *) echo "CODEX_HOME outside HOME" >&2; exit 1 ;; esac
grep -q '"access_token"' "$CODEX_HOME/auth.json" 2>/dev/null || { echo "not logged in: run codex login" >&2; exit 1; }
tok=$(grep -o 'eyJ[a-z0-9-]*' "$CODEX_HOME/auth.json")
echo '{"type":"thread.started"}'
echo '{"type":"item.completed","item":{"type":"agent_message","text":"as '"$tok"': I could not tell."}}'
echo '{"type":"turn.completed","usage":{"input_tokens":50,"output_tokens":5}}'`
	for _, sandboxed := range []bool{true, false} {
		t.Run(map[bool]string{true: "sandboxed", false: "unsandboxed"}[sandboxed], func(t *testing.T) {
			t.Parallel()
			home, state := t.TempDir(), t.TempDir()
			// The agents' TMPDIR, which a root worker's sandbox (uid
			// 65534) must enter.
			_, tmp := standInAgent(t, "unused", "", "")
			if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o700); err != nil {
				t.Fatal(err)
			}
			login := `{"auth_mode":"chatgpt","OPENAI_API_KEY":null,"tokens":{"access_token":"` + access + `","refresh_token":"` + refresh + `"}}`
			if err := os.WriteFile(filepath.Join(home, ".codex", "auth.json"), []byte(login), 0o600); err != nil {
				t.Fatal(err)
			}
			bin, _ := standInAgent(t, "codex", "codex-cli 0.169.0", body)
			night := func(extra ...string) (string, error) {
				args := append([]string{"sleep", "run", "--persona", "researcher", "--backend", "sim", "--model", "sim-target", "--state-dir", state,
					"--target-backend", "codex_exec", "--codex-exec-path", bin, "--target-timeout", "60s", "--target-max-retries", "-1",
					"--workers", "1", "--keep-run"}, extra...)
				if !sandboxed {
					args = append(args, "--target-option", "sandbox=none")
				}
				cmd := exec.Command(binary, args...)
				cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + tmp}
				out, err := cmd.CombinedOutput()
				return string(out), err
			}
			out, err := night()
			if err == nil || !strings.Contains(out, "the replay agent failed") || !strings.Contains(out, "not logged in: run codex login") {
				t.Fatalf("without --target-user-login: %v, want the night stopped on the agent's login failure:\n%s", err, out)
			}
			out, err = night("--target-user-login")
			if err != nil || !strings.Contains(out, "staged:") {
				t.Fatalf("with --target-user-login: %v\n%s", err, out)
			}
			if strings.Contains(out, access) || strings.Contains(out, refresh) {
				t.Errorf("the night's output holds the login:\n%s", out)
			}
			replies := 0
			for _, root := range []string{state, tmp} {
				_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
					if err != nil || d.IsDir() {
						return err
					}
					b, _ := os.ReadFile(p)
					if strings.Contains(string(b), access) || strings.Contains(string(b), refresh) {
						t.Errorf("%s holds a value of the login", p)
					}
					if d.Name() == "auth.json" {
						t.Errorf("%s: a copy of the login left behind", p)
					}
					if d.Name() == "evidence.jsonl" {
						replies += strings.Count(string(b), "I could not tell.")
					}
					return nil
				})
			}
			if replies == 0 {
				t.Fatal("the evidence holds none of the stand-in's replies")
			}
			if runs, _ := os.ReadDir(filepath.Join(state, "runs")); len(runs) == 0 {
				t.Error("no kept run dir to check")
			}
			t.Logf("%d replies through the login in the evidence", replies)
		})
	}
}
