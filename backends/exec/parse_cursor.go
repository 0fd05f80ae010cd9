package exec

import (
	"encoding/json"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// cursorEvent is one line of `cursor-agent -p --output-format
// stream-json`: system (init), user, assistant, tool_call (subtype
// started or completed) and, last, result.
type cursorEvent struct {
	Type    string `json:"type"`
	Subtype string `json:"subtype"`
	// A tool_call event: one key naming the tool (shellToolCall,
	// readToolCall, ...) holding its args and, once completed, its result.
	ToolCall map[string]struct {
		Args   map[string]any `json:"args"`
		Result map[string]any `json:"result"`
	} `json:"tool_call"`
	// The result event.
	IsError bool   `json:"is_error"`
	Result  string `json:"result"`
	Usage   *struct {
		InputTokens      int64 `json:"inputTokens"`
		OutputTokens     int64 `json:"outputTokens"`
		CacheReadTokens  int64 `json:"cacheReadTokens"`
		CacheWriteTokens int64 `json:"cacheWriteTokens"`
		// Snake-case spellings, as Claude Code's stream has them.
		InputTokensS  int64 `json:"input_tokens"`
		OutputTokensS int64 `json:"output_tokens"`
	} `json:"usage"`
}

// parseCursor reads Cursor Agent's stream-json output: the result event
// gives the reply (result), the failure flag (is_error, or subtype error)
// and, when the CLI reports it, the usage; the tool_call events give the
// commands and paths its tools were given (shellToolCall's command, the
// path of readToolCall, grepToolCall, lsToolCall, globToolCall...) and
// the errors of the calls that failed. Every line must be a JSON event; a
// stream without the result event, or whose result holds no text, is an
// *OutputError.
func parseCursor(out []byte, cut bool) (result, *OutputError) {
	var r result
	s := eventStream{format: OutputCursorJSON, typeKey: "type"}
	var final *cursorEvent
	err := s.each(out, cut, func(typ string, line []byte) {
		var ev cursorEvent
		if json.Unmarshal(line, &ev) != nil {
			return
		}
		switch typ {
		case "tool_call":
			for name, call := range ev.ToolCall {
				switch ev.Subtype {
				case "started":
					r.tools++
					r.calls = append(r.calls, prompts.ToolCallName(strings.TrimSuffix(name, "ToolCall"), argCommand(call.Args)))
					if v := cursorToolArg(name, call.Args); v != "" {
						r.used = append(r.used, v)
					}
				case "completed":
					if e, ok := call.Result["error"]; ok {
						r.toolErrors = append(r.toolErrors, strings.TrimSuffix(name, "ToolCall")+": "+errorText(e))
					}
				}
			}
		case "result":
			final = &ev
		}
	})
	if err != nil {
		return r, err
	}
	if final == nil {
		return r, s.unfinished(out, cut, "result")
	}
	r.content, r.failed = final.Result, final.IsError || final.Subtype == "error"
	if r.failed && r.content == "" {
		r.content = cmpOr(final.Subtype, "error")
	}
	if !r.failed && strings.TrimSpace(r.content) == "" {
		e := s.fail(0, s.lastLine, "the result event holds no reply text (an empty answer is not scored)")
		e.empty = true
		return r, e
	}
	if u := final.Usage; u != nil {
		in, outT := cmpOr(u.InputTokens, u.InputTokensS), cmpOr(u.OutputTokens, u.OutputTokensS)
		r.usage = &llm.Usage{InputTokens: in + u.CacheReadTokens + u.CacheWriteTokens, OutputTokens: outT,
			CacheReadTokens: u.CacheReadTokens, CacheWriteTokens: u.CacheWriteTokens}
	}
	return r, nil
}

// cursorToolArg is what a Cursor tool call names that can open a file: a
// shell command, or the path a read, grep, ls or glob call is given.
func cursorToolArg(name string, args map[string]any) string {
	if name == "shellToolCall" {
		s, _ := args["command"].(string)
		return s
	}
	for _, k := range []string{"path", "targetFile", "filePath"} {
		if s, ok := args[k].(string); ok && s != "" {
			return s
		}
	}
	return ""
}

// errorText is a tool error's message: a string, or the message field of
// an object, or the object as JSON; at most 200 bytes.
func errorText(v any) string {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case map[string]any:
		for _, k := range []string{"error", "message", "errorMessage", "stderr"} {
			if m, ok := x[k].(string); ok && m != "" {
				s = m
				break
			}
		}
		if s == "" {
			b, _ := json.Marshal(x)
			s = string(b)
		}
	default:
		b, _ := json.Marshal(x)
		s = string(b)
	}
	s = strings.Join(strings.Fields(s), " ")
	return string(head([]byte(s), 200))
}
