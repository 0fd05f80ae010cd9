package prompts_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// TestAgentTraceLiftedOut: an agent CLI's reply that leads with a trace
// block reaches the analyst's payload as the trajectory's agent_trace,
// the assistant message keeping only what the agent wrote; other
// messages and a reply without a whole block are left as they are.
func TestAgentTraceLiftedOut(t *testing.T) {
	t.Parallel()
	reply := prompts.TraceNote + " codex]\n- tool calls: 2\n- ran: cat task.md\n" + prompts.TraceEnd + "\n\nThe answer is <answer>42</answer>"
	tr := prompts.Trajectory{ID: "t1", Messages: []prompts.Message{
		{Role: "user", Content: "question " + prompts.TraceNote},
		{Role: "assistant", Content: reply},
		{Role: "assistant", Content: prompts.TraceNote + " cut off"},
	}}
	b, err := json.Marshal(tr)
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Messages   []prompts.Message `json:"messages"`
		AgentTrace []string          `json:"agent_trace"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.AgentTrace) != 1 || got.AgentTrace[0] != "agent: codex\n- tool calls: 2\n- ran: cat task.md" {
		t.Fatalf("agent_trace %q", got.AgentTrace)
	}
	if got.Messages[1].Content != "The answer is <answer>42</answer>" {
		t.Fatalf("assistant message %q, want the agent's reply alone", got.Messages[1].Content)
	}
	if got.Messages[0].Content != tr.Messages[0].Content || got.Messages[2].Content != tr.Messages[2].Content {
		t.Fatalf("messages without a whole trace block changed: %+v", got.Messages)
	}
	if tr.Messages[1].Content != reply {
		t.Fatal("marshalling changed the trajectory it was given")
	}
	// The payload the analysts' prompts decode (strictly) takes it.
	var back prompts.Trajectory
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&back); err != nil || len(back.AgentTrace) != 1 {
		t.Fatalf("strict decode: %v, %+v", err, back.AgentTrace)
	}
	b, _ = json.Marshal(prompts.Trajectory{ID: "t2", Messages: []prompts.Message{{Role: "assistant", Content: "plain"}}})
	if strings.Contains(string(b), "agent_trace") {
		t.Fatalf("a trajectory without a trace has agent_trace: %s", b)
	}
}
