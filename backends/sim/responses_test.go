package sim

import (
	"encoding/json"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
)

func responsesClient(ts *httptest.Server) openai.Client {
	return openai.NewClient(option.WithBaseURL(ts.URL+"/v1"), option.WithAPIKey("test-key"), option.WithMaxRetries(0))
}

// execCommandTool is Codex CLI's shell tool as it declares it.
func execCommandTool() responses.ToolUnionParam {
	return responses.ToolParamOfFunction("exec_command", map[string]any{
		"type": "object", "required": []string{"cmd"},
		"properties": map[string]any{"cmd": map[string]any{"type": "string"}, "workdir": map[string]any{"type": "string"}},
	}, false)
}

// TestResponsesAPIToolLoopWithOpenAISDK drives the sim through the
// Responses API with the official Go SDK, streaming and not, as Codex
// does: a skill listing and a question; the sim reads the skill with
// exec_command; given the skill's text as the call's output it answers,
// right exactly when the skill holds the question's rules.
func TestResponsesAPIToolLoopWithOpenAISDK(t *testing.T) {
	t.Parallel()
	s := NewServer(quiet(), ServerOptions{APIKey: "test-key"})
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	c := responsesClient(ts)
	skill, gold := agentSkill(t)

	first := []responses.ResponseInputItemUnionParam{
		responses.ResponseInputItemParamOfMessage(codexSkills, responses.EasyInputMessageRoleDeveloper),
		responses.ResponseInputItemParamOfMessage(simbench.UserPrompt(question), responses.EasyInputMessageRoleUser),
	}
	params := func(items []responses.ResponseInputItemUnionParam) responses.ResponseNewParams {
		return responses.ResponseNewParams{
			Model: "sim-target", Instructions: openai.String("You are a coding agent."),
			Input: responses.ResponseNewParamsInputUnion{OfInputItemList: items},
			Tools: []responses.ToolUnionParam{execCommandTool()},
		}
	}
	for _, stream := range []bool{false, true} {
		name := map[bool]string{false: "json", true: "sse"}[stream]
		call := func(items []responses.ResponseInputItemUnionParam) *responses.Response {
			t.Helper()
			if !stream {
				r, err := c.Responses.New(t.Context(), params(items))
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				return r
			}
			st := c.Responses.NewStreaming(t.Context(), params(items))
			var types []string
			var final *responses.Response
			var text strings.Builder
			for st.Next() {
				ev := st.Current()
				types = append(types, ev.Type)
				switch ev.Type {
				case "response.output_text.delta":
					text.WriteString(ev.Delta)
				case "response.completed":
					r := ev.Response
					final = &r
				}
			}
			if err := st.Err(); err != nil {
				t.Fatalf("%s: stream: %v", name, err)
			}
			if final == nil || types[0] != "response.created" || types[len(types)-1] != "response.completed" ||
				!slices.Contains(types, "response.output_item.done") {
				t.Fatalf("%s: events %v, want response.created ... response.output_item.done ... response.completed", name, types)
			}
			if final.OutputText() != text.String() {
				t.Fatalf("%s: text deltas %q != completed output %q", name, text.String(), final.OutputText())
			}
			return final
		}

		r1 := call(first)
		var fc *responses.ResponseFunctionToolCall
		for _, it := range r1.Output {
			if it.Type == "function_call" {
				v := it.AsFunctionCall()
				fc = &v
			}
		}
		if fc == nil || fc.Name != "exec_command" || fc.CallID == "" {
			t.Fatalf("%s: first reply %s, want an exec_command call", name, r1.RawJSON())
		}
		var args struct{ Cmd string }
		if err := json.Unmarshal([]byte(fc.Arguments), &args); err != nil || args.Cmd != "cat /ws/.agents/skills/skillfleet-target/SKILL.md" {
			t.Fatalf("%s: arguments %q, want a cat of the listed SKILL.md", name, fc.Arguments)
		}
		if r1.Usage.InputTokens <= 0 || r1.Usage.OutputTokens <= 0 || r1.Usage.TotalTokens != r1.Usage.InputTokens+r1.Usage.OutputTokens {
			t.Fatalf("%s: usage %+v", name, r1.Usage)
		}

		answer := func(output string) (*responses.Response, string) {
			items := append(slices.Clone(first),
				responses.ResponseInputItemParamOfFunctionCall(fc.Arguments, fc.CallID, fc.Name),
				responses.ResponseInputItemUnionParam{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
					CallID: openai.String(fc.CallID), Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: openai.String(output)}}},
			)
			r := call(items)
			return r, simbench.ExtractAnswer(r.OutputText())
		}
		r2, got := answer("---\nname: skillfleet-target\ndescription: d\n---\n\n" + skill)
		if got != gold || r2.Status != "completed" {
			t.Fatalf("%s: with the skill read: answer %q status %s, want %q", name, got, r2.Status, gold)
		}
		if _, got := answer("# Records\n- Be careful.\n"); got == gold {
			t.Fatalf("%s: a skill without the rules still gave the gold answer %q", name, got)
		}
	}
	st := s.Stats()
	if st.Served != 6 || st.Models["sim-target"].Served != 6 || st.InputTokens <= 0 {
		t.Fatalf("stats %+v, want 6 served", st)
	}
	log := s.RequestLog()
	if len(log) != 6 || log[0].Action != "read_skill" || log[0].API != APIResponses || log[1].Action != "answer" || log[1].ToolResults != 1 || !log[3].Stream {
		t.Fatalf("request log %+v", log)
	}
	var sum int64
	for _, e := range log {
		sum += e.InputTokens
	}
	if sum != st.InputTokens {
		t.Fatalf("request log input tokens %d != stats %d", sum, st.InputTokens)
	}
}

// TestResponsesAPIPlainRequests: a request without tools is an ordinary
// sim request (here the sim benchmark prompt, and an input string), and a
// wrong key is refused in the OpenAI error format.
func TestResponsesAPIPlainRequests(t *testing.T) {
	t.Parallel()
	_, ts := setupServer(t, ServerOptions{APIKey: "test-key"})
	c := responsesClient(ts)
	skill, gold := agentSkill(t)
	r, err := c.Responses.New(t.Context(), responses.ResponseNewParams{
		Model: "sim-target", Instructions: openai.String(simbench.SystemPrompt(skill)),
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(simbench.UserPrompt(question))},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := simbench.ExtractAnswer(r.OutputText()); got != gold && got == "" {
		t.Fatalf("answer %q", got)
	}
	if r.Object != "response" || r.ID == "" || r.Model != "sim-target" {
		t.Fatalf("response %s", r.RawJSON())
	}
	bad := openai.NewClient(option.WithBaseURL(ts.URL+"/v1"), option.WithAPIKey("wrong"), option.WithMaxRetries(0))
	_, err = bad.Responses.New(t.Context(), responses.ResponseNewParams{Model: "m", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}})
	var apiErr *openai.Error
	if !asError(err, &apiErr) || apiErr.StatusCode != 401 {
		t.Fatalf("wrong key: %v, want a 401 *openai.Error", err)
	}
}
