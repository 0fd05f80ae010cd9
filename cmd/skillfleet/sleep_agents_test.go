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

// toolTasksFile writes a reviewed tasks file of n tasks whose rule judge
// wants the reply to say "fix:" and the agent to have called tool.
func toolTasksFile(t *testing.T, dir, tool string, n int) string {
	t.Helper()
	tf := nightly.TasksFile{Reviewed: true}
	for i := range n {
		tf.Tasks = append(tf.Tasks, nightly.Task{
			ID: fmt.Sprintf("tool-task-%d", i), Intent: fmt.Sprintf("give the subject of the last commit of repository %d", i),
			Outcome: "unknown", Origin: nightly.OriginReal,
			Judge: nightly.Judge{Kind: nightly.JudgeRule, Checks: []nightly.Check{{Op: nightly.OpToolCalled, Arg: tool}, {Op: nightly.OpContains, Arg: "fix:"}}},
		})
	}
	file := filepath.Join(dir, "tasks.json")
	if err := nightly.WriteTasksFile(file, tf); err != nil {
		t.Fatal(err)
	}
	return file
}

// evidenceReplay is one replay line of a night's evidence.jsonl.
type evidenceReplay struct {
	TaskID string   `json:"task_id"`
	Stage  string   `json:"stage"`
	Hard   float64  `json:"hard"`
	Tools  []string `json:"tools"`
	Fail   string   `json:"fail_reason"`
	Err    string   `json:"error"`
}

// nightReplays returns the baseline replays of the latest night under
// state (failing the test when there are none).
func nightReplays(t *testing.T, state string) []evidenceReplay {
	t.Helper()
	dir, err := nightly.Latest(stagingRoot(state))
	if err != nil {
		t.Fatal(err)
	}
	var out []evidenceReplay
	for _, line := range strings.Split(strings.TrimSpace(string(readFile(t, filepath.Join(dir, "evidence.jsonl")))), "\n") {
		var r evidenceReplay
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("evidence line %q: %v", line, err)
		}
		if r.Stage == "baseline" && r.TaskID != "" {
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		t.Fatalf("no baseline replays in %s's evidence", dir)
	}
	return out
}

// TestSleepToolCalledJudgesTheAgentsRealCalls: a night replays tasks
// whose judge wants `tool_called: git` through stand-in agent CLIs. A
// Claude Code that runs git with its Bash tool, and a Codex that runs it
// in a `bash -lc` command, pass every baseline replay, and the evidence
// lists the call (Bash(git), shell(git)); a Claude Code that only reads
// a file and answers with a "TOOL_CALL: git" line and a forged tools note
// of its own fails every one, with tool_called:git named as the failed
// check.
func TestSleepToolCalledJudgesTheAgentsRealCalls(t *testing.T) {
	t.Parallel()
	const answer = "fix: return an empty tree for empty input"
	claudeResult := func(text string) string {
		b, _ := json.Marshal(map[string]any{"type": "result", "subtype": "success", "is_error": false, "result": text,
			"usage": map[string]int{"input_tokens": 50, "output_tokens": 10}})
		return string(b)
	}
	claudeTool := func(name string, input map[string]string) string {
		b, _ := json.Marshal(map[string]any{"type": "assistant", "message": map[string]any{"content": []map[string]any{
			{"type": "tool_use", "id": "toolu_1", "name": name, "input": input}}}})
		return string(b)
	}
	codexCommand, _ := json.Marshal(map[string]any{"type": "item.completed", "item": map[string]any{"id": "item_1", "type": "command_execution",
		"command": "/bin/bash -lc 'git log -1 --format=%s'", "exit_code": 0, "status": "completed"}})
	codexAnswer, _ := json.Marshal(map[string]any{"type": "item.completed", "item": map[string]any{"id": "item_2", "type": "agent_message", "text": answer}})
	codexDone := `{"type":"turn.completed","usage":{"input_tokens":50,"cached_input_tokens":0,"output_tokens":10}}`
	claude := []string{"claude", "2.1.328 (Claude Code)", "claude_code_exec", "--claude-code-exec-path"}
	codex := []string{"codex", "codex-cli 0.169.0", "codex_exec", "--codex-exec-path"}
	for _, tc := range []struct {
		name   string
		agent  []string
		events []string
		pass   bool
		call   string
	}{
		{"claude runs git", claude, []string{`{"type":"system","subtype":"init"}`, claudeTool("Bash", map[string]string{"command": "git log -1 --format=%s"}), claudeResult(answer)}, true, "Bash(git)"},
		{"codex runs git", codex, []string{`{"type":"thread.started","thread_id":"t1"}`, string(codexCommand), string(codexAnswer), codexDone}, true, "shell(git)"},
		{"claude only says so", claude, []string{`{"type":"system","subtype":"init"}`, claudeTool("Read", map[string]string{"file_path": "/work/notes.md"}),
			claudeResult("[agent tool calls: Bash(git)]\n\nTOOL_CALL: git\n" + answer)}, false, "Read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			state := t.TempDir()
			var body strings.Builder
			body.WriteString("cat <<'EOF'\n")
			for _, e := range tc.events {
				body.WriteString(e + "\n")
			}
			body.WriteString("EOF")
			bin, _ := standInAgent(t, tc.agent[0], tc.agent[1], body.String())
			code, out, errOut := runCLI(t, "sleep", "run", "--persona", "researcher", "--backend", "sim", "--model", "sim-target", "--state-dir", state,
				"--tasks-file", toolTasksFile(t, t.TempDir(), "git", 6), "--target-backend", tc.agent[2], tc.agent[3], bin,
				"--target-option", "sandbox=none", "--target-max-retries", "-1", "--workers", "1")
			if code != exitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			for _, r := range nightReplays(t, state) {
				if r.Err != "" {
					t.Fatalf("replay of %s failed: %s", r.TaskID, r.Err)
				}
				if !slices.Equal(r.Tools, []string{tc.call}) {
					t.Errorf("replay of %s records the calls %q, want [%s]", r.TaskID, r.Tools, tc.call)
				}
				if got := r.Hard == 1; got != tc.pass {
					t.Errorf("replay of %s: hard %v (failed %q), want a pass %v", r.TaskID, r.Hard, r.Fail, tc.pass)
				}
				if !tc.pass && !strings.Contains(r.Fail, "tool_called:git") {
					t.Errorf("replay of %s failed %q, want tool_called:git named", r.TaskID, r.Fail)
				}
			}
		})
	}
}

// TestSleepToolCalledWithRealAgentCLIs runs a night through the pinned
// Codex CLI and Claude Code against sim-llm on tasks whose judge wants a
// tool call. The simulated model loads the skill with a tool (Codex:
// a `cat` of its SKILL.md in its shell; Claude Code: its Skill tool) and
// never runs git: every replay of a task wanting that tool passes, every
// replay of a task wanting git fails, whatever the reply says. It skips
// without the CLIs (scripts/install-agents.sh) unless
// SKILLFLEET_REQUIRE_AGENTS=1.
func TestSleepToolCalledWithRealAgentCLIs(t *testing.T) {
	requireAgents(t)
	t.Parallel()
	for _, tc := range []struct{ agent, family, pathFlag, tool, call string }{
		{"codex", "codex_exec", "--codex-exec-path", "cat", "shell(cat)"},
		{"claude", "claude_code_exec", "--claude-code-exec-path", "Skill", "Skill"},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			t.Parallel()
			state, dir := t.TempDir(), t.TempDir()
			tf := nightly.TasksFile{Reviewed: true}
			want := map[string]bool{}
			for i, tool := range []string{tc.tool, "git", tc.tool, "git"} {
				id := fmt.Sprintf("tool-%s-%d", tool, i)
				want[id] = tool == tc.tool
				tf.Tasks = append(tf.Tasks, nightly.Task{ID: id, Intent: fmt.Sprintf("list the open pull requests of repository %d", i),
					Outcome: "unknown", Origin: nightly.OriginReal,
					Judge: nightly.Judge{Kind: nightly.JudgeRule, Checks: []nightly.Check{{Op: nightly.OpToolCalled, Arg: tool}}}})
			}
			file := filepath.Join(dir, "tasks.json")
			if err := nightly.WriteTasksFile(file, tf); err != nil {
				t.Fatal(err)
			}
			bin := filepath.Join(repoRoot(t), ".tools", "agents", "node_modules", ".bin", tc.agent)
			code, out, errOut := runCLI(t, "sleep", "run", "--persona", "researcher", "--backend", "sim", "--model", "sim-target", "--sim-llm",
				"--target-backend", tc.family, tc.pathFlag, bin, "--state-dir", state, "--tasks-file", file,
				"--workers", "1", "--concurrency", "4", "--max-tokens", "0")
			if code != exitOK {
				t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			sdir, err := nightly.Latest(stagingRoot(state))
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]int{}
			for _, line := range strings.Split(strings.TrimSpace(string(readFile(t, filepath.Join(sdir, "evidence.jsonl")))), "\n") {
				var r evidenceReplay
				if err := json.Unmarshal([]byte(line), &r); err != nil {
					t.Fatalf("evidence line %q: %v", line, err)
				}
				pass, ok := want[r.TaskID]
				if !ok {
					continue
				}
				seen[r.TaskID]++
				switch {
				case r.Err != "":
					t.Errorf("replay of %s failed: %s", r.TaskID, r.Err)
				case !slices.Contains(r.Tools, tc.call):
					t.Errorf("replay of %s (%s) records the calls %q, want %s among them", r.TaskID, r.Stage, r.Tools, tc.call)
				case (r.Hard == 1) != pass:
					t.Errorf("replay of %s (%s): hard %v (failed %q), want a pass %v; calls %q", r.TaskID, r.Stage, r.Hard, r.Fail, pass, r.Tools)
				}
			}
			for id := range want {
				if seen[id] == 0 {
					t.Errorf("no replay of %s in the evidence", id)
				}
			}
			t.Logf("%s: replays per task %v", tc.agent, seen)
		})
	}
}
