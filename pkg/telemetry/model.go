package telemetry

import (
	"context"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// Model wraps an llm.Model: every call gets a "chat {model}" client span
// with the GenAI attributes and is recorded in the gen_ai.client.*
// histograms and the retry and 429 counters.
type Model struct {
	next    llm.Model
	tracer  trace.Tracer
	meters  *Meters
	attrs   func(context.Context) ChatAttrs
	content bool
	red     *Redactor
}

var _ llm.Model = (*Model)(nil)

// WrapOption configures WrapModel.
type WrapOption func(*Model)

// WithContent records prompt and completion text on the span (as one
// event, through red) when on is true. Off by default.
func WithContent(on bool, red *Redactor) WrapOption {
	return func(m *Model) { m.content, m.red = on, red }
}

// WrapModel returns next wrapped with tracing and metrics. attrs describes
// each call from its context (nil: ChatAttrsFrom(ctx, "", req.Model)); an
// empty RequestModel or Stage is filled from the request. A nil tracer
// traces nothing; nil meters record nothing.
func WrapModel(next llm.Model, tracer trace.Tracer, meters *Meters, attrs func(context.Context) ChatAttrs, opts ...WrapOption) *Model {
	if tracer == nil {
		tracer = noop.NewTracerProvider().Tracer(ScopeName)
	}
	m := &Model{next: next, tracer: tracer, meters: meters, attrs: attrs}
	for _, o := range opts {
		o(m)
	}
	return m
}

// Chat implements llm.Model.
func (m *Model) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	var a ChatAttrs
	if m.attrs != nil {
		a = m.attrs(ctx)
	} else {
		a = ChatAttrsFrom(ctx, "", req.Model)
	}
	if a.RequestModel == "" {
		a.RequestModel = req.Model
	}
	if a.Stage == "" {
		a.Stage = req.Stage
	}
	ctx, span := StartChat(ctx, m.tracer, a)
	if span.IsRecording() {
		var kv []attribute.KeyValue
		if req.MaxTokens > 0 {
			kv = append(kv, KeyRequestMaxTok.Int(req.MaxTokens))
		}
		if req.Temperature != nil {
			kv = append(kv, KeyRequestTemp.Float64(*req.Temperature))
		}
		if req.Seed != nil {
			kv = append(kv, KeyRequestSeed.Int64(*req.Seed))
		}
		span.SetAttributes(kv...)
	}
	start := time.Now()
	resp, err := m.next.Chat(ctx, req)
	d := time.Since(start)

	ca := CallAttrs{Provider: a.Provider, RequestModel: a.RequestModel, Stage: a.Stage, Role: a.Role}
	if m.content && span.IsRecording() {
		RecordContent(span, m.red, req, resp)
	}
	if err != nil {
		ca.ErrorType = ErrorType(err)
		m.meters.RecordCall(ctx, ca, d, Usage{})
		if llm.KindOf(err) == llm.KindRateLimited {
			m.meters.RecordRateLimited(ctx, a.Provider, 1)
		}
		EndChat(span, Usage{}, "", err)
		return resp, err
	}
	u := UsageOf(resp.Usage)
	ca.ResponseModel = resp.Model
	m.meters.RecordCall(ctx, ca, d, u)
	if resp.Attempts > 1 {
		m.meters.RecordRetries(ctx, a.Stage, int64(resp.Attempts-1))
	}
	m.meters.RecordRateLimited(ctx, a.Provider, int64(resp.RateLimited))
	if span.IsRecording() {
		var kv []attribute.KeyValue
		if resp.FinishReason != "" {
			kv = append(kv, KeyFinishReasons.StringSlice([]string{resp.FinishReason}))
		}
		if resp.Attempts > 0 {
			kv = append(kv, KeyAttempts.Int(resp.Attempts))
		}
		if resp.RateLimited > 0 {
			kv = append(kv, KeyRateLimited.Int(resp.RateLimited))
		}
		if f := resp.FailedUsage; f.InputTokens != 0 || f.OutputTokens != 0 {
			kv = append(kv, KeyFailedInputTok.Int64(f.InputTokens), KeyFailedOutputTok.Int64(f.OutputTokens))
		}
		span.SetAttributes(kv...)
	}
	EndChat(span, u, resp.Model, nil)
	return resp, nil
}
