package exec_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/backends/exec"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// TestCodexBrokenStreamIsTyped: `codex exec --json` output that ends
// before the turn does (no turn.completed, turn.failed or error event:
// the CLI exited 0 after partial output, or its stream was cut) is a
// typed invalid_reply error, an *exec.OutputError naming the last event
// seen, never an empty reply to score. The cases cut the real capture in
// testdata.
func TestCodexBrokenStreamIsTyped(t *testing.T) {
	t.Parallel()
	captured, err := os.ReadFile(filepath.Join("testdata", "codex-package-events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(bytes.TrimSuffix(captured, []byte("\n")), []byte("\n"))
	n := len(lines)
	join := func(ls ...[]byte) []byte { return bytes.Join(ls, nil) }
	for _, tc := range []struct {
		name      string
		out       []byte
		maxOutput int
		problem   string
	}{
		{name: "no turn.completed", out: join(lines[:n-1]...), problem: "output ended without turn.completed (last event: item.completed)"},
		{name: "one partial event", out: []byte(`{"type":"thread.started","thread_id":"t1"}` + "\n"), problem: "output ended without turn.completed (last event: thread.started)"},
		{name: "cut inside an event", out: captured[:len(captured)-40], problem: "ends inside an event"},
		{name: "garbage after an event", out: join(lines[0], []byte("<html>502 Bad Gateway</html>\n")), problem: "without turn.completed (last event: thread.started)"},
		{name: "cut at max_output_bytes", out: captured, maxOutput: 1500, problem: "max_output_bytes"},
		{name: "garbage", out: []byte("Segmentation fault\n"), problem: "no JSON event"},
		{name: "empty", out: nil, problem: "no JSON event"},
		{name: "a secret in the last event", out: join(lines[0], []byte(`{"type":"item.completed","item":{"type":"agent_message","text":"KEY=`+plantedKey+`"}}`+"\n")), problem: "without turn.completed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := filepath.Join(t.TempDir(), "out.jsonl")
			if err := os.WriteFile(f, tc.out, 0o644); err != nil {
				t.Fatal(err)
			}
			c := exec.New(exec.Config{Agent: exec.AgentCodex, Command: []string{"cat", f}, Output: exec.OutputCodexJSON, MaxOutput: tc.maxOutput,
				Env: []string{"MY_KEY"}, Getenv: env(map[string]string{"MY_KEY": plantedKey}),
				Sandbox: exec.SandboxConfig{Mode: exec.SandboxNone, Logf: func(string, ...any) {}}})
			resp, err := c.Chat(t.Context(), simRequest(skillpkg.Encode(recordsPackage(t, nil)), "q"))
			var oe *exec.OutputError
			if resp != nil || llm.KindOf(err) != llm.KindInvalidReply || !errors.As(err, &oe) {
				t.Fatalf("reply %+v, err %v; want an invalid_reply *exec.OutputError", resp, err)
			}
			t.Logf("%v", err)
			if strings.Contains(err.Error(), plantedKey) {
				t.Fatalf("error %q carries the key", err)
			}
			if !strings.Contains(oe.Problem, tc.problem) || oe.Format != exec.OutputCodexJSON || strings.Contains(err.Error(), "\n") {
				t.Fatalf("error %q, want one line saying %q", err, tc.problem)
			}
		})
	}
	// A turn the agent reports failed is the agent's error, not a broken
	// stream.
	f := filepath.Join(t.TempDir(), "failed.jsonl")
	if err := os.WriteFile(f, join(lines[0], []byte(`{"type":"error","message":"stream disconnected"}`+"\n"+`{"type":"turn.failed","error":{"message":"stream disconnected"}}`+"\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	c := exec.New(exec.Config{Agent: exec.AgentCodex, Command: []string{"cat", f}, Output: exec.OutputCodexJSON,
		Sandbox: exec.SandboxConfig{Mode: exec.SandboxNone, Logf: func(string, ...any) {}}})
	_, err = c.Chat(t.Context(), simRequest("# Skill\n", "q"))
	var oe *exec.OutputError
	if llm.KindOf(err) != llm.KindServer || errors.As(err, &oe) || !strings.Contains(err.Error(), "agent reported an error: stream disconnected") {
		t.Fatalf("a failed turn: %v; want the agent's reported error (server)", err)
	}
}
