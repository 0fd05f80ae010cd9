package prompts

import (
	"bytes"
	"encoding/json"
	"strings"
)

// An agent CLI target (backends/exec with option trace_summary, SkillOpt's
// codex_trace_to_optimizer) leads its reply with a summary of what the
// agent did: a block that opens with a TraceNote line naming the agent
// and closes with a TraceEnd line. The analysts get it as the
// trajectory's agent_trace, apart from the conversation.
const (
	TraceNote = "[agent trace:"
	TraceEnd  = "[end of agent trace]"
)

// CutTrace returns text without its agent trace block, and the block's
// lines between the two markers ("" when text has no whole block).
func CutTrace(text string) (rest, trace string) {
	i := strings.Index(text, TraceNote)
	if i < 0 {
		return text, ""
	}
	j := strings.Index(text[i:], TraceEnd)
	if j < 0 {
		return text, ""
	}
	block := text[i : i+j]
	_, body, _ := strings.Cut(block, "\n")
	header, _, _ := strings.Cut(block, "\n")
	agent := strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(header, TraceNote)), "]")
	trace = strings.TrimSpace(body)
	if agent != "" {
		trace = "agent: " + agent + "\n" + trace
	}
	after := strings.TrimLeft(text[i+j+len(TraceEnd):], "\n")
	return text[:i] + after, trace
}

// MarshalJSON writes the trajectory with the agent trace blocks of its
// assistant messages lifted out into AgentTrace (one entry per block),
// so that the analyst reads the agent's turns as the agent wrote them and
// the summary beside them.
func (t Trajectory) MarshalJSON() ([]byte, error) {
	type plain Trajectory
	p := plain(t)
	lifted := false
	for i, m := range p.Messages {
		if m.Role != "assistant" || !strings.Contains(m.Content, TraceNote) {
			continue
		}
		rest, tr := CutTrace(m.Content)
		if tr == "" {
			continue
		}
		if !lifted {
			p.Messages = append([]Message(nil), p.Messages...)
			p.AgentTrace = append([]string(nil), p.AgentTrace...)
			lifted = true
		}
		p.Messages[i].Content = rest
		p.AgentTrace = append(p.AgentTrace, tr)
	}
	// The payload is written without HTML escaping; so is this.
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	err := enc.Encode(p)
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), err
}
