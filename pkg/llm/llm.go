// Package llm holds the chat-model contract every backend implements and
// every benchmark and optimizer call uses: messages, requests, replies,
// token usage and typed errors. It is a leaf: backends implement [Model],
// benchmarks in pkg/bench drive one, and neither needs the other.
package llm

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Roles of a chat message.
const (
	RoleSystem    = "system"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Model is one chat endpoint. Implementations are safe for concurrent use.
type Model interface {
	Chat(ctx context.Context, req *Request) (*Response, error)
}

// Part is one piece of a multi-part message: text or an image.
type Part struct {
	// Type is "text" or "image".
	Type string `json:"type"`
	Text string `json:"text,omitempty"`
	// ImageURL is an http(s) URL or a data: URI.
	ImageURL string `json:"image_url,omitempty"`
	// Detail is the vision detail hint ("", "low", "high", "auto").
	Detail string `json:"detail,omitempty"`
}

// Message is one chat message. Content is used when Parts is empty.
type Message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content,omitempty"`
	Parts      []Part     `json:"parts,omitempty"`
	ToolCalls  []ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
	Name       string     `json:"name,omitempty"`
}

// Text returns the message's text: Content, or its text parts joined.
func (m Message) Text() string {
	if len(m.Parts) == 0 {
		return m.Content
	}
	var s string
	for _, p := range m.Parts {
		if p.Type == "text" {
			if s != "" {
				s += "\n"
			}
			s += p.Text
		}
	}
	return s
}

// Tool is a function the model may call.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
}

// ToolCall is the model's request to call a tool.
type ToolCall struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// Request is one chat call.
type Request struct {
	Model    string    `json:"model"`
	Messages []Message `json:"messages"`
	Tools    []Tool    `json:"tools,omitempty"`
	// Temperature is nil to leave the server default.
	Temperature *float64 `json:"temperature,omitempty"`
	// MaxTokens caps the reply (0 = backend default).
	MaxTokens       int      `json:"max_tokens,omitempty"`
	ReasoningEffort string   `json:"reasoning_effort,omitempty"`
	JSONMode        bool     `json:"json_mode,omitempty"`
	Stop            []string `json:"stop,omitempty"`
	// Seed asks for a reproducible sample where the backend supports it.
	Seed *int64 `json:"seed,omitempty"`
	// Timeout bounds the whole call (0 = none beyond ctx); always forwarded.
	Timeout time.Duration `json:"-"`
	// Stage labels the call for accounting (rollout, analyst, merge, ...).
	Stage string `json:"-"`
}

// Usage counts tokens. InputTokens includes cached reads.
type Usage struct {
	InputTokens      int64 `json:"input_tokens"`
	OutputTokens     int64 `json:"output_tokens"`
	CacheReadTokens  int64 `json:"cache_read_tokens,omitempty"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	ReasoningTokens  int64 `json:"reasoning_tokens,omitempty"`
}

// Add adds o to u.
func (u *Usage) Add(o Usage) {
	u.InputTokens += o.InputTokens
	u.OutputTokens += o.OutputTokens
	u.CacheReadTokens += o.CacheReadTokens
	u.CacheWriteTokens += o.CacheWriteTokens
	u.ReasoningTokens += o.ReasoningTokens
}

// Response is a model's reply.
type Response struct {
	Content      string     `json:"content"`
	ToolCalls    []ToolCall `json:"tool_calls,omitempty"`
	FinishReason string     `json:"finish_reason,omitempty"`
	// Model is the model name the server reports.
	Model string `json:"model,omitempty"`
	Usage Usage  `json:"usage"`
	// Attempts is how many calls were made for this reply (1 + retries).
	Attempts int `json:"attempts,omitempty"`
	// RateLimited counts 429 answers seen on the way.
	RateLimited int `json:"rate_limited,omitempty"`
	// FailedUsage is the usage of failed attempts (billed but unused).
	FailedUsage Usage `json:"failed_usage,omitzero"`
	// FailedCauses counts the failed attempts by cause (the Cause
	// constants); it sums to Attempts-1.
	FailedCauses map[string]int `json:"failed_causes,omitempty"`
}

// ErrorKind classifies a failed call.
type ErrorKind int

// Error kinds. Retryable ones are RateLimited, Timeout, Server and Transport.
const (
	KindUnknown ErrorKind = iota
	KindRateLimited
	KindTimeout
	KindAuth
	KindInvalidRequest
	KindServer
	KindTransport
	KindInvalidReply
	KindCancelled
)

var kindNames = [...]string{"unknown", "rate_limited", "timeout", "auth", "invalid_request", "server", "transport", "invalid_reply", "cancelled"}

func (k ErrorKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", int(k))
}

// Retryable reports whether a call that failed this way may succeed if tried again.
func (k ErrorKind) Retryable() bool {
	switch k {
	case KindRateLimited, KindTimeout, KindServer, KindTransport:
		return true
	default:
		return false
	}
}

// Error is a typed model-call failure.
type Error struct {
	Kind ErrorKind
	// Status is the HTTP status, when there was one.
	Status int
	// RetryAfter is the server's requested wait, when it gave one.
	RetryAfter time.Duration
	Msg        string
	Err        error
}

func (e *Error) Error() string {
	s := e.Kind.String()
	if e.Status != 0 {
		s += fmt.Sprintf(" (HTTP %d)", e.Status)
	}
	if e.Msg != "" {
		s += ": " + e.Msg
	}
	if e.Err != nil {
		s += ": " + e.Err.Error()
	}
	return s
}

func (e *Error) Unwrap() error { return e.Err }

// KindOf returns the kind of err: the Kind of an [*Error] in its chain,
// KindTimeout for deadline errors, KindCancelled for cancellation.
func KindOf(err error) ErrorKind {
	var e *Error
	switch {
	case err == nil:
		return KindUnknown
	case errors.As(err, &e):
		return e.Kind
	case errors.Is(err, context.DeadlineExceeded):
		return KindTimeout
	case errors.Is(err, context.Canceled):
		return KindCancelled
	default:
		return KindUnknown
	}
}

// EstimateTokens is the token count skillfleet uses where a backend reports
// none: one token per four bytes, rounded up.
func EstimateTokens(s string) int64 {
	return int64((len(s) + 3) / 4)
}
