package exec

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// copilotEvent is one line of `copilot -p --output-format json`: an
// event type and its data.
type copilotEvent struct {
	Type string `json:"type"`
	Data struct {
		Content   string         `json:"content"`
		ToolName  string         `json:"toolName"`
		Arguments map[string]any `json:"arguments"`
		Success   *bool          `json:"success"`
		Error     any            `json:"error"`
		Message   string         `json:"message"`
	} `json:"data"`
	ExitCode *int `json:"exitCode"`
}

// parseCopilot reads the Copilot CLI's JSON-lines events: the last
// assistant.message with text is the reply; tool.execution_start events
// give the commands and paths its tools were given,
// tool.execution_complete events that did not succeed the tool errors;
// a session.error event, or a result event with a non-zero exitCode, is
// the agent's failure. The stream must end with the result event: one
// without it is an *OutputError. Its events carry no token counts (the
// usage comes from --usage-output-file: copilotUsage).
func parseCopilot(out []byte, cut bool) (result, *OutputError) {
	var r result
	s := eventStream{format: OutputCopilotJSON, typeKey: "type", lenient: true}
	ended := false
	var failure []string
	err := s.each(out, cut, func(typ string, line []byte) {
		var ev copilotEvent
		if json.Unmarshal(line, &ev) != nil {
			return
		}
		switch typ {
		case "assistant.message":
			if strings.TrimSpace(ev.Data.Content) != "" {
				r.content = ev.Data.Content
			}
		case "tool.execution_start":
			r.tools++
			r.calls = append(r.calls, prompts.ToolCallName(ev.Data.ToolName, argCommand(ev.Data.Arguments)))
			for _, k := range []string{"command", "path", "skill", "pattern"} {
				if v, ok := ev.Data.Arguments[k].(string); ok && v != "" {
					r.used = append(r.used, v)
					break
				}
			}
		case "tool.execution_complete":
			if ev.Data.Success != nil && !*ev.Data.Success {
				r.toolErrors = append(r.toolErrors, cmpOr(ev.Data.ToolName, "tool")+": "+errorText(cmpOr[any](ev.Data.Error, "failed")))
			}
		case "session.error":
			failure = append(failure, cmpOr(ev.Data.Message, errorText(ev.Data.Error)))
		case "result":
			ended = true
			if ev.ExitCode != nil && *ev.ExitCode != 0 {
				failure = append(failure, fmt.Sprintf("exit code %d", *ev.ExitCode))
			}
		}
	})
	if err != nil {
		return r, err
	}
	if len(failure) > 0 {
		r.failed, r.content = true, strings.Join(failure, "; ")
		return r, nil
	}
	if !ended {
		return r, s.unfinished(out, cut, "result")
	}
	if strings.TrimSpace(r.content) == "" {
		e := s.fail(0, s.lastLine, "no assistant message with text (an empty answer is not scored)")
		e.empty = true
		return r, e
	}
	return r, nil
}

// copilotUsage reads the usage the Copilot CLI wrote to
// copilotUsageFile in dir: the token counts of every model it called.
// nil when the file is missing or holds no counts.
func copilotUsage(dir string) *llm.Usage {
	b, err := os.ReadFile(filepath.Join(dir, copilotUsageFile))
	if err != nil {
		return nil
	}
	var f struct {
		ModelMetrics map[string]struct {
			Usage struct {
				InputTokens      int64 `json:"inputTokens"`
				OutputTokens     int64 `json:"outputTokens"`
				CacheReadTokens  int64 `json:"cacheReadTokens"`
				CacheWriteTokens int64 `json:"cacheWriteTokens"`
				ReasoningTokens  int64 `json:"reasoningTokens"`
			} `json:"usage"`
		} `json:"modelMetrics"`
	}
	if json.Unmarshal(b, &f) != nil || len(f.ModelMetrics) == 0 {
		return nil
	}
	var u llm.Usage
	for _, m := range f.ModelMetrics {
		x := m.Usage
		u.Add(llm.Usage{InputTokens: x.InputTokens + x.CacheReadTokens + x.CacheWriteTokens, OutputTokens: x.OutputTokens,
			CacheReadTokens: x.CacheReadTokens, CacheWriteTokens: x.CacheWriteTokens, ReasoningTokens: x.ReasoningTokens})
	}
	if u.InputTokens == 0 && u.OutputTokens == 0 {
		return nil
	}
	return &u
}
