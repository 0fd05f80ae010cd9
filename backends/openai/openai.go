// Package openai is the llm.Model for OpenAI's Chat Completions API, Azure
// OpenAI, and any server that speaks the same wire format (vLLM, Ollama,
// llama.cpp server, SGLang, MiniMax, DeepSeek, skillfleet's sim-llm), over
// github.com/sashabaranov/go-openai.
//
// What reaches the wire beyond the standard fields is decided by an
// explicit [WirePolicy] per backend, never by guessing from a server's
// replies: chat_template_kwargs and other provider extensions are sent only
// when configured, so a server that rejects unknown fields is never sent
// one.
//
// The SDK builds and sends the request; this package's HTTP transport
// (backends/internal/httpx) sits under it and records, per call, the
// response status, the Retry-After header and body read errors (the SDK
// does not expose them on failure), and sets the few body fields the SDK
// cannot express (an explicit temperature of 0, max_tokens for a model the
// SDK believes must use max_completion_tokens, configured extra fields).
//
// Failures are *llm.Error values: 429 is KindRateLimited with RetryAfter
// from retry-after-ms or Retry-After (seconds or an HTTP date); 401 and
// 403 KindAuth; 408 KindTimeout; other 4xx KindInvalidRequest; 5xx
// KindServer (with RetryAfter when sent); the context's deadline (from
// Request.Timeout) or a network timeout KindTimeout; cancellation
// KindCancelled; a connection that fails or drops KindTransport; a 2xx
// body that is empty, not JSON, or has no choices KindInvalidReply (billed
// usage attached as llm.BilledError when the body had usage); a request
// the SDK refuses before sending KindInvalidRequest. Server text in a
// message is truncated and scrubbed of the API key; URLs lose user info
// and query.
//
// Usage: InputTokens is prompt_tokens (which includes cached tokens),
// CacheReadTokens prompt_tokens_details.cached_tokens, ReasoningTokens
// completion_tokens_details.reasoning_tokens (part of OutputTokens, as the
// API counts them).
package openai

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"

	goopenai "github.com/sashabaranov/go-openai"

	"github.com/skillfleet/skillfleet/backends/internal/httpx"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// Defaults.
const (
	// DefaultBaseURL is OpenAI's API.
	DefaultBaseURL = "https://api.openai.com/v1"
	// DefaultAzureAPIVersion is the Azure OpenAI api-version sent when none
	// is configured.
	DefaultAzureAPIVersion = "2024-12-01-preview"
)

// Azure authentication modes.
const (
	// AzureAuthAPIKey sends the key in the api-key header (default).
	AzureAuthAPIKey = "api_key"
	// AzureAuthBearer sends the key as an Entra ID (AAD) bearer token.
	AzureAuthBearer = "aad"
)

// Max-tokens field policies (WirePolicy.MaxTokensField).
const (
	// MaxTokensAuto sends max_completion_tokens to reasoning models (see
	// WirePolicy.ReasoningModelPrefixes) and max_tokens to the rest.
	MaxTokensAuto = ""
	// MaxTokensLegacy always sends max_tokens.
	MaxTokensLegacy = "max_tokens"
	// MaxTokensCompletion always sends max_completion_tokens.
	MaxTokensCompletion = "max_completion_tokens"
)

// DefaultReasoningModelPrefixes name the OpenAI reasoning model families:
// they take max_completion_tokens and only the default temperature.
var DefaultReasoningModelPrefixes = []string{"o1", "o3", "o4", "gpt-5"}

// WirePolicy says which optional and provider-specific fields a backend
// sends. The zero value sends only standard Chat Completions fields and
// picks the max-tokens field by model name.
type WirePolicy struct {
	// MaxTokensField is MaxTokensAuto, MaxTokensLegacy or MaxTokensCompletion.
	MaxTokensField string
	// ReasoningModelPrefixes lists model-name prefixes treated as reasoning
	// models (nil = DefaultReasoningModelPrefixes; compared case-insensitively).
	ReasoningModelPrefixes []string
	// SendTemperatureToReasoning sends the request's temperature to
	// reasoning models too (OpenAI rejects any but the default; off by
	// default, so the field is dropped for them).
	SendTemperatureToReasoning bool
	// OmitReasoningEffort never sends reasoning_effort (servers that
	// reject the field).
	OmitReasoningEffort bool
	// OmitSeed never sends seed.
	OmitSeed bool
	// ChatTemplateKwargs, when non-nil, is sent as chat_template_kwargs
	// (vLLM/SGLang, e.g. {"enable_thinking": false} for Qwen3). nil sends
	// nothing: the server's default applies.
	ChatTemplateKwargs map[string]any
	// ExtraBody holds further top-level fields set in every request body
	// (provider extensions such as top_k or MiniMax's reasoning_split).
	// They override fields of the same name.
	ExtraBody map[string]any
	// MaxTokensCap, when > 0, caps every request's output tokens (a request
	// without a cap gets this one): SkillOpt's qwen_chat_max_tokens.
	MaxTokensCap int
}

// Config configures a Client. APIKey is never logged, printed or put in
// an error: [Config.String] and [Config.LogValue] redact it, and every
// server and transport message is scrubbed of it.
type Config struct {
	// BaseURL of the API ("" = DefaultBaseURL). For Azure, the resource
	// endpoint (https://NAME.openai.azure.com).
	BaseURL string
	// APIKey is the key (for Azure with AzureAuth "aad", the bearer token).
	// Empty sends no credentials (local servers).
	APIKey string
	// Azure selects the Azure OpenAI wire variant: the deployments path
	// and the api-version query.
	Azure bool
	// APIVersion is Azure's api-version ("" = DefaultAzureAPIVersion).
	APIVersion string
	// AzureAuth is AzureAuthAPIKey ("" too) or AzureAuthBearer.
	AzureAuth string
	// Deployment is the Azure deployment that serves every request (""
	// = the request's model name, verbatim).
	Deployment string
	// Wire is the wire policy.
	Wire WirePolicy
	// HTTPClient is the client to send with (default: a pooled transport,
	// no client timeout: each call's deadline comes from its context and
	// llm.Request.Timeout). Its transport is wrapped, not replaced.
	HTTPClient *http.Client
	// Tokens, when set, supplies a bearer token per call (Entra ID sign-in
	// for Azure, see backends/azure) in place of APIKey. A call the server
	// refuses with 401 is sent once more with a fresh token.
	Tokens TokenSource
	// API is the wire API: APIChat, APIResponses, or APIAuto ("", the
	// Responses API for the models in ResponsesModels, else Chat
	// Completions).
	API string
	// ResponsesModels are the model (or deployment) names APIAuto sends
	// to the Responses API: a name equal to one, or starting with it and
	// "-" (nil = DefaultResponsesModels).
	ResponsesModels []string
}

// TokenSource supplies bearer tokens that expire (azure.Credential).
type TokenSource interface {
	// Token returns a currently valid token.
	Token(ctx context.Context) (string, error)
	// Invalidate drops token so the next Token fetches another.
	Invalidate(token string)
}

// String describes the config without its key.
func (c Config) String() string {
	return fmt.Sprintf("openai.Config{BaseURL:%q Azure:%t APIVersion:%q AzureAuth:%q Deployment:%q APIKey:%s}",
		httpx.SafeURLString(c.BaseURL), c.Azure, c.APIVersion, c.AzureAuth, c.Deployment, keyState(c.APIKey))
}

// GoString is String, so %#v does not print the key either.
func (c Config) GoString() string { return c.String() }

// LogValue implements slog.LogValuer without the key.
func (c Config) LogValue() slog.Value {
	return slog.GroupValue(slog.String("base_url", httpx.SafeURLString(c.BaseURL)), slog.Bool("azure", c.Azure),
		slog.String("api_key", keyState(c.APIKey)))
}

func keyState(k string) string {
	if k == "" {
		return "unset"
	}
	return httpx.Redacted
}

// Client is an llm.Model over the OpenAI wire format. It is safe for
// concurrent use.
type Client struct {
	c      *goopenai.Client
	hc     *http.Client
	cfg    Config
	red    httpx.Redactor
	prefix []string
}

var _ llm.Model = (*Client)(nil)

// New returns a Client. It does not contact the server.
func New(cfg Config) *Client {
	var oc goopenai.ClientConfig
	if cfg.Azure {
		oc = goopenai.DefaultAzureConfig(cfg.APIKey, strings.TrimRight(cfg.BaseURL, "/"))
		if cfg.AzureAuth == AzureAuthBearer || cfg.Tokens != nil {
			oc.APIType = goopenai.APITypeAzureAD
		}
		oc.APIVersion = cmpOr(cfg.APIVersion, DefaultAzureAPIVersion)
		dep := cfg.Deployment
		oc.AzureModelMapperFunc = func(model string) string { return cmpOr(dep, model) }
	} else {
		oc = goopenai.DefaultConfig(cfg.APIKey)
		oc.BaseURL = strings.TrimRight(cmpOr(cfg.BaseURL, DefaultBaseURL), "/")
	}
	hc := http.Client{}
	if cfg.HTTPClient != nil {
		hc = *cfg.HTTPClient
	}
	next := hc.Transport
	if next == nil {
		next = httpx.NewTransport()
	}
	if cfg.Tokens != nil {
		next = &bearer{next: next}
	}
	hc.Transport = &httpx.Transport{Next: next}
	oc.HTTPClient = &hc
	prefix := cfg.Wire.ReasoningModelPrefixes
	if prefix == nil {
		prefix = DefaultReasoningModelPrefixes
	}
	if cfg.ResponsesModels == nil {
		cfg.ResponsesModels = DefaultResponsesModels
	}
	return &Client{c: goopenai.NewClientWithConfig(oc), hc: &hc, cfg: cfg, red: httpx.NewRedactor(cfg.APIKey), prefix: prefix}
}

// bearerKey carries a call's bearer token from Chat to the transport.
type bearerKey struct{}

// bearer sets the call's bearer token (from its context) on the request,
// in place of any key the SDK set.
type bearer struct{ next http.RoundTripper }

func (b *bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	tok, _ := r.Context().Value(bearerKey{}).(string)
	if tok == "" {
		return b.next.RoundTrip(r)
	}
	r = r.Clone(r.Context())
	r.Header.Del("api-key")
	r.Header.Set("Authorization", "Bearer "+tok)
	return b.next.RoundTrip(r)
}

// signed runs call with the credentials of this client: with a token
// source, a token is fetched (a failure is KindAuth, naming the sign-in to
// fix) and a 401 is answered by one more try with a fresh token. Server
// text in the error is scrubbed of the token.
func (c *Client) signed(ctx context.Context, call func(context.Context) (*llm.Response, error)) (*llm.Response, error) {
	if c.cfg.Tokens == nil {
		return call(ctx)
	}
	var refused *llm.Error // the first try's 401, once its token is dropped
	for {
		tok, err := c.cfg.Tokens.Token(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, httpx.TransportError(ctx, err, c.red)
			}
			if refused != nil {
				refused.Msg += "; signing in again failed: " + c.red.Msg(err.Error())
				return nil, refused
			}
			return nil, &llm.Error{Kind: llm.KindAuth, Msg: "sign-in: " + c.red.Msg(err.Error())}
		}
		resp, err := call(context.WithValue(ctx, bearerKey{}, tok))
		var e *llm.Error
		if errors.As(err, &e) {
			e.Msg = httpx.NewRedactor(tok).String(e.Msg)
			if e.Kind == llm.KindAuth && e.Status == http.StatusUnauthorized && refused == nil {
				c.cfg.Tokens.Invalidate(tok)
				refused = e
				continue
			}
		}
		return resp, err
	}
}

// String describes the client without its key.
func (c *Client) String() string {
	kind := "openai"
	if c.cfg.Azure {
		kind = "azure"
	}
	return fmt.Sprintf("%s(%s)", kind, httpx.SafeURLString(cmpOr(c.cfg.BaseURL, DefaultBaseURL)))
}

// Endpoint is the base URL without credentials or query, for limiter keys.
func (c *Client) Endpoint() string {
	return httpx.SafeURLString(cmpOr(c.cfg.BaseURL, DefaultBaseURL))
}

// IsReasoningModel reports whether the policy treats model as a reasoning
// model (max_completion_tokens, default temperature only).
func (c *Client) IsReasoningModel(model string) bool {
	m := strings.ToLower(model)
	for _, p := range c.prefix {
		if p != "" && strings.HasPrefix(m, strings.ToLower(p)) {
			return true
		}
	}
	return false
}

// Chat implements llm.Model. Request.Timeout bounds the call; failures are
// *llm.Error values (see the package doc for the mapping).
func (c *Client) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if req.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, req.Timeout)
		defer cancel()
	}
	if lim := c.cfg.Wire.MaxTokensCap; lim > 0 && (req.MaxTokens == 0 || req.MaxTokens > lim) {
		r := *req
		r.MaxTokens = lim
		req = &r
	}
	if c.UsesResponses(req.Model) {
		return c.signed(ctx, func(ctx context.Context) (*llm.Response, error) { return c.respond(ctx, req) })
	}
	creq, patch, err := c.build(req)
	if err != nil {
		return nil, err
	}
	return c.signed(ctx, func(ctx context.Context) (*llm.Response, error) {
		ctx, call := httpx.Track(ctx, patch)
		resp, err := c.c.CreateChatCompletion(ctx, creq)
		if err != nil {
			return nil, c.classify(ctx, call, err)
		}
		return c.reply(&resp)
	})
}

// build maps a request to the SDK's type plus the body patch the SDK
// cannot express.
func (c *Client) build(req *llm.Request) (goopenai.ChatCompletionRequest, map[string]any, error) {
	w := c.cfg.Wire
	reasoning := c.IsReasoningModel(req.Model)
	creq := goopenai.ChatCompletionRequest{Model: req.Model, Stop: req.Stop, ChatTemplateKwargs: w.ChatTemplateKwargs}
	patch := map[string]any{}
	for k, v := range w.ExtraBody {
		patch[k] = v
	}
	if !w.OmitReasoningEffort {
		creq.ReasoningEffort = req.ReasoningEffort
	}
	// The SDK drops a temperature of 0 (omitempty) and rejects some values
	// for model names it believes are reasoning models, so the temperature
	// always travels in the patch, exactly as requested.
	if req.Temperature != nil && (!reasoning || w.SendTemperatureToReasoning) {
		patch["temperature"] = *req.Temperature
	}
	if req.Seed != nil && !w.OmitSeed {
		s := int(*req.Seed)
		creq.Seed = &s
	}
	if req.MaxTokens > 0 {
		field := w.MaxTokensField
		if field == MaxTokensAuto {
			field = MaxTokensLegacy
			if reasoning {
				field = MaxTokensCompletion
			}
		}
		switch field {
		case MaxTokensCompletion:
			creq.MaxCompletionTokens = req.MaxTokens
		case MaxTokensLegacy:
			// In the patch: the SDK refuses max_tokens for o1/o3/o4/gpt-5
			// names, but a compatible server may serve such a name and
			// want it.
			patch["max_tokens"] = req.MaxTokens
		default:
			return creq, nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: fmt.Sprintf("wire policy: unknown max tokens field %q", field)}
		}
	}
	if req.JSONMode {
		creq.ResponseFormat = &goopenai.ChatCompletionResponseFormat{Type: goopenai.ChatCompletionResponseFormatTypeJSONObject}
	}
	for _, m := range req.Messages {
		wm, err := toWire(m)
		if err != nil {
			return creq, nil, err
		}
		creq.Messages = append(creq.Messages, wm)
	}
	for _, t := range req.Tools {
		params := t.Parameters
		if len(params) == 0 {
			params = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		creq.Tools = append(creq.Tools, goopenai.Tool{Type: goopenai.ToolTypeFunction, Function: &goopenai.FunctionDefinition{
			Name: t.Name, Description: t.Description, Parameters: params,
		}})
	}
	if len(patch) == 0 {
		patch = nil
	}
	return creq, patch, nil
}

func toWire(m llm.Message) (goopenai.ChatCompletionMessage, error) {
	w := goopenai.ChatCompletionMessage{Role: m.Role, Name: m.Name, ToolCallID: m.ToolCallID}
	if len(m.Parts) > 0 {
		for _, p := range m.Parts {
			switch p.Type {
			case "image":
				if p.ImageURL == "" {
					return w, &llm.Error{Kind: llm.KindInvalidRequest, Msg: "image part without image_url"}
				}
				w.MultiContent = append(w.MultiContent, goopenai.ChatMessagePart{Type: goopenai.ChatMessagePartTypeImageURL,
					ImageURL: &goopenai.ChatMessageImageURL{URL: p.ImageURL, Detail: goopenai.ImageURLDetail(p.Detail)}})
			case "text", "":
				w.MultiContent = append(w.MultiContent, goopenai.ChatMessagePart{Type: goopenai.ChatMessagePartTypeText, Text: p.Text})
			default:
				return w, &llm.Error{Kind: llm.KindInvalidRequest, Msg: fmt.Sprintf("unknown message part type %q", p.Type)}
			}
		}
	} else {
		w.Content = m.Content
	}
	for _, tc := range m.ToolCalls {
		w.ToolCalls = append(w.ToolCalls, goopenai.ToolCall{ID: tc.ID, Type: goopenai.ToolTypeFunction,
			Function: goopenai.FunctionCall{Name: tc.Name, Arguments: tc.Arguments}})
	}
	return w, nil
}

func (c *Client) reply(resp *goopenai.ChatCompletionResponse) (*llm.Response, error) {
	u := llm.Usage{InputTokens: int64(resp.Usage.PromptTokens), OutputTokens: int64(resp.Usage.CompletionTokens)}
	if d := resp.Usage.PromptTokensDetails; d != nil {
		u.CacheReadTokens = int64(d.CachedTokens)
	}
	if d := resp.Usage.CompletionTokensDetails; d != nil {
		u.ReasoningTokens = int64(d.ReasoningTokens)
	}
	if len(resp.Choices) == 0 {
		e := &llm.Error{Kind: llm.KindInvalidReply, Status: http.StatusOK, Msg: "reply has no choices"}
		if u != (llm.Usage{}) {
			return nil, &llm.BilledError{Usage: u, Err: e}
		}
		return nil, e
	}
	ch := resp.Choices[0]
	out := &llm.Response{
		Content: ch.Message.Content, FinishReason: string(ch.FinishReason), Model: resp.Model, Attempts: 1, Usage: u,
	}
	if out.Content == "" && len(ch.Message.MultiContent) > 0 {
		out.Content = llm.Message{Parts: partsOf(ch.Message.MultiContent)}.Text()
	}
	if out.Content == "" && ch.Message.Refusal != "" {
		out.Content = ch.Message.Refusal
	}
	for _, tc := range ch.Message.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return out, nil
}

func partsOf(mc []goopenai.ChatMessagePart) []llm.Part {
	var ps []llm.Part
	for _, p := range mc {
		if p.Type == goopenai.ChatMessagePartTypeText {
			ps = append(ps, llm.Part{Type: "text", Text: p.Text})
		}
	}
	return ps
}

// classify maps an SDK failure to a typed llm.Error, using what the
// transport saw on the wire. Every message is scrubbed of the API key.
func (c *Client) classify(ctx context.Context, call *httpx.Call, err error) error {
	status := call.Status()
	var apiErr *goopenai.APIError
	var reqErr *goopenai.RequestError
	switch {
	case status >= 400 || (status == 0 && (errors.As(err, &apiErr) || errors.As(err, &reqErr))):
		msg := ""
		switch {
		case errors.As(err, &apiErr):
			msg = apiErr.Message
			status = cmpOr(status, apiErr.HTTPStatusCode)
		case errors.As(err, &reqErr):
			msg = string(reqErr.Body)
			status = cmpOr(status, reqErr.HTTPStatusCode)
		}
		if ctx.Err() != nil && status == 0 {
			return httpx.TransportError(ctx, err, c.red)
		}
		return httpx.StatusError(status, call.RetryAfter(), msg, c.red)
	case !call.Sent():
		// The SDK refused the request before sending it.
		if ctx.Err() != nil {
			return httpx.TransportError(ctx, err, c.red)
		}
		return &llm.Error{Kind: llm.KindInvalidRequest, Msg: c.red.Msg(err.Error())}
	case status >= 200 && status < 300:
		if ctx.Err() != nil || call.BodyErr() != nil {
			return httpx.TransportError(ctx, cmpErr(call.BodyErr(), err), c.red)
		}
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.Is(err, io.EOF):
			return &llm.Error{Kind: llm.KindInvalidReply, Status: status, Msg: "empty reply body"}
		case errors.As(err, &se), errors.As(err, &te), errors.Is(err, io.ErrUnexpectedEOF):
			return &llm.Error{Kind: llm.KindInvalidReply, Status: status, Msg: "reply is not a chat completion: " + c.red.Msg(err.Error())}
		}
		return &llm.Error{Kind: llm.KindInvalidReply, Status: status, Msg: c.red.Msg(err.Error())}
	default:
		return httpx.TransportError(ctx, err, c.red)
	}
}

func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

func cmpOr[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}
