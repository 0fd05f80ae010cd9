// Package openai is the llm.Model for OpenAI's Chat Completions API, Azure
// OpenAI, and any server that speaks the same wire format (vLLM, Ollama,
// llama.cpp server, MiniMax, DeepSeek, skillfleet's sim-llm), over
// github.com/sashabaranov/go-openai.
package openai

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// Config configures a Client. APIKey is never logged or put in errors.
type Config struct {
	// BaseURL of the API ("" = https://api.openai.com/v1). For Azure, the
	// resource endpoint (https://NAME.openai.azure.com).
	BaseURL string
	APIKey  string
	// Azure selects the Azure OpenAI wire variant (deployments, api-version).
	Azure      bool
	APIVersion string
	// ThinkingKwargs, when set, is sent as chat_template_kwargs (vLLM/Qwen
	// enable_thinking). Nothing is sent when nil: servers that reject the
	// field are never sent it.
	ThinkingKwargs map[string]any
	// UseMaxCompletionTokens sends max_completion_tokens instead of
	// max_tokens (reasoning models). nil = decide by model name.
	UseMaxCompletionTokens *bool
	HTTPClient             *http.Client
}

// Client is an llm.Model over the OpenAI wire format.
type Client struct {
	c   *goopenai.Client
	cfg Config
}

var _ llm.Model = (*Client)(nil)

// New returns a Client.
func New(cfg Config) *Client {
	var oc goopenai.ClientConfig
	if cfg.Azure {
		oc = goopenai.DefaultAzureConfig(cfg.APIKey, cfg.BaseURL)
		if cfg.APIVersion != "" {
			oc.APIVersion = cfg.APIVersion
		}
	} else {
		oc = goopenai.DefaultConfig(cfg.APIKey)
		if cfg.BaseURL != "" {
			oc.BaseURL = strings.TrimRight(cfg.BaseURL, "/")
		}
	}
	base := cfg.HTTPClient
	if base == nil {
		base = &http.Client{Transport: http.DefaultTransport}
	}
	rt := base.Transport
	if rt == nil {
		rt = http.DefaultTransport
	}
	oc.HTTPClient = &http.Client{Transport: &headerTap{next: rt}, Timeout: base.Timeout}
	return &Client{c: goopenai.NewClientWithConfig(oc), cfg: cfg}
}

// headerTap records response headers the SDK does not expose (Retry-After)
// into a holder carried by the request's context.
type headerTap struct{ next http.RoundTripper }

type tapKey struct{}

type tapHolder struct {
	mu         sync.Mutex
	retryAfter time.Duration
}

func (h *headerTap) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := h.next.RoundTrip(r)
	if err == nil && resp != nil {
		if holder, ok := r.Context().Value(tapKey{}).(*tapHolder); ok {
			if d, ok := ParseRetryAfter(resp.Header.Get("Retry-After"), time.Now()); ok {
				holder.mu.Lock()
				holder.retryAfter = d
				holder.mu.Unlock()
			}
		}
	}
	return resp, err
}

// ParseRetryAfter reads a Retry-After header: delay-seconds or an HTTP date.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 {
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		d := t.Sub(now)
		if d < 0 {
			d = 0
		}
		return d, true
	}
	return 0, false
}

func reasoningModel(model string) bool {
	m := strings.ToLower(model)
	return strings.HasPrefix(m, "o1") || strings.HasPrefix(m, "o3") || strings.HasPrefix(m, "o4") || strings.HasPrefix(m, "gpt-5")
}

// Chat implements llm.Model.
func (c *Client) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	holder := &tapHolder{}
	ctx = context.WithValue(ctx, tapKey{}, holder)
	creq := goopenai.ChatCompletionRequest{Model: req.Model, Stop: req.Stop, ReasoningEffort: req.ReasoningEffort}
	if req.Temperature != nil {
		creq.Temperature = float32(*req.Temperature)
	}
	if req.Seed != nil {
		s := int(*req.Seed)
		creq.Seed = &s
	}
	useMCT := reasoningModel(req.Model)
	if c.cfg.UseMaxCompletionTokens != nil {
		useMCT = *c.cfg.UseMaxCompletionTokens
	}
	if req.MaxTokens > 0 {
		if useMCT {
			creq.MaxCompletionTokens = req.MaxTokens
		} else {
			creq.MaxTokens = req.MaxTokens
		}
	}
	if req.JSONMode {
		creq.ResponseFormat = &goopenai.ChatCompletionResponseFormat{Type: goopenai.ChatCompletionResponseFormatTypeJSONObject}
	}
	if c.cfg.ThinkingKwargs != nil {
		creq.ChatTemplateKwargs = c.cfg.ThinkingKwargs
	}
	for _, m := range req.Messages {
		creq.Messages = append(creq.Messages, toWire(m))
	}
	for _, t := range req.Tools {
		creq.Tools = append(creq.Tools, goopenai.Tool{Type: goopenai.ToolTypeFunction, Function: &goopenai.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: t.Parameters,
		}})
	}
	resp, err := c.c.CreateChatCompletion(ctx, creq)
	if err != nil {
		holder.mu.Lock()
		ra := holder.retryAfter
		holder.mu.Unlock()
		return nil, classify(ctx, err, ra)
	}
	if len(resp.Choices) == 0 {
		return nil, &llm.Error{Kind: llm.KindInvalidReply, Msg: "reply has no choices"}
	}
	ch := resp.Choices[0]
	out := &llm.Response{
		Content: ch.Message.Content, FinishReason: string(ch.FinishReason), Model: resp.Model, Attempts: 1,
		Usage: llm.Usage{InputTokens: int64(resp.Usage.PromptTokens), OutputTokens: int64(resp.Usage.CompletionTokens)},
	}
	if d := resp.Usage.PromptTokensDetails; d != nil {
		out.Usage.CacheReadTokens = int64(d.CachedTokens)
	}
	if d := resp.Usage.CompletionTokensDetails; d != nil {
		out.Usage.ReasoningTokens = int64(d.ReasoningTokens)
	}
	for _, tc := range ch.Message.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return out, nil
}

func toWire(m llm.Message) goopenai.ChatCompletionMessage {
	w := goopenai.ChatCompletionMessage{Role: m.Role, Name: m.Name, ToolCallID: m.ToolCallID}
	if len(m.Parts) > 0 {
		for _, p := range m.Parts {
			switch p.Type {
			case "image":
				w.MultiContent = append(w.MultiContent, goopenai.ChatMessagePart{Type: goopenai.ChatMessagePartTypeImageURL,
					ImageURL: &goopenai.ChatMessageImageURL{URL: p.ImageURL, Detail: goopenai.ImageURLDetail(p.Detail)}})
			default:
				w.MultiContent = append(w.MultiContent, goopenai.ChatMessagePart{Type: goopenai.ChatMessagePartTypeText, Text: p.Text})
			}
		}
	} else {
		w.Content = m.Content
	}
	for _, tc := range m.ToolCalls {
		w.ToolCalls = append(w.ToolCalls, goopenai.ToolCall{ID: tc.ID, Type: goopenai.ToolTypeFunction,
			Function: goopenai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments}})
	}
	return w
}

// classify maps an SDK error to a typed llm.Error. Messages come from the
// server or the transport and never contain the API key.
func classify(ctx context.Context, err error, retryAfter time.Duration) error {
	var apiErr *goopenai.APIError
	var reqErr *goopenai.RequestError
	status := 0
	msg := ""
	switch {
	case errors.As(err, &apiErr):
		status, msg = apiErr.HTTPStatusCode, apiErr.Message
	case errors.As(err, &reqErr):
		status = reqErr.HTTPStatusCode
		msg = strings.TrimSpace(string(reqErr.Body))
		if len(msg) > 300 {
			msg = msg[:300]
		}
		if status >= 200 && status < 300 {
			return &llm.Error{Kind: llm.KindInvalidReply, Status: status, Msg: "malformed reply body: " + msg}
		}
	}
	if status != 0 {
		e := &llm.Error{Status: status, Msg: msg}
		switch {
		case status == http.StatusTooManyRequests:
			e.Kind, e.RetryAfter = llm.KindRateLimited, retryAfter
		case status == http.StatusUnauthorized || status == http.StatusForbidden:
			e.Kind = llm.KindAuth
		case status == http.StatusRequestTimeout:
			e.Kind = llm.KindTimeout
		case status >= 500:
			e.Kind, e.RetryAfter = llm.KindServer, retryAfter
		default:
			e.Kind = llm.KindInvalidRequest
		}
		return e
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() == context.DeadlineExceeded:
		return &llm.Error{Kind: llm.KindTimeout, Msg: "model call timed out", Err: context.DeadlineExceeded}
	case errors.Is(err, context.Canceled):
		return &llm.Error{Kind: llm.KindCancelled, Err: context.Canceled}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &llm.Error{Kind: llm.KindTimeout, Msg: "model call timed out"}
	}
	var se interface{ Error() string }
	if errors.As(err, &se) && strings.Contains(err.Error(), "invalid character") {
		return &llm.Error{Kind: llm.KindInvalidReply, Msg: "reply is not JSON"}
	}
	return &llm.Error{Kind: llm.KindTransport, Msg: fmt.Sprintf("%v", redactURLs(err.Error()))}
}

// redactURLs drops query strings (which may carry api keys on some servers).
func redactURLs(s string) string {
	if i := strings.Index(s, "?"); i >= 0 {
		if j := strings.IndexAny(s[i:], " \"'"); j > 0 {
			return s[:i] + s[i+j:]
		}
		return s[:i]
	}
	return s
}
