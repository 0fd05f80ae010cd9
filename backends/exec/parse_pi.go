package exec

import (
	"encoding/json"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// piMessage is an agent message of pi's JSON events: an assistant's
// content blocks, stop reason, error and usage.
type piMessage struct {
	Role    string `json:"role"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	StopReason   string `json:"stopReason"`
	ErrorMessage string `json:"errorMessage"`
	Usage        *struct {
		Input      int64 `json:"input"`
		Output     int64 `json:"output"`
		CacheRead  int64 `json:"cacheRead"`
		CacheWrite int64 `json:"cacheWrite"`
	} `json:"usage"`
}

// parsePi reads `pi -p --mode json`: the session header, then the
// agent's events. Each assistant message_end adds its usage; the last
// assistant message is the reply (its text blocks), and a stop reason of
// error or aborted is the agent's failure (pi exits 0 then). The
// tool_execution_start events give the commands and paths the tools were
// given, the tool_execution_end events with isError the tool errors. The
// stream must end with agent_end: a stream without it is an *OutputError.
func parsePi(out []byte, cut bool) (result, *OutputError) {
	var r result
	s := eventStream{format: OutputPiJSON, typeKey: "type"}
	var last *piMessage
	ended := false
	err := s.each(out, cut, func(typ string, line []byte) {
		switch typ {
		case "message_end":
			var ev struct {
				Message piMessage `json:"message"`
			}
			if json.Unmarshal(line, &ev) != nil || ev.Message.Role != "assistant" {
				return
			}
			m := ev.Message
			last = &m
			if u := m.Usage; u != nil {
				if r.usage == nil {
					r.usage = &llm.Usage{}
				}
				r.usage.Add(llm.Usage{InputTokens: u.Input + u.CacheRead + u.CacheWrite, OutputTokens: u.Output, CacheReadTokens: u.CacheRead, CacheWriteTokens: u.CacheWrite})
			}
		case "tool_execution_start":
			var ev struct {
				ToolName string         `json:"toolName"`
				Args     map[string]any `json:"args"`
			}
			if json.Unmarshal(line, &ev) != nil {
				return
			}
			r.tools++
			r.calls = append(r.calls, prompts.ToolCallName(ev.ToolName, argCommand(ev.Args)))
			for _, k := range []string{"command", "path"} {
				if v, ok := ev.Args[k].(string); ok && v != "" {
					r.used = append(r.used, v)
					break
				}
			}
		case "tool_execution_end":
			var ev struct {
				ToolName string `json:"toolName"`
				IsError  bool   `json:"isError"`
				Result   any    `json:"result"`
			}
			if json.Unmarshal(line, &ev) == nil && ev.IsError {
				r.toolErrors = append(r.toolErrors, ev.ToolName+": "+errorText(ev.Result))
			}
		case "agent_end":
			ended = true
		}
	})
	if err != nil {
		return r, err
	}
	if !ended {
		return r, s.unfinished(out, cut, "agent_end")
	}
	if last == nil {
		return r, s.fail(0, s.lastLine, "agent_end without an assistant message")
	}
	var text []string
	for _, b := range last.Content {
		if b.Type == "text" {
			text = append(text, b.Text)
		}
	}
	r.content = strings.Join(text, "")
	switch last.StopReason {
	case "error", "aborted":
		r.failed = true
		r.content = cmpOr(last.ErrorMessage, "stop reason "+last.StopReason)
		return r, nil
	}
	if strings.TrimSpace(r.content) == "" {
		e := s.fail(0, s.lastLine, "the last assistant message holds no reply text (an empty answer is not scored)")
		e.empty = true
		return r, e
	}
	return r, nil
}
