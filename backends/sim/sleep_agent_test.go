package sim

import (
	"context"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/nightly"
)

// TestSleepAttemptThroughAnAgentCLI: a sleep attempt an agent CLI drives
// (the exec backend's task: the attempt's instructions, then its request)
// opens the listed skill whose description asks to be read first, then
// answers under what it read: in the form the skill asks for when it read
// it, in the bare form when no skill was listed.
func TestSleepAttemptThroughAnAgentCLI(t *testing.T) {
	t.Parallel()
	p := nightly.ResearcherPapers[0]
	task := nightly.PromptMarker + " attempt. You are the user's coding agent.\n\n" +
		nightly.PromptMarker + " Request: What is the arXiv id of \"" + p.Title + "\"?\n\nReturn only the answer."
	listing := "<skills_instructions>\n### Skill roots\n- `r1` = `/ws/.agents/skills`\n### Available skills\n" +
		"- " + nightly.ManagedSkillName + ": Habits learned overnight. Read it before you answer. (file: r1/" + nightly.ManagedSkillName + "/SKILL.md)\n</skills_instructions>"
	tools := []ToolDef{{Name: "exec_command", Params: []byte(`{"properties":{"cmd":{}}}`)}}
	c := &Conversation{Model: "sim-target", System: []string{listing}, Tools: tools, Turns: []Turn{{Role: "user", Text: task}}}
	r, err := quiet().Agent(t.Context(), c)
	if err != nil || r.Action != "read_skill" || len(r.Calls) != 1 || !strings.Contains(r.Calls[0].Args, nightly.ManagedSkillName+"/SKILL.md") {
		t.Fatalf("first turn %+v, %v: want a read of the listed skill", r, err)
	}
	skill := "---\nname: " + nightly.ManagedSkillName + "\n---\n\n- " + nightly.HabitWrap + "\n- " + nightly.HabitArxivID + "\n"
	c.Turns = append(c.Turns, Turn{Role: "assistant", Call: &r.Calls[0]}, Turn{Role: "tool", CallID: r.Calls[0].ID, Output: skill})
	r, err = quiet().Agent(t.Context(), c)
	if err != nil || r.Action != "answer" || !strings.Contains(r.Text, "<answer>arXiv:"+p.ID+"</answer>") {
		t.Fatalf("answer %+v, %v: want the wrapped arXiv id the skill asks for", r, err)
	}
	bare := &Conversation{Model: "sim-target", Tools: tools, Turns: []Turn{{Role: "user", Text: task}}}
	r, err = quiet().Agent(t.Context(), bare)
	if err != nil || r.Action != "answer" || strings.Contains(r.Text, "<answer>") || !strings.Contains(r.Text, "arxiv.org/abs/"+p.ID) {
		t.Fatalf("without a skill %+v, %v: want the bare URL", r, err)
	}
}

// TestSleepChatRoleThroughAnAgentCLI: a sleep prompt an agent CLI carries
// in chat mode (no tools; the request's system text, then each message
// after a "---" line, behind the CLI's own instructions and a reminder of
// its own) is answered as SleepAware answers the request itself; any
// other tool-less conversation is not taken for one.
func TestSleepChatRoleThroughAnAgentCLI(t *testing.T) {
	t.Parallel()
	p := nightly.ResearcherPapers[0]
	task := nightly.Task{Intent: "What is the arXiv id of \"" + p.Title + "\"?"}
	msgs := nightly.AttemptMessages(task, "- "+nightly.HabitWrap+"\n- "+nightly.HabitArxivID+"\n", "")
	var parts []string
	for _, m := range msgs {
		text := m.Text()
		if m.Role == "assistant" {
			text = "[assistant]\n" + text
		}
		parts = append(parts, text)
	}
	prompt := "<system-reminder>the CLI's own note</system-reminder>\n" + strings.Join(parts, "\n\n---\n\n")
	c := &Conversation{Model: "sim-target", System: []string{"You are the CLI."}, Turns: []Turn{{Role: "user", Text: prompt}}}
	r, err := quiet().Agent(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	want, err := NewSleepAware(quiet()).Chat(t.Context(), &llm.Request{Model: "sim-target", Messages: msgs})
	if err != nil {
		t.Fatal(err)
	}
	if r.Action != "chat" || r.Text != want.Content || !strings.Contains(r.Text, "<answer>arXiv:"+p.ID+"</answer>") {
		t.Fatalf("through the CLI %+v\nwant %q", r, want.Content)
	}
	if _, ok := sleepChatRequest(&Conversation{Turns: []Turn{{Role: "user", Text: "Note the serial code."}}}); ok {
		t.Fatal("a plain prompt taken for a sleep prompt")
	}
}

// captureModel records the request it is given and answers nothing.
type captureModel struct{ req *llm.Request }

func (m *captureModel) Chat(_ context.Context, req *llm.Request) (*llm.Response, error) {
	m.req = req
	return nil, &llm.Error{Kind: llm.KindServer, Msg: "captured"}
}

// TestSleepJudgeThroughCodexChatMode: Sleep's rubric judge carried by
// Codex in chat mode, which keeps tools it cannot use and sends its own
// environment context as a user message before the prompt, is answered
// as SleepAware answers the judge's request (a JSON verdict), not taken
// for an agent task.
func TestSleepJudgeThroughCodexChatMode(t *testing.T) {
	t.Parallel()
	capture := &captureModel{}
	task := nightly.Task{ID: "t1", Intent: "Summarise the paper.", Judge: nightly.Judge{Kind: nightly.JudgeRubric, Rubric: "The reply summarises the paper."}}
	_, _ = nightly.Score(t.Context(), task, "It proposes a method.", &nightly.RubricJudge{Model: capture, Name: "sim-target"})
	if capture.req == nil {
		t.Fatal("the judge made no request")
	}
	var parts []string
	for _, m := range capture.req.Messages {
		parts = append(parts, m.Text())
	}
	tools := []ToolDef{{Name: "exec_command", Params: []byte(`{"properties":{"cmd":{}}}`)}, {Name: "write_stdin"}}
	c := &Conversation{Model: "sim-target", System: []string{"You are Codex."}, Tools: tools, Turns: []Turn{
		{Role: "user", Text: "<environment_context>\n  <cwd>/work</cwd>\n</environment_context>"},
		{Role: "user", Text: strings.Join(parts, "\n\n---\n\n")},
	}}
	r, err := quiet().Agent(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	want, err := NewSleepAware(quiet()).Chat(t.Context(), capture.req)
	if err != nil {
		t.Fatal(err)
	}
	if r.Action != "chat" || len(r.Calls) != 0 || r.Text != want.Content || !strings.Contains(r.Text, `"score"`) {
		t.Fatalf("through Codex's chat mode %+v\nwant %q", r, want.Content)
	}
}
