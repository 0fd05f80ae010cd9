package spreadsheet

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/benchtest"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// call is a scripted reply that calls one tool with a program.
func call(id, tool, code string) *llm.Response {
	args, _ := json.Marshal(map[string]string{"code": code})
	return &llm.Response{Content: "step " + id, ToolCalls: []llm.ToolCall{{ID: id, Name: tool, Arguments: string(args)}}}
}

// toolReplies are the tool messages of an episode, in order.
func toolReplies(ep *bench.Episode) []string {
	var out []string
	for _, m := range ep.Messages {
		if m.Role == llm.RoleTool {
			out = append(out, m.Content)
		}
	}
	return out
}

// ReAct mode: the agent runs a program to look at the workbook, sees what
// it printed, submits the solution, and is scored on every test case; a
// malformed and an unknown tool call get an error the agent can read.
func TestReactRunsThenSubmits(t *testing.T) {
	root, it := fixture(t)
	e := newEnv(t, root, map[string]any{"mode": "react"})
	m := &benchtest.Scripted{Replies: []*llm.Response{
		call("c1", ToolRunPython, "import openpyxl\nws = openpyxl.load_workbook(INPUT_PATH).active\nprint('A column:', [c.value for c in ws['A']])"),
		{Content: "oops", ToolCalls: []llm.ToolCall{{ID: "c2", Name: ToolRunPython, Arguments: "not json"}, {ID: "c3", Name: "bash", Arguments: `{"cmd":"ls"}`}}},
		call("c4", ToolSubmit, solve),
	}}
	ep, err := e.Episode(context.Background(), m, bench.EpisodeRequest{Item: it, Skill: "Print before you write."})
	if err != nil {
		t.Fatal(err)
	}
	if ep.Hard != 1 || ep.Soft != 1 || ep.FailReason != "" {
		t.Fatalf("hard %v soft %v reason %q\n%s", ep.Hard, ep.Soft, ep.FailReason, lastMessage(ep))
	}
	if m.Calls() != 3 || ep.Calls != 3 || ep.NTurns != 3 || ep.Answer != solve {
		t.Errorf("calls %d (episode %d), turns %d, answer %q", m.Calls(), ep.Calls, ep.NTurns, ep.Answer)
	}
	obs := toolReplies(ep)
	if len(obs) != 4 {
		t.Fatalf("tool replies %q, want 4", obs)
	}
	for i, want := range []string{"A column: [1, 2, 3]", `must be a JSON object {"code"`, `no tool named "bash"`, "Submitted"} {
		if !strings.Contains(obs[i], want) {
			t.Errorf("tool reply %d %q lacks %q", i+1, obs[i], want)
		}
	}
	if !strings.Contains(obs[0], "Exit status 0") || !strings.Contains(obs[0], "No workbook was saved") {
		t.Errorf("observation of a run: %q", obs[0])
	}
	req := m.Requests[0]
	if len(req.Tools) != 2 || req.Tools[0].Name != ToolRunPython || req.Tools[1].Name != ToolSubmit {
		t.Errorf("tools offered: %+v", req.Tools)
	}
	if !strings.Contains(req.Messages[0].Content, "Print before you write.") || !strings.Contains(req.Messages[1].Content, "Put the sum of A1:A3 into B1.") {
		t.Errorf("prompt lacks the skill or the task: %q", req.Messages[:2])
	}
	// The third request carries the conversation: the tool results answer
	// their calls by id.
	var ids []string
	for _, msg := range m.Requests[2].Messages {
		if msg.Role == llm.RoleTool {
			ids = append(ids, msg.ToolCallID)
		}
	}
	if fmt.Sprint(ids) != "[c1 c2 c3]" {
		t.Errorf("tool results answer %v, want [c1 c2 c3]", ids)
	}
}

// Without a submission the last program the agent ran is scored; a reply
// with a code block and no tool call is a submission; a wrong submission
// scores 0 with the wrong cells as the reason; with no program at all the
// episode scores 0 without running anything.
func TestReactEndings(t *testing.T) {
	root, it := fixture(t)
	for _, tc := range []struct {
		name    string
		replies []*llm.Response
		hard    float64
		reason  string
	}{
		{"last run program", []*llm.Response{call("a", ToolRunPython, solve), {Content: "done"}}, 1, ""},
		{"code block", []*llm.Response{{Content: py(solve)}}, 1, ""},
		{"wrong submission", []*llm.Response{call("a", ToolSubmit, wrong)}, 0, "wrong cells"},
		{"nothing", []*llm.Response{{Content: "I cannot."}}, 0, "no solution submitted and no program run"},
		{"turns run out", []*llm.Response{call("a", ToolRunPython, "print(1)")}, 0, "no solution submitted; the last program run was scored"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, root, map[string]any{"mode": "react", "max_turns": 3})
			ep, err := e.Episode(context.Background(), &benchtest.Scripted{Replies: tc.replies}, bench.EpisodeRequest{Item: it})
			if err != nil {
				t.Fatal(err)
			}
			if ep.Hard != tc.hard || !strings.Contains(ep.FailReason, tc.reason) {
				t.Errorf("hard %v reason %q, want %v %q", ep.Hard, ep.FailReason, tc.hard, tc.reason)
			}
		})
	}
}

// A hostile program in a ReAct step is contained as in the sandbox tests:
// its write outside the work directory is refused, the file outside is
// unchanged, and the agent reads the refusal as the step's output.
func TestReactHostileStepContained(t *testing.T) {
	root, it := fixture(t)
	victim := filepath.Join(os.TempDir(), fmt.Sprintf("skillfleet-react-victim-%d.txt", os.Getpid()))
	if err := os.WriteFile(victim, []byte("keep"), 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(victim, 0o666); err != nil {
		t.Fatal(err)
	}
	defer os.Remove(victim)
	e := newEnv(t, root, map[string]any{"mode": "react"})
	m := &benchtest.Scripted{Replies: []*llm.Response{
		call("h1", ToolRunPython, fmt.Sprintf("open(%q, 'w').write('gone')", victim)),
		call("h2", ToolRunPython, "import socket\nsocket.create_connection(('127.0.0.1', 22), timeout=2)"),
		call("h3", ToolSubmit, solve),
	}}
	ep, err := e.Episode(context.Background(), m, bench.EpisodeRequest{Item: it})
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(victim); err != nil || string(b) != "keep" {
		t.Errorf("the file outside changed: %q, %v", b, err)
	}
	obs := toolReplies(ep)
	if len(obs) != 3 || !strings.Contains(obs[0], "writing outside the work directory is not allowed") || strings.Contains(obs[1], "Exit status 0") {
		t.Errorf("hostile steps' observations: %q", obs)
	}
	if ep.Hard != 1 {
		t.Errorf("the submission after hostile steps scored %v: %s", ep.Hard, ep.FailReason)
	}
}

// env.mode is checked: react is accepted (its turns default to 12), other
// names are refused with the three that exist.
func TestReactModeConfig(t *testing.T) {
	root, _ := fixture(t)
	if e := newEnv(t, root, map[string]any{"mode": "react"}); e.cfg.MaxTurns != reactMaxTurns {
		t.Errorf("react max_turns %d, want %d", e.cfg.MaxTurns, reactMaxTurns)
	}
	_, err := New(Config{Mode: "reAct"})
	if err == nil || !strings.Contains(err.Error(), "single, multi or react") {
		t.Errorf("bad mode: %v", err)
	}
}
