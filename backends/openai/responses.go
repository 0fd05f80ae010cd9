package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/skillfleet/skillfleet/backends/internal/httpx"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// Wire APIs (Config.API).
const (
	// APIAuto sends the models of Config.ResponsesModels to the Responses
	// API and the rest to Chat Completions.
	APIAuto = ""
	// APIChat always sends Chat Completions (POST /chat/completions).
	APIChat = "chat"
	// APIResponses always sends the Responses API (POST /responses).
	APIResponses = "responses"
)

// DefaultResponsesModels are the model families served only through the
// Responses API (the codex family and the pro models), as SkillOpt routes
// them: a name equal to one, or starting with it and "-".
var DefaultResponsesModels = []string{"gpt-5-codex", "gpt-5.1-codex", "gpt-5.2-codex", "gpt-5.3-codex", "codex-mini", "gpt-5.4-pro"}

// DefaultAzureResponsesAPIVersion is the api-version of Azure's Responses
// API when the configured one is DefaultAzureAPIVersion (which predates it).
const DefaultAzureResponsesAPIVersion = "2025-04-01-preview"

// maxReplyBytes bounds a Responses API reply body read into memory.
const maxReplyBytes = 64 << 20

// UsesResponses reports whether a call for model goes to the Responses API.
func (c *Client) UsesResponses(model string) bool {
	switch c.cfg.API {
	case APIResponses:
		return true
	case APIChat:
		return false
	}
	for _, name := range []string{model, c.cfg.Deployment} {
		n := strings.ToLower(name)
		for _, m := range c.cfg.ResponsesModels {
			m = strings.ToLower(m)
			if n != "" && m != "" && (n == m || strings.HasPrefix(n, m+"-")) {
				return true
			}
		}
	}
	return false
}

// The Responses API's wire shapes (the fields skillfleet sends and reads).
type (
	respRequest struct {
		Model           string          `json:"model"`
		Instructions    string          `json:"instructions,omitempty"`
		Input           []respItem      `json:"input"`
		Tools           []respTool      `json:"tools,omitempty"`
		MaxOutputTokens int             `json:"max_output_tokens,omitempty"`
		Temperature     *float64        `json:"temperature,omitempty"`
		Reasoning       *respReasoning  `json:"reasoning,omitempty"`
		Text            *respTextConfig `json:"text,omitempty"`
		Store           bool            `json:"store"`
	}
	respReasoning struct {
		Effort string `json:"effort,omitempty"`
	}
	respTextConfig struct {
		Format struct {
			Type string `json:"type"`
		} `json:"format"`
	}
	respTool struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters"`
	}
	// respItem is an input or output item: a message, a function call, a
	// function call's output, a reasoning item.
	respItem struct {
		Type      string        `json:"type"`
		ID        string        `json:"id,omitempty"`
		Role      string        `json:"role,omitempty"`
		Status    string        `json:"status,omitempty"`
		Content   []respContent `json:"content,omitempty"`
		CallID    string        `json:"call_id,omitempty"`
		Name      string        `json:"name,omitempty"`
		Arguments string        `json:"arguments,omitempty"`
		Output    *string       `json:"output,omitempty"`
	}
	respContent struct {
		Type     string `json:"type"`
		Text     string `json:"text,omitempty"`
		Refusal  string `json:"refusal,omitempty"`
		ImageURL string `json:"image_url,omitempty"`
		Detail   string `json:"detail,omitempty"`
	}
	respReply struct {
		ID                string     `json:"id"`
		Object            string     `json:"object"`
		Status            string     `json:"status"`
		Model             string     `json:"model"`
		Output            []respItem `json:"output"`
		Usage             *respUsage `json:"usage"`
		IncompleteDetails *struct {
			Reason string `json:"reason"`
		} `json:"incomplete_details"`
		Error *respError `json:"error"`
	}
	respUsage struct {
		InputTokens        int64 `json:"input_tokens"`
		InputTokensDetails struct {
			CachedTokens int64 `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        int64 `json:"output_tokens"`
		OutputTokensDetails struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
	}
	respError struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}
)

// buildResponses maps a request to a Responses API body. System messages
// become the instructions; tool calls and results become function_call
// and function_call_output items. Seed and Stop have no Responses field
// and are not sent.
func (c *Client) buildResponses(req *llm.Request) (*respRequest, error) {
	w := c.cfg.Wire
	model := req.Model
	if c.cfg.Azure && c.cfg.Deployment != "" {
		model = c.cfg.Deployment
	}
	body := &respRequest{Model: model, MaxOutputTokens: req.MaxTokens}
	if req.Temperature != nil && (!c.IsReasoningModel(req.Model) || w.SendTemperatureToReasoning) {
		t := *req.Temperature
		body.Temperature = &t
	}
	if req.ReasoningEffort != "" && !w.OmitReasoningEffort {
		body.Reasoning = &respReasoning{Effort: req.ReasoningEffort}
	}
	if req.JSONMode {
		body.Text = &respTextConfig{}
		body.Text.Format.Type = "json_object"
	}
	var instructions []string
	for _, m := range req.Messages {
		switch m.Role {
		case llm.RoleSystem:
			instructions = append(instructions, m.Text())
		case llm.RoleTool:
			out := m.Text()
			body.Input = append(body.Input, respItem{Type: "function_call_output", CallID: m.ToolCallID, Output: &out})
		case llm.RoleUser, llm.RoleAssistant:
			it := respItem{Type: "message", Role: m.Role}
			textType := "input_text"
			if m.Role == llm.RoleAssistant {
				textType = "output_text"
			}
			if len(m.Parts) == 0 {
				if m.Content != "" || len(m.ToolCalls) == 0 {
					it.Content = append(it.Content, respContent{Type: textType, Text: m.Content})
				}
			}
			for _, p := range m.Parts {
				switch p.Type {
				case "text", "":
					it.Content = append(it.Content, respContent{Type: textType, Text: p.Text})
				case "image":
					if p.ImageURL == "" {
						return nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: "image part without image_url"}
					}
					if m.Role == llm.RoleAssistant {
						return nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: "the Responses API takes images in user messages only"}
					}
					it.Content = append(it.Content, respContent{Type: "input_image", ImageURL: p.ImageURL, Detail: cmpOr(p.Detail, "auto")})
				default:
					return nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: fmt.Sprintf("unknown message part type %q", p.Type)}
				}
			}
			if len(it.Content) > 0 {
				body.Input = append(body.Input, it)
			}
			for _, tc := range m.ToolCalls {
				body.Input = append(body.Input, respItem{Type: "function_call", CallID: tc.ID, Name: tc.Name, Arguments: tc.Arguments})
			}
		default:
			return nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: fmt.Sprintf("unknown message role %q", m.Role)}
		}
	}
	body.Instructions = strings.Join(instructions, "\n\n")
	for _, t := range req.Tools {
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		body.Tools = append(body.Tools, respTool{Type: "function", Name: t.Name, Description: t.Description, Parameters: params})
	}
	return body, nil
}

// responsesURL is OpenAI's {base}/responses, or Azure's
// {endpoint}/openai/responses?api-version=V (the deployment travels as
// the body's model).
func (c *Client) responsesURL() string {
	if !c.cfg.Azure {
		return strings.TrimRight(cmpOr(c.cfg.BaseURL, DefaultBaseURL), "/") + "/responses"
	}
	v := c.cfg.APIVersion
	if v == "" || v == DefaultAzureAPIVersion {
		v = DefaultAzureResponsesAPIVersion
	}
	return strings.TrimRight(c.cfg.BaseURL, "/") + "/openai/responses?api-version=" + url.QueryEscape(v)
}

// authorize sets the key header of a request this package builds itself
// (a token source's bearer is set by the transport).
func (c *Client) authorize(r *http.Request) {
	if c.cfg.APIKey == "" || c.cfg.Tokens != nil {
		return
	}
	if c.cfg.Azure && c.cfg.AzureAuth != AzureAuthBearer {
		r.Header.Set("api-key", c.cfg.APIKey)
		return
	}
	r.Header.Set("Authorization", "Bearer "+c.cfg.APIKey)
}

// respond makes one Responses API call.
func (c *Client) respond(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	body, err := c.buildResponses(req)
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: "encode request: " + err.Error()}
	}
	var patch map[string]any
	if len(c.cfg.Wire.ExtraBody) > 0 {
		patch = c.cfg.Wire.ExtraBody
	}
	ctx, call := httpx.Track(ctx, patch)
	hr, err := http.NewRequestWithContext(ctx, http.MethodPost, c.responsesURL(), bytes.NewReader(raw))
	if err != nil {
		return nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: c.red.Msg(err.Error())}
	}
	hr.Header.Set("Content-Type", "application/json")
	c.authorize(hr)
	resp, err := c.hc.Do(hr)
	if err != nil {
		return nil, httpx.TransportError(ctx, err, c.red)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxReplyBytes))
	if err != nil {
		return nil, httpx.TransportError(ctx, err, c.red)
	}
	if resp.StatusCode >= 400 {
		return nil, httpx.StatusError(resp.StatusCode, call.RetryAfter(), errorText(data), c.red)
	}
	out, err := c.parseResponses(resp.StatusCode, data)
	if err == nil {
		cutAtStop(out, req.Stop)
	}
	return out, err
}

// cutAtStop ends the reply at its first stop sequence, as Chat Completions'
// stop does server-side (the Responses API has no such parameter).
func cutAtStop(out *llm.Response, stop []string) {
	cut := -1
	for _, s := range stop {
		if i := strings.Index(out.Content, s); s != "" && i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	if cut >= 0 {
		out.Content, out.FinishReason = out.Content[:cut], "stop"
	}
}

// errorText is the message of an OpenAI error body, or the body itself.
func errorText(data []byte) string {
	var e struct {
		Error *respError `json:"error"`
	}
	if json.Unmarshal(data, &e) == nil && e.Error != nil && e.Error.Message != "" {
		return e.Error.Message
	}
	return string(data)
}

// parseResponses reads a Responses API reply. A body that is empty, not
// JSON, not a response object or without output is KindInvalidReply
// (billed usage attached when it had usage); a response whose status is
// failed carries its error code's kind.
func (c *Client) parseResponses(status int, data []byte) (*llm.Response, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, &llm.Error{Kind: llm.KindInvalidReply, Status: status, Msg: "empty reply body"}
	}
	var r respReply
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, &llm.Error{Kind: llm.KindInvalidReply, Status: status, Msg: "reply is not a Responses API response: " + c.red.Msg(err.Error())}
	}
	var u llm.Usage
	if r.Usage != nil {
		u = llm.Usage{
			InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens,
			CacheReadTokens: r.Usage.InputTokensDetails.CachedTokens, ReasoningTokens: r.Usage.OutputTokensDetails.ReasoningTokens,
		}
	}
	fail := func(e *llm.Error) error {
		if u != (llm.Usage{}) {
			return &llm.BilledError{Usage: u, Err: e}
		}
		return e
	}
	if r.Object != "response" {
		return nil, fail(&llm.Error{Kind: llm.KindInvalidReply, Status: status, Msg: fmt.Sprintf("reply object is %q, not a response", r.Object)})
	}
	if r.Status == "failed" || r.Error != nil {
		kind, msg := llm.KindServer, "response failed"
		if r.Error != nil {
			msg = "response failed: " + r.Error.Code + ": " + r.Error.Message
			switch r.Error.Code {
			case "rate_limit_exceeded":
				kind = llm.KindRateLimited
			case "invalid_prompt", "invalid_request_error":
				kind = llm.KindInvalidRequest
			}
		}
		return nil, fail(&llm.Error{Kind: kind, Status: status, Msg: c.red.Msg(msg)})
	}
	out := &llm.Response{Model: r.Model, Attempts: 1, Usage: u}
	var text, refusal []string
	for _, it := range r.Output {
		switch it.Type {
		case "message":
			for _, p := range it.Content {
				switch p.Type {
				case "output_text":
					text = append(text, p.Text)
				case "refusal":
					refusal = append(refusal, p.Refusal)
				}
			}
		case "function_call":
			if it.Name == "" {
				return nil, fail(&llm.Error{Kind: llm.KindInvalidReply, Status: status, Msg: "function_call item without a name"})
			}
			out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: cmpOr(it.CallID, it.ID), Name: it.Name, Arguments: it.Arguments})
		}
	}
	out.Content = strings.Join(text, "")
	if out.Content == "" && len(refusal) > 0 {
		out.Content = strings.Join(refusal, "")
	}
	switch {
	case r.Status == "incomplete":
		out.FinishReason = "length"
		if r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "content_filter" {
			out.FinishReason = "content_filter"
		}
	case len(out.ToolCalls) > 0:
		out.FinishReason = "tool_calls"
	default:
		out.FinishReason = "stop"
	}
	if len(text) == 0 && len(refusal) == 0 && len(out.ToolCalls) == 0 && r.Status != "incomplete" {
		return nil, fail(&llm.Error{Kind: llm.KindInvalidReply, Status: status, Msg: "response has no output text and no function call"})
	}
	return out, nil
}

// ErrNoCheck is returned by Check when the server offers no cheap
// authenticated request to check credentials with.
var ErrNoCheck = errors.New("the server has no model list to check credentials against")

// Check makes one cheap authenticated request, GET /models (Azure:
// /openai/models), to prove the credentials before a run's first call. A
// refused key or sign-in is KindAuth; an unreachable server
// KindTransport; a server without the list (404, 405) ErrNoCheck.
func (c *Client) Check(ctx context.Context) error {
	_, err := c.signed(ctx, func(ctx context.Context) (*llm.Response, error) {
		u := strings.TrimRight(cmpOr(c.cfg.BaseURL, DefaultBaseURL), "/") + "/models"
		if c.cfg.Azure {
			u = strings.TrimRight(c.cfg.BaseURL, "/") + "/openai/models?api-version=" + url.QueryEscape(cmpOr(c.cfg.APIVersion, DefaultAzureAPIVersion))
		}
		ctx, call := httpx.Track(ctx, nil)
		hr, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: c.red.Msg(err.Error())}
		}
		c.authorize(hr)
		resp, err := c.hc.Do(hr)
		if err != nil {
			return nil, httpx.TransportError(ctx, err, c.red)
		}
		defer resp.Body.Close()
		data, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		switch {
		case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed:
			return nil, ErrNoCheck
		case resp.StatusCode >= 400:
			return nil, httpx.StatusError(resp.StatusCode, call.RetryAfter(), errorText(data), c.red)
		}
		return nil, nil
	})
	return err
}
