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
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// replayClient is a client of agent whose "CLI" prints the file out: the
// agent's built-in output format, parsed as for the real CLI.
func replayClient(t *testing.T, agent, format string, out []byte, mod func(*exec.Config)) *exec.Client {
	t.Helper()
	f := filepath.Join(t.TempDir(), "out.jsonl")
	if err := os.WriteFile(f, out, 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := exec.Config{Agent: agent, Command: []string{"cat", f}, Output: format,
		Env: []string{"MY_KEY"}, Getenv: env(map[string]string{"MY_KEY": plantedKey}),
		Sandbox: exec.SandboxConfig{Mode: exec.SandboxNone, Logf: func(string, ...any) {}}}
	if mod != nil {
		mod(&cfg)
	}
	return exec.New(cfg)
}

// TestCursorStream reads the stream-json output of `cursor-agent -p`
// (testdata/cursor-stream.jsonl, written from Cursor's documented event
// format: Cursor's CLI is not on npm, so no run of the real CLI is
// recorded here): the result event is the reply, its tool calls the
// trace summary's commands and paths, a failed tool call the trace's
// tool error; without a usage in the result event the usage is
// estimated and counted as such.
func TestCursorStream(t *testing.T) {
	t.Parallel()
	rec, err := os.ReadFile(filepath.Join("testdata", "cursor-stream.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	c := replayClient(t, exec.AgentCursor, exec.OutputCursorJSON, rec, func(c *exec.Config) { c.TraceSummary = true })
	resp, err := c.Chat(t.Context(), simRequest("# Records\n", "q"))
	if err != nil {
		t.Fatal(err)
	}
	rest, trace := prompts.CutTrace(resp.Content)
	if !strings.HasSuffix(rest, "The record number is 4821.\n<answer>4821</answer>") {
		t.Fatalf("reply %q", rest)
	}
	for _, want := range []string{
		"agent: cursor", "- tool calls: 3", "- read SKILL.md: yes", "- read task.md: yes",
		"- ran: /work/.cursor/skills/skillfleet-target/SKILL.md", "- ran: cat task.md",
		"- tool error: read: File not found: /work/notes.md", "answer tags",
	} {
		if !strings.Contains(trace, want) {
			t.Errorf("trace lacks %q:\n%s", want, trace)
		}
	}
	if c.EstimatedCalls() != 1 || resp.Usage.InputTokens == 0 {
		t.Fatalf("usage %+v, estimated calls %d: want an estimate, counted", resp.Usage, c.EstimatedCalls())
	}

	// A result event with a usage: the usage is the CLI's.
	withUsage := bytes.Replace(rec, []byte(`"is_error":false,`), []byte(`"is_error":false,"usage":{"inputTokens":1200,"outputTokens":80,"cacheReadTokens":300},`), 1)
	c = replayClient(t, exec.AgentCursor, exec.OutputCursorJSON, withUsage, nil)
	resp, err = c.Chat(t.Context(), simRequest("# Records\n", "q"))
	if err != nil {
		t.Fatal(err)
	}
	if resp.Usage != (llm.Usage{InputTokens: 1500, OutputTokens: 80, CacheReadTokens: 300}) || c.EstimatedCalls() != 0 {
		t.Fatalf("usage %+v (estimated %d), want the result event's", resp.Usage, c.EstimatedCalls())
	}
}

// TestCursorBrokenStreamIsTyped: Cursor output that is not a whole
// stream-json session — cut before the result event, cut inside an
// event, garbage, empty, a result without text — is an invalid_reply
// *exec.OutputError, never a reply to score; an error result is the
// agent's own failure (a server error), not a reply either.
func TestCursorBrokenStreamIsTyped(t *testing.T) {
	t.Parallel()
	rec, err := os.ReadFile(filepath.Join("testdata", "cursor-stream.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(bytes.TrimSuffix(rec, []byte("\n")), []byte("\n"))
	n := len(lines)
	for _, tc := range []struct {
		name, problem string
		out           []byte
		maxOutput     int
	}{
		{name: "no result event", out: bytes.Join(lines[:n-1], nil), problem: "no result event (the stream ended early; last event: assistant)"},
		{name: "cut inside an event", out: rec[:len(rec)-60], problem: "ends inside an event"},
		{name: "cut at max_output_bytes", out: rec, maxOutput: 900, problem: "max_output_bytes"},
		{name: "garbage", out: []byte("Segmentation fault\n"), problem: "not a JSON event"},
		{name: "empty", out: nil, problem: "no JSON event"},
		{name: "empty result", out: append(bytes.Join(lines[:n-1], nil), []byte(`{"type":"result","subtype":"success","is_error":false,"result":"  "}`+"\n")...), problem: "holds no reply text"},
		{name: "a secret in the cut event", out: append(lines[0], []byte(`{"type":"assistant","message":{"content":"KEY=`+plantedKey)...), problem: "ends inside an event"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := replayClient(t, exec.AgentCursor, exec.OutputCursorJSON, tc.out, func(c *exec.Config) { c.MaxOutput = tc.maxOutput })
			resp, err := c.Chat(t.Context(), simRequest("# Records\n", "q"))
			var oe *exec.OutputError
			if resp != nil || llm.KindOf(err) != llm.KindInvalidReply || !errors.As(err, &oe) {
				t.Fatalf("reply %+v, err %v; want an invalid_reply *exec.OutputError", resp, err)
			}
			if !strings.Contains(oe.Error(), tc.problem) || oe.Format != exec.OutputCursorJSON {
				t.Fatalf("error %q, want %q", oe.Error(), tc.problem)
			}
			if strings.Contains(err.Error(), plantedKey) {
				t.Fatalf("the secret is in the error: %v", err)
			}
		})
	}
	t.Run("error result", func(t *testing.T) {
		t.Parallel()
		out := append(bytes.Join(lines[:n-1], nil), []byte(`{"type":"result","subtype":"error","is_error":true,"result":"model refused"}`+"\n")...)
		c := replayClient(t, exec.AgentCursor, exec.OutputCursorJSON, out, nil)
		resp, err := c.Chat(t.Context(), simRequest("# Records\n", "q"))
		if resp != nil || llm.KindOf(err) != llm.KindServer || !strings.Contains(err.Error(), "model refused") {
			t.Fatalf("reply %+v, err %v; want the agent's own failure", resp, err)
		}
	})
}
