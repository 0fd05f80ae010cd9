package sim

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/option"

	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
)

func messagesClient(ts *httptest.Server, key string) anthropic.Client {
	return anthropic.NewClient(option.WithBaseURL(ts.URL), option.WithAPIKey(key), option.WithMaxRetries(0))
}

// skillTool is Claude Code's Skill tool as it declares it.
func skillTool() anthropic.BetaToolUnionParam {
	return anthropic.BetaToolUnionParam{OfTool: &anthropic.BetaToolParam{
		Name: "Skill", Description: anthropic.String("Invoke a skill."),
		InputSchema: anthropic.BetaToolInputSchemaParam{Properties: map[string]any{"skill": map[string]any{"type": "string"}}, Required: []string{"skill"}},
	}}
}

// TestMessagesAPIToolLoopWithAnthropicSDK drives the sim through the
// Messages API (?beta=true, as Claude Code calls it) with the official Go
// SDK, streaming and not: the sim calls the Skill tool for the listed
// skill; given Claude Code's tool result and the skill's text it answers,
// right exactly when the skill holds the question's rules.
func TestMessagesAPIToolLoopWithAnthropicSDK(t *testing.T) {
	t.Parallel()
	s := NewServer(quiet(), ServerOptions{APIKey: "test-key"})
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	c := messagesClient(ts, "test-key")
	skill, gold := agentSkill(t)

	first := []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock(simbench.UserPrompt(question)))}
	params := func(msgs []anthropic.BetaMessageParam) anthropic.BetaMessageNewParams {
		return anthropic.BetaMessageNewParams{
			Model: "sim-target", MaxTokens: 4096, Messages: msgs,
			System: []anthropic.BetaTextBlockParam{{Text: "You are an agent."}, {Text: claudeSkills}},
			Tools:  []anthropic.BetaToolUnionParam{skillTool()},
			Betas:  []anthropic.AnthropicBeta{"claude-code-20250219"},
		}
	}
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "json", true: "sse"}[stream]
		call := func(msgs []anthropic.BetaMessageParam) *anthropic.BetaMessage {
			t.Helper()
			if !stream {
				m, err := c.Beta.Messages.New(t.Context(), params(msgs))
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				return m
			}
			st := c.Beta.Messages.NewStreaming(t.Context(), params(msgs))
			var m anthropic.BetaMessage
			var types []string
			for st.Next() {
				ev := st.Current()
				types = append(types, ev.Type)
				if err := m.Accumulate(ev); err != nil {
					t.Fatalf("%s: accumulate %s: %v", name, ev.Type, err)
				}
			}
			if err := st.Err(); err != nil {
				t.Fatalf("%s: stream: %v", name, err)
			}
			if len(types) < 4 || types[0] != "message_start" || types[len(types)-1] != "message_stop" || types[len(types)-2] != "message_delta" {
				t.Fatalf("%s: events %v", name, types)
			}
			return &m
		}
		m1 := call(first)
		var use *anthropic.BetaToolUseBlock
		for _, b := range m1.Content {
			if b.Type == "tool_use" {
				v := b.AsToolUse()
				use = &v
			}
		}
		if use == nil {
			t.Fatalf("%s: first reply %+v, want a tool call", name, m1)
		}
		if in, _ := json.Marshal(use.Input); use.Name != "Skill" || string(in) != `{"skill":"skillfleet-target"}` || m1.StopReason != "tool_use" {
			t.Fatalf("%s: first reply %+v, want a Skill call for skillfleet-target", name, m1)
		}
		if m1.Usage.InputTokens <= 0 || m1.Usage.OutputTokens <= 0 {
			t.Fatalf("%s: usage %+v", name, m1.Usage)
		}
		answer := func(skillText string) (*anthropic.BetaMessage, string) {
			msgs := append(first[:1:1], m1.ToParam(), anthropic.NewBetaUserMessage(
				anthropic.NewBetaToolResultBlock(use.ID, "Launching skill: skillfleet-target", false),
				anthropic.NewBetaTextBlock("Base directory for this skill: /ws/.claude/skills/skillfleet-target\n\n"+skillText),
			))
			m := call(msgs)
			var text strings.Builder
			for _, b := range m.Content {
				if b.Type == "text" {
					text.WriteString(b.Text)
				}
			}
			return m, simbench.ExtractAnswer(text.String())
		}
		m2, got := answer(skill)
		if got != gold || m2.StopReason != "end_turn" || m2.Role != "assistant" || m2.Model != "sim-target" {
			t.Fatalf("%s: with the skill loaded: answer %q stop %s, want %q", name, got, m2.StopReason, gold)
		}
		if _, got := answer("# Records\n- Be careful.\n"); got == gold {
			t.Fatalf("%s: a skill without the rules still gave the gold answer %q", name, got)
		}
	}
	log := s.RequestLog()
	if len(log) != 6 || log[0].API != APIMessages || log[0].Action != "read_skill" || log[1].Action != "answer" || log[1].ToolResults != 1 || !log[3].Stream {
		t.Fatalf("request log %+v", log)
	}
}

// TestMessagesAPIPlainAndErrors: the stable (non-beta) endpoint serves a
// request without tools as an ordinary sim request, streamed too, and a
// wrong key is an Anthropic authentication_error.
func TestMessagesAPIPlainAndErrors(t *testing.T) {
	t.Parallel()
	_, ts := setupServer(t, ServerOptions{APIKey: "test-key"})
	skill, _ := agentSkill(t)
	p := anthropic.MessageNewParams{
		Model: "sim-target", MaxTokens: 1024,
		System:   []anthropic.TextBlockParam{{Text: simbench.SystemPrompt(skill)}},
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(simbench.UserPrompt(question)))},
	}
	c := messagesClient(ts, "test-key")
	m, err := c.Messages.New(t.Context(), p)
	if err != nil {
		t.Fatal(err)
	}
	st := c.Messages.NewStreaming(t.Context(), p)
	var acc anthropic.Message
	for st.Next() {
		if err := acc.Accumulate(st.Current()); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if len(m.Content) != 1 || len(acc.Content) != 1 || m.Content[0].Text != acc.Content[0].Text || !strings.Contains(m.Content[0].Text, "<answer>") ||
		m.Usage.InputTokens != acc.Usage.InputTokens || m.Usage.OutputTokens != acc.Usage.OutputTokens {
		t.Fatalf("plain %+v\nstreamed %+v", m, acc)
	}
	bad := messagesClient(ts, "wrong")
	_, err = bad.Messages.New(t.Context(), p)
	var apiErr *anthropic.Error
	if !asError(err, &apiErr) || apiErr.StatusCode != 401 || !strings.Contains(apiErr.RawJSON(), "authentication_error") {
		t.Fatalf("wrong key: %v, want a 401 authentication_error", err)
	}
}

// TestAgentReadsCLICaptures: requests the real CLIs sent (Codex CLI
// 0.169.0, Claude Code 2.1.328, captured against sim-llm) are read as
// those CLIs meant them: the first turn opens the listed skill with the
// CLI's own tool; after the skill is loaded (the shell's output for Codex,
// Claude Code's tool result and skill text) the agent answers under it.
func TestAgentReadsCLICaptures(t *testing.T) {
	t.Parallel()
	read := func(name string) *Conversation {
		t.Helper()
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		var c *Conversation
		if strings.HasPrefix(name, "codex") {
			var r responsesRequest
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			c, err = r.conversation()
		} else {
			var r messagesRequest
			if err := json.Unmarshal(b, &r); err != nil {
				t.Fatal(err)
			}
			c, err = r.conversation()
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return c
	}
	for _, tc := range []struct {
		file, action, tool, arg string
		skill                   string
	}{
		{file: "codex-request.json", action: "read_skill", tool: "exec_command", arg: "/.agents/skills/skillfleet-target/SKILL.md"},
		{file: "claude-request.json", action: "read_skill", tool: "Skill", arg: `"skillfleet-target"`},
		{file: "codex-request-skill-output.json", action: "answer", skill: "# Skill\n- Report distances in km."},
		{file: "claude-request-skill-loaded.json", action: "answer", skill: "# Skill\n- Report distances in km."},
	} {
		c := read(tc.file)
		r, err := New(Options{}).Agent(t.Context(), c)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if r.Action != tc.action {
			t.Fatalf("%s: action %s, want %s (%+v)", tc.file, r.Action, tc.action, r)
		}
		if tc.tool != "" && (len(r.Calls) != 1 || r.Calls[0].Name != tc.tool || !strings.Contains(r.Calls[0].Args, tc.arg)) {
			t.Fatalf("%s: calls %+v, want %s with %s", tc.file, r.Calls, tc.tool, tc.arg)
		}
		if tc.skill != "" {
			st := readAgentState(c)
			if !st.skillRead || !strings.HasPrefix(st.skill, tc.skill) || strings.Contains(st.skill, "description:") {
				t.Fatalf("%s: skill read %v: %q, want it to start %q without front matter", tc.file, st.skillRead, st.skill, tc.skill)
			}
			if st.question != question {
				t.Fatalf("%s: question %q", tc.file, st.question)
			}
		}
	}
}
