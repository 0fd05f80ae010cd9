package exec

import (
	"encoding/json"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// opencodeEvent is one line of `opencode run --format json`: step_start,
// text, reasoning, tool_use, step_finish, error; the part holds the
// event's content.
type opencodeEvent struct {
	Type string `json:"type"`
	Part struct {
		Type   string `json:"type"`
		Text   string `json:"text"`
		Tool   string `json:"tool"`
		Reason string `json:"reason"`
		State  struct {
			Status string         `json:"status"`
			Input  map[string]any `json:"input"`
			Error  any            `json:"error"`
		} `json:"state"`
		Tokens *struct {
			Input     int64 `json:"input"`
			Output    int64 `json:"output"`
			Reasoning int64 `json:"reasoning"`
			Cache     struct {
				Read  int64 `json:"read"`
				Write int64 `json:"write"`
			} `json:"cache"`
		} `json:"tokens"`
	} `json:"part"`
	Error any `json:"error"`
}

// parseOpencode reads opencode's JSON events: the text parts after the
// last tool call are the reply, every step_finish adds its tokens, the
// tool_use parts give the commands and paths the tools were given (and
// the errors of those that failed), and an error event is the agent's
// failure. The stream must end with a step_finish (the last step done):
// one that stops elsewhere is an *OutputError.
func parseOpencode(out []byte, cut bool) (result, *OutputError) {
	var r result
	s := eventStream{format: OutputOpencodeJSON, typeKey: "type"}
	var text []string
	var failure, lastReason string
	failed := false
	err := s.each(out, cut, func(typ string, line []byte) {
		var ev opencodeEvent
		if json.Unmarshal(line, &ev) != nil {
			return
		}
		switch typ {
		case "text":
			text = append(text, ev.Part.Text)
		case "tool_use":
			text = nil // what came before a tool call is not the answer
			r.tools++
			r.calls = append(r.calls, prompts.ToolCallName(ev.Part.Tool, argCommand(ev.Part.State.Input)))
			for _, k := range []string{"command", "filePath", "path", "pattern", "name"} {
				if v, ok := ev.Part.State.Input[k].(string); ok && v != "" {
					r.used = append(r.used, v)
					break
				}
			}
			if ev.Part.State.Status == "error" {
				r.toolErrors = append(r.toolErrors, ev.Part.Tool+": "+errorText(ev.Part.State.Error))
			}
		case "step_finish":
			lastReason = ev.Part.Reason
			if t := ev.Part.Tokens; t != nil {
				if r.usage == nil {
					r.usage = &llm.Usage{}
				}
				r.usage.Add(llm.Usage{InputTokens: t.Input + t.Cache.Read + t.Cache.Write, OutputTokens: t.Output + t.Reasoning,
					CacheReadTokens: t.Cache.Read, CacheWriteTokens: t.Cache.Write, ReasoningTokens: t.Reasoning})
			}
		case "error":
			failed = true
			failure = errorText(ev.Error)
		}
	})
	if err != nil {
		return r, err
	}
	if failed {
		r.failed, r.content = true, cmpOr(failure, "error event")
		return r, nil
	}
	if s.lastType != "step_finish" || lastReason == "tool-calls" {
		return r, s.unfinished(out, cut, "final step_finish")
	}
	r.content = strings.TrimSpace(strings.Join(text, ""))
	if r.content == "" {
		e := s.fail(0, s.lastLine, "no text after the last tool call (an empty answer is not scored)")
		e.empty = true
		return r, e
	}
	return r, nil
}
