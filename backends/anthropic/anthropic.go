// Package anthropic is the llm.Model for Anthropic's Messages API
// (POST /v1/messages), written directly on net/http: the wire format is
// small, and the official SDK would add its own retries under ours (and a
// large dependency tree).
//
// Mapping: system messages become the top-level system prompt (one text
// block with cache_control when Config.CacheSystem is set); tool results
// (llm.RoleTool) become tool_result blocks in a user turn, consecutive
// ones merged; images become base64 or url sources. Usage: InputTokens =
// input_tokens + cache_read_input_tokens + cache_creation_input_tokens
// (every prompt token, as llm.Usage defines it), CacheReadTokens and
// CacheWriteTokens the two cache counts. stop_reason is mapped to the
// OpenAI vocabulary (stop, length, tool_calls). JSON mode, which the API
// lacks, appends an instruction to the system prompt.
package anthropic

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/backends/internal/httpx"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// Defaults.
const (
	DefaultBaseURL = "https://api.anthropic.com"
	// DefaultVersion is the anthropic-version header.
	DefaultVersion = "2023-06-01"
	// DefaultMaxTokens is sent when a request sets none (the API requires
	// max_tokens).
	DefaultMaxTokens = 4096
	// StatusOverloaded is Anthropic's "overloaded" status; it maps to
	// KindServer (retryable) and counts as congestion for the limiter.
	StatusOverloaded = 529
)

// JSONInstruction is appended to the system prompt in JSON mode.
const JSONInstruction = "Reply with a single JSON object and nothing else: no prose, no code fences."

// maxBody bounds a reply body.
const maxBody = 32 << 20

// Config configures a Client. APIKey is never logged, printed or put in an
// error.
type Config struct {
	// BaseURL of the API ("" = DefaultBaseURL); "/v1/messages" is appended
	// (or "/messages" when BaseURL already ends in /v1).
	BaseURL string
	// APIKey is sent as x-api-key.
	APIKey string
	// Version is the anthropic-version header ("" = DefaultVersion).
	Version string
	// DefaultMaxTokens applies when a request sets none (0 = DefaultMaxTokens).
	DefaultMaxTokens int
	// CacheSystem marks the system prompt as a prompt-cache breakpoint
	// (cache_control ephemeral), so repeated calls sharing it (one skill,
	// many items) read it from the cache.
	CacheSystem bool
	// CacheTTL is the cache entry's lifetime: "" (the API default, 5m),
	// "5m" or "1h".
	CacheTTL string
	// ThinkingBudget, when > 0, enables extended thinking with that many
	// budget tokens (temperature is then left at the API default).
	ThinkingBudget int
	// Betas are sent in the anthropic-beta header.
	Betas []string
	// HTTPClient sends requests (default: a pooled transport, no client
	// timeout; deadlines come from the context and Request.Timeout).
	HTTPClient *http.Client
	// Now is the clock for HTTP-date Retry-After values (default time.Now).
	Now func() time.Time
}

// String describes the config without its key.
func (c Config) String() string {
	k := "unset"
	if c.APIKey != "" {
		k = httpx.Redacted
	}
	return fmt.Sprintf("anthropic.Config{BaseURL:%q Version:%q CacheSystem:%t APIKey:%s}", httpx.SafeURLString(c.BaseURL), c.Version, c.CacheSystem, k)
}

// GoString is String, so %#v does not print the key either.
func (c Config) GoString() string { return c.String() }

// LogValue implements slog.LogValuer without the key.
func (c Config) LogValue() slog.Value { return slog.StringValue(c.String()) }

// Client is an llm.Model over the Messages API. It is safe for concurrent use.
type Client struct {
	cfg Config
	url string
	hc  *http.Client
	red httpx.Redactor
}

var _ llm.Model = (*Client)(nil)

// New returns a Client. It does not contact the server.
func New(cfg Config) *Client {
	base := strings.TrimRight(cfg.BaseURL, "/")
	if base == "" {
		base = DefaultBaseURL
	}
	u := base + "/v1/messages"
	if strings.HasSuffix(base, "/v1") {
		u = base + "/messages"
	}
	hc := http.Client{}
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient
	}
	next := hc.Transport
	if next == nil {
		next = httpx.NewTransport()
	}
	hc.Transport = &httpx.Transport{Next: next, Now: cfg.Now}
	if cfg.Version == "" {
		cfg.Version = DefaultVersion
	}
	if cfg.DefaultMaxTokens <= 0 {
		cfg.DefaultMaxTokens = DefaultMaxTokens
	}
	return &Client{cfg: cfg, url: u, hc: &hc, red: httpx.NewRedactor(cfg.APIKey)}
}

// String describes the client without its key.
func (c *Client) String() string { return "anthropic(" + c.Endpoint() + ")" }

// Endpoint is the messages URL without credentials or query.
func (c *Client) Endpoint() string { return httpx.SafeURLString(c.url) }

// Wire types of the Messages API.
type (
	wireRequest struct {
		Model         string        `json:"model"`
		MaxTokens     int           `json:"max_tokens"`
		System        any           `json:"system,omitempty"`
		Messages      []wireMessage `json:"messages"`
		Temperature   *float64      `json:"temperature,omitempty"`
		StopSequences []string      `json:"stop_sequences,omitempty"`
		Tools         []wireTool    `json:"tools,omitempty"`
		Thinking      *wireThinking `json:"thinking,omitempty"`
	}
	wireThinking struct {
		Type         string `json:"type"`
		BudgetTokens int    `json:"budget_tokens"`
	}
	wireMessage struct {
		Role    string      `json:"role"`
		Content []wireBlock `json:"content"`
	}
	wireBlock struct {
		Type         string          `json:"type"`
		Text         string          `json:"text,omitempty"`
		Source       *wireSource     `json:"source,omitempty"`
		ID           string          `json:"id,omitempty"`
		Name         string          `json:"name,omitempty"`
		Input        json.RawMessage `json:"input,omitempty"`
		ToolUseID    string          `json:"tool_use_id,omitempty"`
		Content      string          `json:"content,omitempty"`
		CacheControl *cacheControl   `json:"cache_control,omitempty"`
	}
	wireSource struct {
		Type      string `json:"type"`
		MediaType string `json:"media_type,omitempty"`
		Data      string `json:"data,omitempty"`
		URL       string `json:"url,omitempty"`
	}
	cacheControl struct {
		Type string `json:"type"`
		TTL  string `json:"ttl,omitempty"`
	}
	wireTool struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	wireReply struct {
		ID         string      `json:"id"`
		Type       string      `json:"type"`
		Model      string      `json:"model"`
		Content    []wireBlock `json:"content"`
		StopReason string      `json:"stop_reason"`
		Usage      *wireUsage  `json:"usage"`
	}
	wireUsage struct {
		InputTokens              int64 `json:"input_tokens"`
		OutputTokens             int64 `json:"output_tokens"`
		CacheCreationInputTokens int64 `json:"cache_creation_input_tokens"`
		CacheReadInputTokens     int64 `json:"cache_read_input_tokens"`
	}
	wireError struct {
		Type  string `json:"type"`
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
)

// Chat implements llm.Model.
func (c *Client) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	wr, err := c.build(req)
	if err != nil {
		return nil, err
	}
	body, err := json.Marshal(wr)
	if err != nil {
		return nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: "encode request: " + c.red.Msg(err.Error())}
	}
	ctx, call := httpx.Track(ctx, nil)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, c.url, bytes.NewReader(body))
	if err != nil {
		return nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: "bad base url: " + c.red.Msg(httpx.SafeURLString(c.url))}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "application/json")
	hreq.Header.Set("anthropic-version", c.cfg.Version)
	if c.cfg.APIKey != "" {
		hreq.Header.Set("x-api-key", c.cfg.APIKey)
	}
	if len(c.cfg.Betas) > 0 {
		hreq.Header.Set("anthropic-beta", strings.Join(c.cfg.Betas, ","))
	}
	resp, err := c.hc.Do(hreq)
	if err != nil {
		return nil, httpx.TransportError(ctx, err, c.red)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, httpx.TransportError(ctx, err, c.red)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		var we wireError
		msg := string(raw)
		if json.Unmarshal(raw, &we) == nil && we.Error.Message != "" {
			msg = we.Error.Type + ": " + we.Error.Message
		}
		return nil, httpx.StatusError(resp.StatusCode, call.RetryAfter(), msg, c.red)
	}
	return c.reply(resp.StatusCode, raw)
}

func (c *Client) build(req *llm.Request) (*wireRequest, error) {
	wr := &wireRequest{Model: req.Model, MaxTokens: req.MaxTokens, StopSequences: req.Stop}
	if wr.MaxTokens <= 0 {
		wr.MaxTokens = c.cfg.DefaultMaxTokens
	}
	if c.cfg.ThinkingBudget > 0 {
		wr.Thinking = &wireThinking{Type: "enabled", BudgetTokens: c.cfg.ThinkingBudget}
	} else {
		wr.Temperature = req.Temperature
	}
	var system []string
	for _, m := range req.Messages {
		switch m.Role {
		case llm.RoleSystem:
			system = append(system, m.Text())
		case llm.RoleUser, llm.RoleAssistant:
			blocks, err := blocksOf(m)
			if err != nil {
				return nil, err
			}
			wr.Messages = appendTurn(wr.Messages, m.Role, blocks)
		case llm.RoleTool:
			b := wireBlock{Type: "tool_result", ToolUseID: m.ToolCallID, Content: m.Text()}
			wr.Messages = appendTurn(wr.Messages, llm.RoleUser, []wireBlock{b})
		default:
			return nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: fmt.Sprintf("unknown message role %q", m.Role)}
		}
	}
	if req.JSONMode {
		system = append(system, JSONInstruction)
	}
	if len(system) > 0 {
		text := strings.Join(system, "\n\n")
		if c.cfg.CacheSystem {
			wr.System = []wireBlock{{Type: "text", Text: text, CacheControl: &cacheControl{Type: "ephemeral", TTL: c.cfg.CacheTTL}}}
		} else {
			wr.System = text
		}
	}
	for _, t := range req.Tools {
		schema := t.Parameters
		if len(schema) == 0 {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		wr.Tools = append(wr.Tools, wireTool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	if len(wr.Messages) == 0 {
		return nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: "no user or assistant message"}
	}
	return wr, nil
}

// appendTurn adds blocks as a turn of role, merged into the previous turn
// when it has the same role (the API wants alternating turns).
func appendTurn(ms []wireMessage, role string, blocks []wireBlock) []wireMessage {
	if n := len(ms); n > 0 && ms[n-1].Role == role {
		ms[n-1].Content = append(ms[n-1].Content, blocks...)
		return ms
	}
	return append(ms, wireMessage{Role: role, Content: blocks})
}

func blocksOf(m llm.Message) ([]wireBlock, error) {
	var bs []wireBlock
	if len(m.Parts) == 0 {
		if m.Content != "" {
			bs = append(bs, wireBlock{Type: "text", Text: m.Content})
		}
	}
	for _, p := range m.Parts {
		switch p.Type {
		case "text", "":
			bs = append(bs, wireBlock{Type: "text", Text: p.Text})
		case "image":
			src, err := sourceOf(p.ImageURL)
			if err != nil {
				return nil, err
			}
			bs = append(bs, wireBlock{Type: "image", Source: src})
		default:
			return nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: fmt.Sprintf("unknown message part type %q", p.Type)}
		}
	}
	for _, tc := range m.ToolCalls {
		input := json.RawMessage(tc.Arguments)
		if strings.TrimSpace(tc.Arguments) == "" {
			input = json.RawMessage(`{}`)
		} else if !json.Valid(input) {
			return nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: fmt.Sprintf("tool call %s: arguments are not JSON", tc.ID)}
		}
		bs = append(bs, wireBlock{Type: "tool_use", ID: tc.ID, Name: tc.Name, Input: input})
	}
	if len(bs) == 0 {
		return nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: fmt.Sprintf("%s message has no content", m.Role)}
	}
	return bs, nil
}

// sourceOf maps an image URL to a source: a data: URI to base64 data, an
// http(s) URL to a url source.
func sourceOf(u string) (*wireSource, error) {
	if rest, ok := strings.CutPrefix(u, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		mediaType, isB64 := strings.CutSuffix(meta, ";base64")
		if !ok || !isB64 || mediaType == "" {
			return nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: "image data URI must be data:<media type>;base64,<data>"}
		}
		return &wireSource{Type: "base64", MediaType: mediaType, Data: data}, nil
	}
	if strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
		return &wireSource{Type: "url", URL: u}, nil
	}
	return nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: "image URL must be a data: URI or http(s) URL"}
}

var stopReasons = map[string]string{
	"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls",
}

func (c *Client) reply(status int, raw []byte) (*llm.Response, error) {
	var wr wireReply
	if err := json.Unmarshal(raw, &wr); err != nil {
		msg := "reply is not a message: " + c.red.Msg(err.Error())
		if len(bytes.TrimSpace(raw)) == 0 {
			msg = "empty reply body"
		}
		return nil, &llm.Error{Kind: llm.KindInvalidReply, Status: status, Msg: msg}
	}
	var u llm.Usage
	if wr.Usage != nil {
		u = llm.Usage{
			InputTokens:      wr.Usage.InputTokens + wr.Usage.CacheReadInputTokens + wr.Usage.CacheCreationInputTokens,
			OutputTokens:     wr.Usage.OutputTokens,
			CacheReadTokens:  wr.Usage.CacheReadInputTokens,
			CacheWriteTokens: wr.Usage.CacheCreationInputTokens,
		}
	}
	if wr.Type != "message" || wr.Usage == nil {
		e := &llm.Error{Kind: llm.KindInvalidReply, Status: status, Msg: fmt.Sprintf("reply of type %q without usage or not a message", wr.Type)}
		if u != (llm.Usage{}) {
			return nil, &llm.BilledError{Usage: u, Err: e}
		}
		return nil, e
	}
	out := &llm.Response{Model: wr.Model, Usage: u, Attempts: 1, FinishReason: wr.StopReason}
	if r, ok := stopReasons[wr.StopReason]; ok {
		out.FinishReason = r
	}
	var text []string
	for _, b := range wr.Content {
		switch b.Type {
		case "text":
			text = append(text, b.Text)
		case "tool_use":
			args := string(b.Input)
			if args == "" {
				args = "{}"
			}
			out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: args})
		}
	}
	out.Content = strings.Join(text, "")
	return out, nil
}
