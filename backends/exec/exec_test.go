package exec_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/skillfleet/skillfleet/backends/exec"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// script writes an executable bash script (a stand-in agent CLI) into a
// directory the sandbox can bind: a root worker's sandbox runs as uid
// 65534, which cannot enter t.TempDir().
func script(t *testing.T, body string) string {
	t.Helper()
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("no /bin/bash")
	}
	p := filepath.Join(hostDir(t), "agent.sh")
	if err := os.WriteFile(p, []byte("#!/bin/bash\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func env(vars map[string]string) func(string) string {
	return func(k string) string {
		if k == "PATH" {
			return os.Getenv("PATH")
		}
		return vars[k]
	}
}

func req(system, user string) *llm.Request {
	return &llm.Request{Messages: []llm.Message{{Role: llm.RoleSystem, Content: system}, {Role: llm.RoleUser, Content: user}}}
}

const echoAgent = `
echo "ARGS:$#"
echo "TASK-ARG:$1"
echo "---SKILL"
cat .agents/skills/skillfleet-target/SKILL.md
echo
echo "---TASKFILE"
cat task.md
echo
echo "HOME:$HOME"
echo "PWD:$PWD"
echo "ALLOWED:${ALLOWED_VAR:-unset}"
echo "HIDDEN:${HIDDEN_VAR:-unset}"
echo "FILES:$(ls -A | tr '\n' ' ')"
`

func TestSkillTaskAndIsolation(t *testing.T) {
	t.Parallel()
	agent := script(t, echoAgent)
	root := t.TempDir()
	c := exec.New(exec.Config{Command: []string{agent, "{task}"}, WorkRoot: root,
		Env: []string{"ALLOWED_VAR"}, Getenv: env(map[string]string{"ALLOWED_VAR": "yes", "HIDDEN_VAR": "leak"})})
	// Task text full of shell syntax: it must arrive as one argument, verbatim.
	task := "Solve this: $(touch pwned) `touch pwned2`; rm -rf / && echo \"quoted\" 'single' {model}"
	system := "You are an agent.\n<skill>\n# Skill\nAlways answer 42.\n</skill>\nUse the tools."
	resp, err := c.Chat(t.Context(), req(system, task))
	if err != nil {
		t.Fatalf("Chat() = %v", err)
	}
	out := resp.Content
	for _, want := range []string{
		"ARGS:1\n",
		"TASK-ARG:You are an agent.\n\nUse the tools.\n\n" + task + "\n",
		"---SKILL\n---\nname: skillfleet-target\ndescription: " + exec.DefaultSkillDescription + "\n---\n\n# Skill\nAlways answer 42.\n",
		"---TASKFILE\nYou are an agent.\n\nUse the tools.\n\n" + task + "\n",
		"ALLOWED:yes\n", "HIDDEN:unset",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("agent output lacks %q:\n%s", want, out)
		}
	}
	// By default the agent runs in the sandbox: its work directory is the
	// sandbox's /work, its HOME too, and nothing is left under the work
	// root when the call ends.
	if home, pwd := lineValue(out, "HOME:"), lineValue(out, "PWD:"); home != "/work" || pwd != "/work" {
		t.Errorf("HOME %q, PWD %q: want both the sandbox's /work", home, pwd)
	}
	if left, _ := os.ReadDir(root); len(left) > 0 {
		t.Errorf("the work root holds %d entries after the call, want none", len(left))
	}
	for _, f := range []string{"pwned", "pwned2"} {
		if files := lineValue(out, "FILES:"); !strings.Contains(files, "task.md") || strings.Contains(files, f) {
			t.Errorf("work dir files %q: want task.md, no %s (task text interpreted by a shell)", files, f)
		}
	}
	// No usage from a text agent: estimated and counted.
	if resp.Usage.InputTokens == 0 || resp.Usage.OutputTokens != llm.EstimateTokens(out) || c.EstimatedCalls() != 1 {
		t.Errorf("usage %+v, estimated calls %d; want an estimate, flagged", resp.Usage, c.EstimatedCalls())
	}
}

func lineValue(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if v, ok := strings.CutPrefix(l, prefix); ok {
			return v
		}
	}
	return ""
}

// TestHangingAgentIsKilledAtTimeout: with the sandbox opted out (a plain
// process group on the host; TestSandboxedAgentTimeoutKillsAll is the
// sandboxed case), a timeout kills the agent and its children.
func TestHangingAgentIsKilledAtTimeout(t *testing.T) {
	t.Parallel()
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	agent := script(t, `sleep 1000 &
echo $! > "$1"
wait
`)
	c := exec.New(exec.Config{Command: []string{agent, pidFile}, Getenv: env(nil), Sandbox: unsandboxed(t)})
	// The timeout must fall after the agent started its child: on a
	// loaded machine the shell may not get that far in 300ms, and then
	// there is nothing to check, so the call is tried with longer ones.
	var b []byte
	for _, timeout := range []time.Duration{300 * time.Millisecond, 2 * time.Second, 10 * time.Second} {
		start := time.Now()
		_, err := c.Chat(t.Context(), &llm.Request{Timeout: timeout, Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
		if llm.KindOf(err) != llm.KindTimeout || !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Chat() = %v, want timeout", err)
		}
		if d := time.Since(start); d > timeout+5*time.Second {
			t.Errorf("Chat() returned after %v, want soon after the %v timeout", d, timeout)
		}
		if b, _ = os.ReadFile(pidFile); len(strings.TrimSpace(string(b))) > 0 {
			break
		}
		t.Logf("the agent had not started its child when the %v timeout killed it", timeout)
	}
	if len(strings.TrimSpace(string(b))) == 0 {
		t.Fatal("the agent did not record its child, even with a 10s timeout")
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(b)))
	// The grandchild was in the agent's process group: it must be dead
	// (gone, or a zombie awaiting its new parent's reaping). Bounded poll:
	// another process's state.
	deadline := time.Now().Add(5 * time.Second)
	for alive(pid) {
		if time.Now().After(deadline) {
			t.Fatalf("child %d of the timed-out agent still runs", pid)
		}
		<-time.After(10 * time.Millisecond)
	}
}

// alive reports whether pid runs (not gone, not a zombie).
func alive(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || s[i+2] != 'Z'
}

func TestNonZeroExitIsATypedError(t *testing.T) {
	t.Parallel()
	agent := script(t, `echo "partial answer"
echo "lots of noise" >&2
echo "boom: token=$SECRET_TOKEN" >&2
exit 3
`)
	c := exec.New(exec.Config{Command: []string{agent}, Env: []string{"SECRET_TOKEN"}, Getenv: env(map[string]string{"SECRET_TOKEN": "tok-very-secret-123"})})
	resp, err := c.Chat(t.Context(), req("", "x"))
	if resp != nil {
		t.Errorf("Chat() reply = %+v, want none", resp)
	}
	var le *llm.Error
	if !errors.As(err, &le) || le.Kind != llm.KindServer {
		t.Fatalf("Chat() = %v, want a server error", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "exited with exit status 3: ") || !strings.Contains(msg, "boom: token=") {
		t.Errorf("error %q lacks the exit status or the stderr tail", msg)
	}
	if strings.Contains(msg, "tok-very-secret-123") {
		t.Errorf("error %q leaks an allowed variable's value", msg)
	}
}

func TestMissingProgramIsInvalidRequest(t *testing.T) {
	t.Parallel()
	c := exec.New(exec.Config{Command: []string{filepath.Join(t.TempDir(), "no-such-agent")}, Getenv: env(nil)})
	if _, err := c.Chat(t.Context(), req("", "x")); llm.KindOf(err) != llm.KindInvalidRequest {
		t.Errorf("Chat() = %v, want invalid_request", err)
	}
}

func TestClaudeJSONOutput(t *testing.T) {
	t.Parallel()
	// Mimics `claude -p --output-format stream-json --verbose`; it checks
	// its skill is where Claude Code loads skills, and its flags. It prints
	// the result event alone, which is also the whole of `--output-format
	// json`: both read the same.
	agent := script(t, `[ "$1" = "-p" ] && [ "$3" = "--output-format" ] && [ "$4" = "stream-json" ] && [ "$5" = "--verbose" ] || { echo "bad args: $*" >&2; exit 2; }
[ "$6" = "--model" ] && [ "$7" = "claude-sonnet-4-6" ] || { echo "bad model args: $*" >&2; exit 2; }
grep -q "Always answer 42" .claude/skills/skillfleet-target/SKILL.md || { echo "no skill" >&2; exit 2; }
cat <<'JSON'
{"type":"result","subtype":"success","is_error":false,"duration_ms":2100,"num_turns":2,"result":"The answer is 42.","session_id":"s1","total_cost_usd":0.0123,"usage":{"input_tokens":12,"cache_creation_input_tokens":300,"cache_read_input_tokens":2000,"output_tokens":40}}
JSON
`)
	cfg, err := exec.ConfigFromOptions("claude-sonnet-4-6", map[string]string{"agent": "claude", "bin": agent})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Getenv = env(nil)
	c := exec.New(cfg)
	resp, err := c.Chat(t.Context(), req("<skill>\nAlways answer 42.\n</skill>", "What is 6x7?"))
	if err != nil {
		t.Fatalf("Chat() = %v", err)
	}
	if resp.Content != "The answer is 42." {
		t.Errorf("content = %q", resp.Content)
	}
	want := llm.Usage{InputTokens: 12 + 300 + 2000, OutputTokens: 40, CacheReadTokens: 2000, CacheWriteTokens: 300}
	if diff := cmp.Diff(want, resp.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	if c.EstimatedCalls() != 0 {
		t.Errorf("EstimatedCalls = %d, want 0 (the CLI reported usage)", c.EstimatedCalls())
	}
}

func TestClaudeJSONError(t *testing.T) {
	t.Parallel()
	agent := script(t, `echo '{"type":"result","subtype":"error_max_turns","is_error":true,"result":"","usage":{"input_tokens":100,"output_tokens":7}}'`)
	c := exec.New(exec.Config{Command: []string{agent}, Output: exec.OutputClaudeJSON, Getenv: env(nil)})
	_, err := c.Chat(t.Context(), req("", "x"))
	if llm.KindOf(err) != llm.KindServer || !strings.Contains(err.Error(), "error_max_turns") {
		t.Fatalf("Chat() = %v, want a server error naming the subtype", err)
	}
	if diff := cmp.Diff(llm.Usage{InputTokens: 100, OutputTokens: 7}, llm.BilledUsage(err)); diff != "" {
		t.Errorf("billed usage (-want +got):\n%s", diff)
	}
}

func TestCodexJSONOutput(t *testing.T) {
	t.Parallel()
	agent := script(t, `[ "$1" = "exec" ] && [ "$3" = "--json" ] || { echo "bad args: $*" >&2; exit 2; }
[ "$4" != "-m" ] || { echo "model flag without a model: $*" >&2; exit 2; }
test -f .agents/skills/skillfleet-target/SKILL.md || { echo "no skill" >&2; exit 2; }
cat <<'JSONL'
{"type":"thread.started","thread_id":"t1"}
{"type":"turn.started"}
{"type":"item.completed","item":{"id":"item_0","type":"reasoning","text":"thinking"}}
{"type":"item.completed","item":{"id":"item_1","type":"agent_message","text":"first"}}
{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"final answer"}}
{"type":"turn.completed","usage":{"input_tokens":900,"cached_input_tokens":800,"output_tokens":50}}
JSONL
`)
	cfg, err := exec.ConfigFromOptions("", map[string]string{"agent": "codex", "bin": agent})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Getenv = env(nil)
	resp, err := exec.New(cfg).Chat(t.Context(), req("skill", "task"))
	if err != nil {
		t.Fatalf("Chat() = %v", err)
	}
	if resp.Content != "final answer" {
		t.Errorf("content = %q, want the last agent message", resp.Content)
	}
	if diff := cmp.Diff(llm.Usage{InputTokens: 900, OutputTokens: 50, CacheReadTokens: 800}, resp.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
}

func TestSkillTextOptionAndTaskFile(t *testing.T) {
	t.Parallel()
	agent := script(t, `echo "ARG:$1"; cat custom/SKILL.md; echo; cat "$1"; ls attachments`)
	keepRoot := t.TempDir()
	c := exec.New(exec.Config{Command: []string{agent, "{task_file}"}, SkillPath: "custom/SKILL.md", SkillName: "n",
		SkillText: "---\nname: mine\n---\nfixed skill", KeepWorkDir: true, WorkRoot: keepRoot, Getenv: env(nil)})
	r := &llm.Request{Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: "system text goes to the task"},
		{Role: llm.RoleUser, Parts: []llm.Part{{Type: "text", Text: "look"}, {Type: "image", ImageURL: "data:image/png;base64,iVBORw0KGgo="}}},
		{Role: llm.RoleAssistant, Content: "I looked"},
		{Role: llm.RoleUser, Content: "and?"},
	}}
	resp, err := c.Chat(t.Context(), r)
	if err != nil {
		t.Fatalf("Chat() = %v", err)
	}
	for _, want := range []string{
		"---\nname: mine\n---\nfixed skill\n",
		"system text goes to the task\n\n## user\n\nlook\n\n## assistant\n\nI looked\n\n## user\n\nand?\n\nAttached images:\n- attachments/image-1.png",
		"image-1.png",
	} {
		if !strings.Contains(resp.Content, want) {
			t.Errorf("output lacks %q:\n%s", want, resp.Content)
		}
	}
	if arg := lineValue(resp.Content, "ARG:"); arg != "/work/task.md" {
		t.Errorf("{task_file} = %q, want the sandbox's /work/task.md", arg)
	}
	if kept, _ := filepath.Glob(filepath.Join(keepRoot, "skillfleet-exec-*", "task.md")); len(kept) != 1 {
		t.Errorf("KeepWorkDir: %d task.md files kept under %s, want 1", len(kept), keepRoot)
	}
}

func TestConfigFromOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		opts map[string]string
		err  string
	}{
		{opts: map[string]string{}, err: "option agent"},
		{opts: map[string]string{"agent": "devin"}, err: "option agent"},
		{opts: map[string]string{"command": "not json"}, err: "option command"},
		{opts: map[string]string{"agent": "codex", "output": "xml"}, err: "option output"},
		{opts: map[string]string{"agent": "codex", "skill_path": "../escape/SKILL.md"}, err: "option skill_path"},
		{opts: map[string]string{"agent": "codex", "timeout": "soon"}, err: "option timeout"},
		{opts: map[string]string{"agent": "codex", "keep_workdir": "maybe"}, err: "option keep_workdir"},
		{opts: map[string]string{"agent": "codex", "mode": "talk"}, err: "option mode"},
		{opts: map[string]string{"agent": "claude", "network_access": "true"}, err: `option network_access: agent "claude" has no such setting`},
		{opts: map[string]string{"agent": "codex", "reasoning_effort": "ultra"}, err: "option reasoning_effort=\"ultra\""},
		{opts: map[string]string{"agent": "cursor", "cursor_sandbox": "off"}, err: "option cursor_sandbox"},
		{opts: map[string]string{"agent": "codex", "empty_retries": "9"}, err: "option empty_retries"},
		{opts: map[string]string{"command": `["my-agent","--task","{task_file}"]`, "env": "A, B", "timeout": "2m", "keep_workdir": "true"}},
	} {
		cfg, err := exec.ConfigFromOptions("m", tc.opts)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("ConfigFromOptions(%v) = %v", tc.opts, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("ConfigFromOptions(%v) = %v, want an error naming %q", tc.opts, err, tc.err)
		case tc.err == "":
			want := exec.Config{Command: []string{"my-agent", "--task", "{task_file}"}, Model: "m", Env: []string{"A", "B"}, Timeout: 2 * time.Minute, KeepWorkDir: true}
			if diff := cmp.Diff(want, cfg, cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Getenv" }, cmp.Ignore()), cmpopts.IgnoreUnexported(exec.SandboxConfig{})); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		}
	}
	cfg, err := exec.ConfigFromOptions("m", map[string]string{"agent": "codex", "mode": "chat", "trace_summary": "true", "empty_retries": "2",
		"reasoning_effort": "high", "codex_sandbox": "read-only", "network_access": "true", "web_search": "true"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Mode != exec.ModeChat || !cfg.TraceSummary || cfg.EmptyRetries != 2 || cfg.CodexSandbox != "read-only" ||
		strings.Join(cfg.Extra, " ") != `-c sandbox_workspace_write.network_access=true -c model_reasoning_effort="high" -c web_search="live"` {
		t.Fatalf("harness options read as %+v", cfg)
	}
}

// TestCancelledCall: the caller's cancel ends a sandboxed agent's call.
// The agent says it started by connecting to its model endpoint (the
// only host listener it can reach), then hangs.
func TestCancelledCall(t *testing.T) {
	t.Parallel()
	started := make(chan struct{}, 1)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		select {
		case started <- struct{}{}:
		default:
		}
	}))
	t.Cleanup(ts.Close)
	port := ts.Listener.Addr().(*net.TCPAddr).Port
	agent := script(t, `exec 3<>/dev/tcp/127.0.0.1/`+strconv.Itoa(port)+`
printf 'GET /started HTTP/1.0\r\n\r\n' >&3
sleep 1000`)
	c := exec.New(exec.Config{Command: []string{agent}, BaseURL: ts.URL + "/v1", Getenv: env(nil)})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		_, err := c.Chat(ctx, req("", "x"))
		done <- err
	}()
	select {
	case <-started:
	case err := <-done:
		t.Fatalf("Chat() = %v before the agent reached its endpoint", err)
	case <-time.After(time.Minute):
		t.Fatal("the agent never reached its endpoint")
	}
	cancel()
	if err := <-done; llm.KindOf(err) != llm.KindCancelled {
		t.Errorf("Chat() after cancel = %v, want cancelled", err)
	}
}
