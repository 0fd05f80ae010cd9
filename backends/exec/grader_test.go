package exec_test

import (
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/backends/exec"
)

// TestAgentTargetGradesInChatMode: an agent-mode Codex client (a
// replay target, with its sandbox option set) answers a grading request
// (each of exec.GradingStages) as its chat-mode twin would (Codex's
// read-only sandbox, no skill installed in the work directory) and a
// task in agent mode (the option's sandbox, the skill installed); both
// count in Calls. A custom command has no chat mode: it gets the grading
// request as a task.
func TestAgentTargetGradesInChatMode(t *testing.T) {
	t.Parallel()
	bin := script(t, `[ "$1" = "--version" ] && { echo 'codex-cli 0.169.0'; exit 0; }
mode=$(for a in "$@"; do [ "$prev" = --sandbox ] && echo "$a"; prev=$a; done)
skill=none; [ -f .agents/skills/skillfleet-target/SKILL.md ] && skill=installed
echo '{"type":"item.completed","item":{"type":"agent_message","text":"sandbox '"$mode"', skill '"$skill"'"}}'
echo '{"type":"turn.completed","usage":{"input_tokens":5,"output_tokens":2}}'`)
	c := exec.New(exec.Config{Agent: exec.AgentCodex, Bin: bin, Model: "m", CodexSandbox: "danger-full-access",
		Getenv: env(nil), Sandbox: exec.SandboxConfig{Mode: exec.SandboxNone, Logf: func(string, ...any) {}}})
	task := req("<skill>\n# Records\n</skill>", "the task")
	resp, err := c.Chat(t.Context(), task)
	if err != nil || resp.Content != "sandbox danger-full-access, skill installed" {
		t.Fatalf("a task: %+v, %v", resp, err)
	}
	for i, stage := range exec.GradingStages {
		grade := req("You grade a reply against a rubric.", "Grade it.")
		grade.Stage = stage
		resp, err := c.Chat(t.Context(), grade)
		if err != nil || resp.Content != "sandbox read-only, skill none" {
			t.Fatalf("a %s request: %+v, %v; want the chat mode's", stage, resp, err)
		}
		if n := c.Calls(); n != int64(i+2) {
			t.Errorf("Calls() = %d after %d calls", n, i+2)
		}
	}

	custom := exec.New(exec.Config{Command: []string{bin, "{task}"}, Output: exec.OutputCodexJSON, Model: "m",
		Getenv: env(nil), Sandbox: exec.SandboxConfig{Mode: exec.SandboxNone, Logf: func(string, ...any) {}}})
	grade := req("You grade a reply against a rubric.", "Grade it.")
	grade.Stage = exec.GradingStages[0]
	if resp, err := custom.Chat(t.Context(), grade); err != nil || !strings.HasPrefix(resp.Content, "sandbox , skill") {
		t.Fatalf("a custom command's grading request: %+v, %v; want it run as the command", resp, err)
	}
}
