package nightly

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// An API target (no agent CLI) has no tool loop of its own, so a replay
// whose judge checks that a tool was called (tool_called X) offers X to
// the model as a function it may call, and runs the loop itself: a call
// is recorded and answered with a result saying the replay runs no real
// tool, and the model is asked again, up to maxToolRounds times. The
// judge then reads the recorded calls, as for an agent CLI: a
// "TOOL_CALL: X" line the model wrote does not count.

// maxToolRounds bounds the model's replies that call tools in one replay.
const maxToolRounds = 4

// JudgedTools are the tools a task's judge checks were called (its
// tool_called checks' arguments), in order, each once.
func JudgedTools(t Task) []string {
	var out []string
	for _, c := range t.Judge.Checks {
		if a := strings.TrimSpace(c.Arg); c.Op == OpToolCalled && a != "" && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// badFunctionChars are the characters a function name may not hold
// (OpenAI's and Anthropic's tool names are [A-Za-z0-9_-]{1,64}).
var badFunctionChars = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// toolFunction is the function a judged tool is offered as: its name
// with each character a function name cannot hold made "_", at most 64.
func toolFunction(tool string) string {
	name := badFunctionChars.ReplaceAllString(tool, "_")
	if len(name) > 64 {
		name = name[:64]
	}
	return name
}

// toolArgsSchema is the offered functions' parameters: one free-form
// string of arguments, as a command line takes them.
var toolArgsSchema = json.RawMessage(`{"type":"object","properties":{"args":{"type":"string","description":"the arguments, as on a command line"}}}`)

// offeredTools are the functions an attempt at t offers, and the judged
// tool each function name stands for.
func offeredTools(t Task) ([]llm.Tool, map[string]string) {
	tools := JudgedTools(t)
	if len(tools) == 0 {
		return nil, nil
	}
	var out []llm.Tool
	by := map[string]string{}
	for _, tool := range tools {
		fn := toolFunction(tool)
		if _, dup := by[fn]; dup {
			continue
		}
		by[fn] = tool
		out = append(out, llm.Tool{Name: fn, Parameters: toolArgsSchema,
			Description: fmt.Sprintf("Run %s, one of the user's tools. Call it when the skill or the request says to use %s.", tool, tool)})
	}
	return out, by
}

// noRealTool is what a replay answers a tool call with.
const noRealTool = "The call was recorded. This replay runs no real tool and has no output to give: write your answer now."

// attemptWithTools runs an API attempt at t offering its judged tools:
// the model's reply, the tools it called (each as the judged tool its
// function stands for, in the order called), the messages of the whole
// exchange after msgs, and an infrastructure error.
func attemptWithTools(ctx context.Context, rec *bench.Recorder, m llm.Model, req *llm.Request, tools []llm.Tool, by map[string]string) (string, []string, []llm.Message, error) {
	req.Tools = tools
	calls := []string{}
	var extra []llm.Message
	for round := 0; ; round++ {
		resp, err := rec.Chat(ctx, m, req)
		if err != nil {
			return "", calls, extra, err
		}
		if len(resp.ToolCalls) == 0 || round == maxToolRounds {
			return resp.Content, calls, extra, nil
		}
		turn := []llm.Message{{Role: llm.RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls}}
		for _, c := range resp.ToolCalls {
			name, ok := by[c.Name]
			if !ok {
				// A function the attempt did not offer is recorded under
				// its own name: it is no call of a judged tool.
				name = c.Name
			}
			calls = append(calls, name)
			turn = append(turn, llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Name: c.Name, Content: noRealTool})
		}
		extra = append(extra, turn...)
		next := *req
		next.Messages = append(slices.Clip(req.Messages), turn...)
		req = &next
	}
}

// toolsLead is the line an API replay's answer leads with when it was
// offered tools: the calls it made, as an agent CLI's tools note names
// them, so that the replay's evidence and the reflector see them.
func toolsLead(calls []string) string { return prompts.ToolsNoteLine(calls) }
