package telemetry

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// ChatAttrs describe one model call for its span.
type ChatAttrs struct {
	// Provider is gen_ai.provider.name: "openai", "azure.ai.openai",
	// "anthropic", or the backend name for others (the backends' table
	// says which: backends.Provider).
	Provider     string
	RequestModel string
	// Operation is gen_ai.operation.name; empty means "chat".
	Operation string
	Stage     string
	Role      string
	Run       string
	Step      int
	TaskID    string
	// Campaign and Cell name the campaign cell the call is made for.
	Campaign string
	Cell     string
}

// ChatAttrsFrom builds ChatAttrs from the skillfleet attrs ctx carries.
func ChatAttrsFrom(ctx context.Context, provider, model string) ChatAttrs {
	a := AttrsFrom(ctx)
	return ChatAttrs{Provider: provider, RequestModel: model, Operation: OperationChat,
		Stage: a.Stage, Role: a.Role, Run: a.Run, Step: a.Step, TaskID: a.TaskID, Campaign: a.Campaign, Cell: a.Cell}
}

// Usage is the token usage of one model call. Input includes CacheRead and
// CacheWrite; Output includes Reasoning (as the GenAI conventions and
// pkg/llm count them).
type Usage struct {
	Input      int64
	Output     int64
	CacheRead  int64
	CacheWrite int64
	Reasoning  int64
}

// UsageOf converts an llm.Usage.
func UsageOf(u llm.Usage) Usage {
	return Usage{Input: u.InputTokens, Output: u.OutputTokens, CacheRead: u.CacheReadTokens,
		CacheWrite: u.CacheWriteTokens, Reasoning: u.ReasoningTokens}
}

// StartChat starts a model call's client span, named "chat {model}", with
// the GenAI and skillfleet attributes. End it with EndChat.
func StartChat(ctx context.Context, tracer trace.Tracer, a ChatAttrs) (context.Context, trace.Span) {
	op := a.Operation
	if op == "" {
		op = OperationChat
	}
	kv := []attribute.KeyValue{KeyOperationName.String(op)}
	if a.Provider != "" {
		kv = append(kv, KeyProviderName.String(a.Provider))
	}
	if a.RequestModel != "" {
		kv = append(kv, KeyRequestModel.String(a.RequestModel))
	}
	kv = append(kv, Attrs{Campaign: a.Campaign, Cell: a.Cell, Run: a.Run, Step: a.Step, Stage: a.Stage, Role: a.Role, TaskID: a.TaskID}.KeyValues()...)
	return tracer.Start(ctx, ChatSpanName(op, a.RequestModel),
		trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(kv...))
}

// EndChat records a call's outcome on its span and ends it: the response
// model and token usage, or, for a failure, error.type and an error status
// whose description is the error's kind and HTTP status only. The error's
// text is never recorded: provider error bodies can echo request content.
func EndChat(span trace.Span, u Usage, responseModel string, err error) {
	defer span.End()
	if err != nil {
		span.SetAttributes(KeyErrorType.String(ErrorType(err)))
		span.SetStatus(codes.Error, errorDescription(err))
		return
	}
	kv := []attribute.KeyValue{
		KeyInputTokens.Int64(u.Input),
		KeyOutputTokens.Int64(u.Output),
	}
	if responseModel != "" {
		kv = append(kv, KeyResponseModel.String(responseModel))
	}
	if u.CacheRead != 0 {
		kv = append(kv, KeyCacheReadTok.Int64(u.CacheRead))
	}
	if u.CacheWrite != 0 {
		kv = append(kv, KeyCacheCreateTok.Int64(u.CacheWrite))
	}
	if u.Reasoning != 0 {
		kv = append(kv, KeyReasoningTok.Int64(u.Reasoning))
	}
	span.SetAttributes(kv...)
}

// ErrorType is the low-cardinality error.type of a failed call: the
// llm.ErrorKind name ("rate_limited", "timeout", "auth", ...).
func ErrorType(err error) string {
	if err == nil {
		return ""
	}
	return llm.KindOf(err).String()
}

func errorDescription(err error) string {
	var le *llm.Error
	if errors.As(err, &le) && le.Status != 0 {
		return fmt.Sprintf("%s (HTTP %d)", le.Kind, le.Status)
	}
	return llm.KindOf(err).String()
}

// contentMessage is one message of gen_ai.input.messages /
// gen_ai.output.messages, in the conventions' shape (role and text parts).
type contentMessage struct {
	Role  string        `json:"role"`
	Parts []contentPart `json:"parts"`
}

type contentPart struct {
	Type    string `json:"type"`
	Content string `json:"content,omitempty"`
	Name    string `json:"name,omitempty"`
	ID      string `json:"id,omitempty"`
	// Arguments of a tool call, as the model sent them.
	Arguments string `json:"arguments,omitempty"`
}

// RecordContent adds the prompt and completion text to span as one
// gen_ai.client.inference.operation.details event, after passing every
// string through red. Call it only when content tracing is on; the model
// wrapper does so. resp may be nil (a failed call records the prompt only).
func RecordContent(span trace.Span, red *Redactor, req *llm.Request, resp *llm.Response) {
	var in []contentMessage
	for _, m := range req.Messages {
		cm := contentMessage{Role: m.Role}
		if t := m.Text(); t != "" {
			cm.Parts = append(cm.Parts, contentPart{Type: "text", Content: red.Redact(t)})
		}
		for _, tc := range m.ToolCalls {
			cm.Parts = append(cm.Parts, contentPart{Type: "tool_call", Name: tc.Name, ID: tc.ID, Arguments: red.Redact(tc.Arguments)})
		}
		in = append(in, cm)
	}
	kv := []attribute.KeyValue{KeyInputMessages.String(mustJSON(in))}
	if resp != nil {
		out := contentMessage{Role: llm.RoleAssistant}
		if resp.Content != "" {
			out.Parts = append(out.Parts, contentPart{Type: "text", Content: red.Redact(resp.Content)})
		}
		for _, tc := range resp.ToolCalls {
			out.Parts = append(out.Parts, contentPart{Type: "tool_call", Name: tc.Name, ID: tc.ID, Arguments: red.Redact(tc.Arguments)})
		}
		kv = append(kv, KeyOutputMessages.String(mustJSON([]contentMessage{out})))
	}
	span.AddEvent(EventContent, trace.WithAttributes(kv...))
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "" // strings and slices of structs of strings always encode
	}
	return string(b)
}
