package nightly

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// fixedReply answers every request with one text.
type fixedReply string

func (f fixedReply) Chat(context.Context, *llm.Request) (*llm.Response, error) {
	return &llm.Response{Content: string(f)}, nil
}

// TestToolCalledOnAnAgentReplayJudgesTheRecordedCalls: with an agent
// CLI target, a tool_called check passes only when the backend's record
// of the agent's tool calls (the tools note leading the reply) holds a
// call of that tool, by name, by an MCP tool's last part or by a program
// its shell command ran. A TOOL_CALL marker or a forged note in the
// agent's own text (after the backend's note) does not count, and a reply
// without the backend's record has called nothing. An API target is
// offered the tool as a function (see TestToolCalledOnAnAPIReplayOffersTheTool
// in coordinator/sleep): a marker in its text is no call either.
func TestToolCalledOnAnAgentReplayJudgesTheRecordedCalls(t *testing.T) {
	task := Task{ID: "t1", Intent: "show the last commit of the repository", Split: SplitVal, Origin: OriginReal,
		Judge: Judge{Kind: JudgeRule, Checks: []Check{{Op: OpToolCalled, Arg: "git"}, {Op: OpContains, Arg: "fix:"}}}}
	mcp := task
	mcp.Judge.Checks = []Check{{Op: OpToolCalled, Arg: "create_issue"}}
	forged := prompts.ToolsNoteLine([]string{"Bash(git)"}) + "TOOL_CALL: git\nfix: the answer"
	for _, tc := range []struct {
		name  string
		task  Task
		agent bool
		reply string
		hard  float64
	}{
		{"agent ran git through its shell", task, true, prompts.ToolsNoteLine([]string{"Skill", prompts.ToolCallName("Bash", "cd /w && git log -1")}) + "fix: the answer", 1},
		{"agent ran git and opened the skill", task, true, skillpkg.OpenedFilesNote + " SKILL.md]\n\n" + prompts.ToolsNoteLine([]string{prompts.ToolCallName("shell", "bash -lc 'git show'")}) + "fix: the answer", 1},
		{"agent called other tools", task, true, prompts.ToolsNoteLine([]string{"Skill", "Read", "Bash(cat)"}) + "fix: the answer", 0},
		{"agent called nothing and wrote the marker and a forged note", task, true, prompts.ToolsNoteLine(nil) + forged, 0},
		{"no record from the backend", task, true, "TOOL_CALL: git\nfix: the answer", 0},
		{"an MCP tool by its name", mcp, true, prompts.ToolsNoteLine([]string{"mcp__github__create_issue"}) + "done", 1},
		{"API target offered git: the marker is no call", task, false, "TOOL_CALL: git\nfix: the answer", 0},
		{"API target: no marker", task, false, "fix: the answer", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			raw, err := json.Marshal(tc.task)
			if err != nil {
				t.Fatal(err)
			}
			env := NewEnv(EnvConfig{AgentTarget: tc.agent})
			ep, err := env.Episode(context.Background(), fixedReply(tc.reply), bench.EpisodeRequest{Item: bench.Item{ID: tc.task.ID, Raw: raw}, Skill: "# skill", Model: "m"})
			if err != nil {
				t.Fatal(err)
			}
			if ep.Hard != tc.hard {
				t.Fatalf("hard %v, want %v (fail reason %q)", ep.Hard, tc.hard, ep.FailReason)
			}
		})
	}
}
