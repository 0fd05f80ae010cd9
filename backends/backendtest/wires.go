package backendtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// jsonString escapes s for a JSON string body (without the quotes).
func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b[1 : len(b)-1])
}

// openAIRequest is the Chat Completions request body.
type openAIRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
		ToolCalls  []struct {
			ID string `json:"id"`
		} `json:"tool_calls"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format"`
	Temperature         *float64 `json:"temperature"`
	MaxTokens           int      `json:"max_tokens"`
	MaxCompletionTokens int      `json:"max_completion_tokens"`
	Stop                []string `json:"stop"`
	Seed                *int64   `json:"seed"`
}

func parseOpenAI(body []byte) (Seen, error) {
	var r openAIRequest
	if err := json.Unmarshal(body, &r); err != nil {
		return Seen{}, fmt.Errorf("request body: %w", err)
	}
	if r.MaxTokens > 0 && r.MaxCompletionTokens > 0 {
		return Seen{}, fmt.Errorf("request sets both max_tokens and max_completion_tokens")
	}
	s := Seen{Model: r.Model, Temperature: r.Temperature, MaxTokens: max(r.MaxTokens, r.MaxCompletionTokens), Stop: r.Stop, Seed: r.Seed}
	s.JSONMode = r.ResponseFormat != nil && r.ResponseFormat.Type == "json_object"
	for _, t := range r.Tools {
		if t.Type != "function" {
			return Seen{}, fmt.Errorf("tool type %q, want function", t.Type)
		}
		s.Tools = append(s.Tools, t.Function.Name)
	}
	for _, m := range r.Messages {
		for _, tc := range m.ToolCalls {
			s.ToolCalls = append(s.ToolCalls, tc.ID)
		}
		if m.Role == "tool" {
			s.ToolResults = append(s.ToolResults, m.ToolCallID)
			continue
		}
		if len(m.Content) == 0 || string(m.Content) == "null" {
			continue
		}
		var text string
		if json.Unmarshal(m.Content, &text) == nil {
			if m.Role == "system" {
				s.System += text
			} else {
				s.Texts = append(s.Texts, text)
			}
			continue
		}
		var parts []struct {
			Type     string `json:"type"`
			Text     string `json:"text"`
			ImageURL *struct {
				URL    string `json:"url"`
				Detail string `json:"detail"`
			} `json:"image_url"`
		}
		if err := json.Unmarshal(m.Content, &parts); err != nil {
			return Seen{}, fmt.Errorf("message content is neither a string nor parts: %w", err)
		}
		for _, p := range parts {
			switch p.Type {
			case "text":
				s.Texts = append(s.Texts, p.Text)
			case "image_url":
				if p.ImageURL == nil {
					return Seen{}, fmt.Errorf("image_url part without image_url")
				}
				s.Images = append(s.Images, p.ImageURL.URL)
			default:
				return Seen{}, fmt.Errorf("unknown content part type %q", p.Type)
			}
		}
	}
	return s, nil
}

// OpenAI is OpenAI's Chat Completions wire format: POST
// /v1/chat/completions with a bearer key. The model's base URL is the
// server URL + "/v1".
func OpenAI() Wire {
	return Wire{
		Name: "openai", Path: "/v1/chat/completions",
		Authorized: func(h http.Header) bool { return h.Get("Authorization") == "Bearer "+APIKey },
		Parse:      parseOpenAI,
		Reply:      fixture("openai_chat.json"), WantContent: "The capital of France is Paris.", WantModel: "gpt-4o-2024-08-06", WantFinish: "stop",
		WantUsage: llm.Usage{InputTokens: 1117, OutputTokens: 46, CacheReadTokens: 1024, ReasoningTokens: 12},
		ToolReply: fixture("openai_tool.json"), WantToolCall: llm.ToolCall{ID: "call_abc123", Name: "get_weather", Arguments: `{"city":"Paris"}`},
		ErrorBody: func(status int, msg string) []byte {
			typ := map[int]string{429: "rate_limit_exceeded", 401: "invalid_request_error", 400: "invalid_request_error"}[status]
			return fmt.Appendf(nil, string(fixture("openai_error.json")), jsonString(msg), cmpOr(typ, "server_error"))
		},
	}
}

// Azure is Azure OpenAI's wire format: POST
// /openai/deployments/<deployment>/chat/completions?api-version=<v> with
// the key in the api-key header. The model's endpoint is the server URL.
func Azure(deployment, apiVersion string) Wire {
	w := OpenAI()
	w.Name = "azure"
	w.Path = "/openai/deployments/" + deployment + "/chat/completions"
	w.Query = url.Values{"api-version": {apiVersion}}
	w.Authorized = func(h http.Header) bool { return h.Get("api-key") == APIKey && h.Get("Authorization") == "" }
	w.Reply, w.WantModel = fixture("azure_chat.json"), "gpt-4o-2024-11-20"
	w.ErrorBody = func(status int, msg string) []byte {
		return fmt.Appendf(nil, string(fixture("azure_error.json")), jsonString(msg), fmt.Sprint(status))
	}
	return w
}

// AzureBearer is [Azure] authenticated with an Entra ID (AAD) bearer token.
func AzureBearer(deployment, apiVersion string) Wire {
	w := Azure(deployment, apiVersion)
	w.Name = "azure_bearer"
	w.Authorized = func(h http.Header) bool { return h.Get("Authorization") == "Bearer "+APIKey && h.Get("api-key") == "" }
	return w
}

type anthropicBlock struct {
	Type   string `json:"type"`
	Text   string `json:"text"`
	Source *struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type"`
		Data      string `json:"data"`
		URL       string `json:"url"`
	} `json:"source"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
}

func parseAnthropic(body []byte) (Seen, error) {
	var r struct {
		Model     string          `json:"model"`
		MaxTokens int             `json:"max_tokens"`
		System    json.RawMessage `json:"system"`
		Messages  []struct {
			Role    string           `json:"role"`
			Content []anthropicBlock `json:"content"`
		} `json:"messages"`
		Tools []struct {
			Name        string          `json:"name"`
			InputSchema json.RawMessage `json:"input_schema"`
		} `json:"tools"`
		Temperature   *float64 `json:"temperature"`
		StopSequences []string `json:"stop_sequences"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return Seen{}, fmt.Errorf("request body: %w", err)
	}
	if r.MaxTokens <= 0 {
		return Seen{}, fmt.Errorf("max_tokens is required")
	}
	s := Seen{Model: r.Model, Temperature: r.Temperature, MaxTokens: r.MaxTokens, Stop: r.StopSequences}
	if len(r.System) > 0 {
		var text string
		if json.Unmarshal(r.System, &text) != nil {
			var blocks []anthropicBlock
			if err := json.Unmarshal(r.System, &blocks); err != nil {
				return Seen{}, fmt.Errorf("system is neither a string nor blocks: %w", err)
			}
			for _, b := range blocks {
				text += b.Text
			}
		}
		// JSON mode is an instruction appended to the system prompt.
		text, s.JSONMode = strings.CutSuffix(text, "\n\n"+jsonInstruction)
		if !s.JSONMode {
			text, s.JSONMode = strings.CutSuffix(text, jsonInstruction)
		}
		s.System = text
	}
	for _, t := range r.Tools {
		if len(t.InputSchema) == 0 {
			return Seen{}, fmt.Errorf("tool %s without input_schema", t.Name)
		}
		s.Tools = append(s.Tools, t.Name)
	}
	for i, m := range r.Messages {
		if m.Role != "user" && m.Role != "assistant" {
			return Seen{}, fmt.Errorf("message role %q", m.Role)
		}
		if i > 0 && r.Messages[i-1].Role == m.Role {
			return Seen{}, fmt.Errorf("two %s turns in a row", m.Role)
		}
		for _, b := range m.Content {
			switch b.Type {
			case "text":
				s.Texts = append(s.Texts, b.Text)
			case "image":
				switch {
				case b.Source == nil:
					return Seen{}, fmt.Errorf("image block without source")
				case b.Source.Type == "base64":
					s.Images = append(s.Images, "data:"+b.Source.MediaType+";base64,"+b.Source.Data)
				case b.Source.Type == "url":
					s.Images = append(s.Images, b.Source.URL)
				default:
					return Seen{}, fmt.Errorf("image source type %q", b.Source.Type)
				}
			case "tool_use":
				if !json.Valid(b.Input) {
					return Seen{}, fmt.Errorf("tool_use input is not JSON")
				}
				s.ToolCalls = append(s.ToolCalls, b.ID)
			case "tool_result":
				s.ToolResults = append(s.ToolResults, b.ToolUseID)
			default:
				return Seen{}, fmt.Errorf("unknown block type %q", b.Type)
			}
		}
	}
	return s, nil
}

// jsonInstruction mirrors anthropic.JSONInstruction (this package imports
// no backend).
const jsonInstruction = "Reply with a single JSON object and nothing else: no prose, no code fences."

// Anthropic is the Messages API wire format: POST /v1/messages with the
// key in x-api-key and an anthropic-version header. The model's base URL
// is the server URL.
func Anthropic() Wire {
	return Wire{
		Name: "anthropic", Path: "/v1/messages",
		Authorized: func(h http.Header) bool { return h.Get("x-api-key") == APIKey && h.Get("anthropic-version") != "" },
		Parse:      parseAnthropic,
		Reply:      fixture("anthropic_message.json"), WantContent: "The capital of France is Paris.", WantModel: "claude-sonnet-4-5-20250929", WantFinish: "stop",
		WantUsage: llm.Usage{InputTokens: 21 + 188 + 1024, OutputTokens: 46, CacheReadTokens: 1024, CacheWriteTokens: 188},
		ToolReply: fixture("anthropic_tool.json"), WantToolCall: llm.ToolCall{ID: "toolu_01A09q90qw90lq917835lq9", Name: "get_weather", Arguments: `{"city":"Paris"}`},
		ErrorBody: func(status int, msg string) []byte {
			typ := map[int]string{400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
				413: "request_too_large", 429: "rate_limit_error", 500: "api_error", 529: "overloaded_error"}[status]
			return fmt.Appendf(nil, string(fixture("anthropic_error.json")), jsonString(msg), cmpOr(typ, "api_error"))
		},
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// responsesItem is an input item of a Responses API request.
type responsesItem struct {
	Type    string `json:"type"`
	Role    string `json:"role"`
	Content []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL string `json:"image_url"`
	} `json:"content"`
	CallID string  `json:"call_id"`
	Name   string  `json:"name"`
	Output *string `json:"output"`
}

func parseResponses(body []byte) (Seen, error) {
	var r struct {
		Model        string          `json:"model"`
		Instructions string          `json:"instructions"`
		Input        []responsesItem `json:"input"`
		Tools        []struct {
			Type string `json:"type"`
			Name string `json:"name"`
		} `json:"tools"`
		Text *struct {
			Format struct {
				Type string `json:"type"`
			} `json:"format"`
		} `json:"text"`
		Temperature     *float64        `json:"temperature"`
		MaxOutputTokens int             `json:"max_output_tokens"`
		Stop            json.RawMessage `json:"stop"`
		Seed            json.RawMessage `json:"seed"`
		Messages        json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return Seen{}, fmt.Errorf("request body: %w", err)
	}
	// The Responses API rejects Chat Completions fields.
	for name, f := range map[string]json.RawMessage{"stop": r.Stop, "seed": r.Seed, "messages": r.Messages} {
		if len(f) > 0 {
			return Seen{}, fmt.Errorf("unsupported parameter %q for the Responses API", name)
		}
	}
	s := Seen{Model: r.Model, System: r.Instructions, Temperature: r.Temperature, MaxTokens: r.MaxOutputTokens}
	s.JSONMode = r.Text != nil && r.Text.Format.Type == "json_object"
	for _, t := range r.Tools {
		if t.Type != "function" {
			return Seen{}, fmt.Errorf("tool type %q, want function", t.Type)
		}
		s.Tools = append(s.Tools, t.Name)
	}
	for _, it := range r.Input {
		switch it.Type {
		case "function_call":
			s.ToolCalls = append(s.ToolCalls, it.CallID)
		case "function_call_output":
			if it.Output == nil {
				return Seen{}, fmt.Errorf("function_call_output without output")
			}
			s.ToolResults = append(s.ToolResults, it.CallID)
		case "message", "":
			for _, p := range it.Content {
				switch {
				case p.Type == "input_text" && it.Role == "user", p.Type == "output_text" && it.Role == "assistant":
					s.Texts = append(s.Texts, p.Text)
				case p.Type == "input_image" && it.Role == "user":
					s.Images = append(s.Images, p.ImageURL)
				default:
					return Seen{}, fmt.Errorf("content part %q in a %s message", p.Type, it.Role)
				}
			}
		default:
			return Seen{}, fmt.Errorf("unknown input item type %q", it.Type)
		}
	}
	return s, nil
}

// OpenAIResponses is OpenAI's Responses API: POST /v1/responses with a
// bearer key; system text as instructions, turns as input items, tool
// calls and results as function_call and function_call_output items. It
// has no stop parameter: the backend cuts the reply at a stop sequence
// itself, so the suite sees none on the wire.
func OpenAIResponses() Wire {
	w := OpenAI()
	w.Name, w.Path, w.Parse, w.NoStop = "openai_responses", "/v1/responses", parseResponses, true
	w.Reply, w.WantModel = fixture("responses_message.json"), "gpt-5-codex-2025-09-15"
	w.ToolReply = fixture("responses_tool.json")
	return w
}

// AzureResponses is Azure OpenAI's Responses API: POST
// /openai/responses?api-version=<v> with the deployment as the body's
// model and the key in the api-key header.
func AzureResponses(apiVersion string) Wire {
	w := OpenAIResponses()
	az := Azure("unused", apiVersion)
	w.Name, w.Path, w.Query, w.Authorized, w.ErrorBody = "azure_responses", "/openai/responses", az.Query, az.Authorized, az.ErrorBody
	return w
}
