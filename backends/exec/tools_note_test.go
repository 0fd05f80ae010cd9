package exec_test

import (
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/backends/exec"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// TestNoteToolsLeadsTheReplyWithTheCallsTheStreamShowed: with option
// note_tools=true an agent-mode reply opens with the tools note naming,
// in order, every tool call of the agent's event stream (each agent's
// recorded stream), a shell command with the programs it ran; without
// the option the reply has no note, and a value that is not a boolean is
// refused.
func TestNoteToolsLeadsTheReplyWithTheCallsTheStreamShowed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		agent, output, file string
		want                []string
	}{
		{"claude", "claude-json", "claude-package-stream.jsonl", []string{"Skill", "Bash(find)", "Bash(cat)", "Bash(cat)", "Bash(cat)"}},
		{"codex", "codex-json", "codex-package-events.jsonl", []string{"shell(cat)", "shell(find)", "shell(cat)"}},
		{"copilot", "copilot-json", "copilot-events.jsonl", []string{"skill"}},
		{"cursor", "cursor-json", "cursor-stream.jsonl", []string{"read", "shell(cat)", "read"}},
		{"opencode", "opencode-json", "opencode-events.jsonl", []string{"bash(cat)"}},
		{"pi", "pi-json", "pi-events.jsonl", []string{"bash(cat)"}},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			t.Parallel()
			events, err := filepath.Abs(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			for _, on := range []bool{true, false} {
				opts := map[string]string{"agent": tc.agent, "command": `["cat","` + events + `"]`, "output": tc.output, "sandbox": "none"}
				if on {
					opts["note_tools"] = "true"
				}
				cfg, err := exec.ConfigFromOptions("sim-target", opts)
				if err != nil {
					t.Fatal(err)
				}
				cfg.Sandbox.Logf = func(string, ...any) {}
				resp, err := exec.New(cfg).Chat(t.Context(), simRequest("# Plain skill\n", "q"))
				if err != nil {
					t.Fatal(err)
				}
				_, calls, ok := prompts.CutToolsNote(resp.Content)
				if on && (!ok || !slices.Equal(calls, tc.want)) {
					t.Fatalf("note_tools=true: reply %q: calls %q (note %v), want %q", resp.Content, calls, ok, tc.want)
				}
				if !on && strings.Contains(resp.Content, prompts.ToolsNote) {
					t.Fatalf("no note_tools: reply %q carries the tools note", resp.Content)
				}
			}
		})
	}
	if _, err := exec.ConfigFromOptions("m", map[string]string{"agent": "codex", "note_tools": "sometimes"}); err == nil || !strings.Contains(err.Error(), "note_tools") {
		t.Errorf("note_tools=sometimes: %v, want it refused", err)
	}
}
