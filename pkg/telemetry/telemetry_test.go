package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// Planted secrets and prompt text: none may reach a span unless content
// tracing is on, and the secrets never.
const (
	plantedKey    = "sk-proj-PLANTEDkey0123456789abcdefXYZ"
	plantedSecret = "hunter2-exact-secret-value"
	promptText    = "Solve: what is 17 times 3? PROMPT-MARKER"
	replyText     = "The answer is 51. REPLY-MARKER"
)

type bundle struct {
	tel    *Telemetry
	spans  *tracetest.InMemoryExporter
	reader *sdkmetric.ManualReader
}

func setup(t *testing.T, o Options) bundle {
	t.Helper()
	b := bundle{spans: tracetest.NewInMemoryExporter(), reader: sdkmetric.NewManualReader()}
	o.SpanExporter, o.MetricReader = b.spans, b.reader
	tel, shutdown, err := Setup(t.Context(), o)
	if err != nil {
		t.Fatalf("Setup() = %v", err)
	}
	t.Cleanup(func() {
		if err := shutdown(context.Background()); err != nil {
			t.Errorf("shutdown() = %v", err)
		}
	})
	b.tel = tel
	return b
}

// fakeModel answers every call with resp or err and remembers the context.
type fakeModel struct {
	resp *llm.Response
	err  error
	ctx  context.Context
}

func (f *fakeModel) Chat(ctx context.Context, _ *llm.Request) (*llm.Response, error) {
	f.ctx = ctx
	if f.err != nil {
		return nil, f.err
	}
	r := *f.resp
	return &r, nil
}

func request() *llm.Request {
	temp := 0.2
	return &llm.Request{
		Model: "sim-target", Stage: "rollout", MaxTokens: 512, Temperature: &temp,
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "You are careful. api_key=" + plantedKey},
			{Role: llm.RoleUser, Content: promptText + " " + plantedSecret},
		},
	}
}

func okResponse() *llm.Response {
	return &llm.Response{
		Content: replyText + " " + plantedKey, Model: "sim-target-2026", FinishReason: "stop",
		Usage:    llm.Usage{InputTokens: 120, OutputTokens: 30, CacheReadTokens: 100, CacheWriteTokens: 7, ReasoningTokens: 11},
		Attempts: 3, RateLimited: 2,
		FailedUsage: llm.Usage{InputTokens: 40, OutputTokens: 5},
	}
}

func ctxWithAttrs(t *testing.T) context.Context {
	return WithAttrs(t.Context(), Attrs{Run: "run-1", Epoch: 2, Step: 7, Stage: "rollout", Role: "target", TaskID: "run-1/7/rollout/3", Kind: "rollout"})
}

func attrMap(kvs []attribute.KeyValue) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// spanText renders everything a span carries that an exporter would send.
func spanText(s tracetest.SpanStub) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s|%s|%s|", s.Name, s.Status.Code, s.Status.Description)
	for _, kv := range s.Attributes {
		fmt.Fprintf(&b, "%s=%s|", kv.Key, kv.Value.String())
	}
	for _, ev := range s.Events {
		fmt.Fprintf(&b, "event %s|", ev.Name)
		for _, kv := range ev.Attributes {
			fmt.Fprintf(&b, "%s=%s|", kv.Key, kv.Value.String())
		}
	}
	for _, kv := range s.Resource.Attributes() {
		fmt.Fprintf(&b, "%s=%s|", kv.Key, kv.Value.String())
	}
	return b.String()
}

func onlySpan(t *testing.T, exp *tracetest.InMemoryExporter) tracetest.SpanStub {
	t.Helper()
	ss := exp.GetSpans()
	if len(ss) != 1 {
		t.Fatalf("got %d spans, want 1: %v", len(ss), ss.Snapshots())
	}
	return ss[0]
}

func TestStartChatAttributes(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{ServiceName: "skillfleet-worker"})
	_, span := StartChat(t.Context(), b.tel.Tracer, ChatAttrs{Provider: "openai", RequestModel: "gpt-4o", Stage: "reflect", Role: "optimizer", Run: "r1", Step: 3, TaskID: "r1/3/reflect/0"})
	EndChat(span, Usage{Input: 10, Output: 2}, "gpt-4o-2024-08-06", nil)

	s := onlySpan(t, b.spans)
	if s.Name != "chat gpt-4o" {
		t.Errorf("span name = %q, want %q", s.Name, "chat gpt-4o")
	}
	if s.SpanKind != trace.SpanKindClient {
		t.Errorf("span kind = %v, want client", s.SpanKind)
	}
	got := attrMap(s.Attributes)
	want := map[attribute.Key]attribute.Value{
		KeyOperationName: attribute.StringValue("chat"),
		KeyProviderName:  attribute.StringValue("openai"),
		KeyRequestModel:  attribute.StringValue("gpt-4o"),
		KeyResponseModel: attribute.StringValue("gpt-4o-2024-08-06"),
		KeyStage:         attribute.StringValue("reflect"),
		KeyRole:          attribute.StringValue("optimizer"),
		KeyRun:           attribute.StringValue("r1"),
		KeyStep:          attribute.IntValue(3),
		KeyTaskID:        attribute.StringValue("r1/3/reflect/0"),
		KeyInputTokens:   attribute.Int64Value(10),
		KeyOutputTokens:  attribute.Int64Value(2),
	}
	if diff := cmp.Diff(want, got, cmp.Comparer(func(a, b attribute.Value) bool { return a == b })); diff != "" {
		t.Errorf("attributes (-want +got):\n%s", diff)
	}
	if s.Status.Code != codes.Unset {
		t.Errorf("status = %v, want unset", s.Status)
	}
	if v, ok := s.Resource.Set().Value("service.name"); !ok || v.AsString() != "skillfleet-worker" {
		t.Errorf("service.name = %v, want skillfleet-worker", v)
	}
}

func TestWrapModelSpan(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	m := b.tel.WrapModel(&fakeModel{resp: okResponse()}, "sim")
	if _, err := m.Chat(ctxWithAttrs(t), request()); err != nil {
		t.Fatalf("Chat() = %v", err)
	}
	s := onlySpan(t, b.spans)
	got := attrMap(s.Attributes)
	want := map[attribute.Key]any{
		KeyOperationName:   "chat",
		KeyProviderName:    "sim",
		KeyRequestModel:    "sim-target",
		KeyResponseModel:   "sim-target-2026",
		KeyRequestMaxTok:   int64(512),
		KeyRequestTemp:     0.2,
		KeyInputTokens:     int64(120),
		KeyOutputTokens:    int64(30),
		KeyCacheReadTok:    int64(100),
		KeyCacheCreateTok:  int64(7),
		KeyReasoningTok:    int64(11),
		KeyStage:           "rollout",
		KeyRole:            "target",
		KeyRun:             "run-1",
		KeyStep:            int64(7),
		KeyTaskID:          "run-1/7/rollout/3",
		KeyAttempts:        int64(3),
		KeyRateLimited:     int64(2),
		KeyFailedInputTok:  int64(40),
		KeyFailedOutputTok: int64(5),
	}
	for k, w := range want {
		v, ok := got[k]
		if !ok {
			t.Errorf("attribute %s missing", k)
			continue
		}
		if g := v.AsInterface(); g != w {
			t.Errorf("attribute %s = %v (%T), want %v (%T)", k, g, g, w, w)
		}
	}
	if s.Name != "chat sim-target" || s.SpanKind != trace.SpanKindClient {
		t.Errorf("span = %q kind %v, want \"chat sim-target\" client", s.Name, s.SpanKind)
	}
	if len(s.Events) != 0 {
		t.Errorf("span has %d events with content tracing off, want 0: %v", len(s.Events), s.Events)
	}
}

func TestNoContentByDefault(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{Secrets: []string{plantedSecret}})
	ok := b.tel.WrapModel(&fakeModel{resp: okResponse()}, "sim")
	bad := b.tel.WrapModel(&fakeModel{err: &llm.Error{Kind: llm.KindAuth, Status: 401,
		Msg: "invalid key " + plantedKey + " for prompt " + promptText}}, "sim")
	if _, err := ok.Chat(ctxWithAttrs(t), request()); err != nil {
		t.Fatalf("Chat() = %v", err)
	}
	if _, err := bad.Chat(ctxWithAttrs(t), request()); err == nil {
		t.Fatal("Chat() = nil error, want the auth error")
	}
	spans := b.spans.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("got %d spans, want 2", len(spans))
	}
	for _, s := range spans {
		text := spanText(s)
		for _, bad := range []string{plantedKey, plantedSecret, "PROMPT-MARKER", "REPLY-MARKER", "17 times 3"} {
			if strings.Contains(text, bad) {
				t.Errorf("span %q carries %q: %s", s.Name, bad, text)
			}
		}
	}
	failed := spans[1]
	if failed.Status.Code != codes.Error || failed.Status.Description != "auth (HTTP 401)" {
		t.Errorf("failed span status = %v %q, want Error \"auth (HTTP 401)\"", failed.Status.Code, failed.Status.Description)
	}
	if v := attrMap(failed.Attributes)[KeyErrorType]; v.AsString() != "auth" {
		t.Errorf("error.type = %q, want auth", v.AsString())
	}
}

func TestContentWhenEnabled(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{TraceContent: true, Secrets: []string{plantedSecret}})
	m := b.tel.WrapModel(&fakeModel{resp: okResponse()}, "sim")
	if _, err := m.Chat(ctxWithAttrs(t), request()); err != nil {
		t.Fatalf("Chat() = %v", err)
	}
	s := onlySpan(t, b.spans)
	if len(s.Events) != 1 || s.Events[0].Name != EventContent {
		t.Fatalf("events = %v, want one %s", s.Events, EventContent)
	}
	ev := attrMap(s.Events[0].Attributes)
	in, out := ev[KeyInputMessages].AsString(), ev[KeyOutputMessages].AsString()
	if !strings.Contains(in, "PROMPT-MARKER") || !strings.Contains(out, "REPLY-MARKER") {
		t.Errorf("content event lacks the prompt or reply:\n in: %s\nout: %s", in, out)
	}
	var msgs []contentMessage
	if err := json.Unmarshal([]byte(in), &msgs); err != nil || len(msgs) != 2 || msgs[0].Role != "system" {
		t.Errorf("gen_ai.input.messages = %s (%v), want two messages, system first", in, err)
	}
	text := spanText(s)
	for _, secret := range []string{plantedKey, plantedSecret} {
		if strings.Contains(text, secret) {
			t.Errorf("span carries secret %q with content on: %s", secret, text)
		}
	}
	if !strings.Contains(in, Redacted) || !strings.Contains(out, Redacted) {
		t.Errorf("content lacks %s markers:\n in: %s\nout: %s", Redacted, in, out)
	}
}

func TestWrapModelAttrsFunc(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	f := &fakeModel{resp: &llm.Response{Content: "x", Usage: llm.Usage{InputTokens: 1, OutputTokens: 1}}}
	m := WrapModel(f, b.tel.Tracer, b.tel.Meters, func(context.Context) ChatAttrs {
		return ChatAttrs{Provider: "anthropic", Role: "optimizer"}
	})
	if _, err := m.Chat(t.Context(), &llm.Request{Model: "claude-sonnet-4-5", Stage: "merge"}); err != nil {
		t.Fatal(err)
	}
	s := onlySpan(t, b.spans)
	got := attrMap(s.Attributes)
	if got[KeyRequestModel].AsString() != "claude-sonnet-4-5" || got[KeyStage].AsString() != "merge" || got[KeyProviderName].AsString() != "anthropic" {
		t.Errorf("attributes = %v, want model, stage from the request and provider from attrs", s.Attributes)
	}
	// The wrapped model runs inside the chat span.
	if sc := trace.SpanContextFromContext(f.ctx); sc.SpanID() != s.SpanContext.SpanID() {
		t.Errorf("inner call's span = %v, want the chat span %v", sc.SpanID(), s.SpanContext.SpanID())
	}
}

func TestSpanTree(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	tr := b.tel.Tracer
	ctx, run := StartSpan(t.Context(), tr, SpanRun, Attrs{Run: "r9"})
	ctx, step := StartSpan(ctx, tr, SpanStep, Attrs{Epoch: 1, Step: 4})
	ctx, stage := StartSpan(ctx, tr, StageSpanName("rollout"), Attrs{Stage: "rollout"})

	// Across the queue: inject into a carrier, extract on the "worker".
	carrier := propagation.MapCarrier{}
	b.tel.Propagator.Inject(ctx, carrier)
	wctx := b.tel.Propagator.Extract(context.Background(), carrier)
	wctx, task := StartSpan(wctx, tr, TaskSpanName("rollout"), Attrs{Run: "r9", Step: 4, Stage: "rollout", TaskID: "r9/4/rollout/0", Role: "target"}, trace.WithSpanKind(trace.SpanKindConsumer))
	m := b.tel.WrapModel(&fakeModel{resp: &llm.Response{Usage: llm.Usage{InputTokens: 5, OutputTokens: 1}}}, "sim")
	if _, err := m.Chat(wctx, &llm.Request{Model: "sim-target"}); err != nil {
		t.Fatal(err)
	}
	errBoom := &llm.Error{Kind: llm.KindServer, Status: 503, Msg: "secret " + plantedKey}
	var err error = errBoom
	End(task, &err)
	End(stage, nil)
	End(step, nil)
	End(run, nil)

	byName := map[string]tracetest.SpanStub{}
	for _, s := range b.spans.GetSpans() {
		byName[s.Name] = s
	}
	parent := map[string]string{
		"chat sim-target":        TaskSpanName("rollout"),
		TaskSpanName("rollout"):  StageSpanName("rollout"),
		StageSpanName("rollout"): SpanStep,
		SpanStep:                 SpanRun,
	}
	for child, p := range parent {
		c, ok1 := byName[child]
		pp, ok2 := byName[p]
		if !ok1 || !ok2 {
			t.Fatalf("missing span %q or %q in %v", child, p, b.spans.GetSpans().Snapshots())
		}
		if c.Parent.SpanID() != pp.SpanContext.SpanID() || c.SpanContext.TraceID() != pp.SpanContext.TraceID() {
			t.Errorf("span %q's parent is not %q", child, p)
		}
	}
	stageAttrs := attrMap(byName[StageSpanName("rollout")].Attributes)
	if stageAttrs[KeyRun].AsString() != "r9" || stageAttrs[KeyStep].AsInt64() != 4 || stageAttrs[KeyEpoch].AsInt64() != 1 {
		t.Errorf("stage span attributes = %v, want run, epoch and step inherited", stageAttrs)
	}
	ts := byName[TaskSpanName("rollout")]
	if ts.Status.Code != codes.Error || strings.Contains(spanText(ts), plantedKey) {
		t.Errorf("task span = %s, want error status without the error text", spanText(ts))
	}
}

func collect(t *testing.T, r *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(t.Context(), &rm); err != nil {
		t.Fatalf("Collect() = %v", err)
	}
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

func sumInt(t *testing.T, m metricdata.Metrics, match func(attribute.Set) bool) int64 {
	t.Helper()
	var n int64
	switch d := m.Data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			if match(p.Attributes) {
				n += p.Value
			}
		}
	case metricdata.Gauge[int64]:
		for _, p := range d.DataPoints {
			if match(p.Attributes) {
				n += p.Value
			}
		}
	case metricdata.Histogram[int64]:
		for _, p := range d.DataPoints {
			if match(p.Attributes) {
				n += p.Sum
			}
		}
	default:
		t.Fatalf("metric %s has data %T", m.Name, m.Data)
	}
	return n
}

func has(k attribute.Key, v string) func(attribute.Set) bool {
	return func(s attribute.Set) bool { got, ok := s.Value(k); return ok && got.AsString() == v }
}

func all(attribute.Set) bool { return true }

func TestModelMetrics(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	m := b.tel.WrapModel(&fakeModel{resp: okResponse()}, "sim")
	limited := b.tel.WrapModel(&fakeModel{err: &llm.Error{Kind: llm.KindRateLimited, Status: 429}}, "sim")
	for range 3 {
		if _, err := m.Chat(ctxWithAttrs(t), request()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := limited.Chat(ctxWithAttrs(t), request()); err == nil {
		t.Fatal("want an error")
	}
	got := collect(t, b.reader)
	tok := got[MetricTokenUsage]
	if n := sumInt(t, tok, has(KeyTokenType, TokenTypeInput)); n != 360 {
		t.Errorf("%s input = %d, want 360", MetricTokenUsage, n)
	}
	if n := sumInt(t, tok, has(KeyTokenType, TokenTypeOutput)); n != 90 {
		t.Errorf("%s output = %d, want 90", MetricTokenUsage, n)
	}
	if n := sumInt(t, tok, has(KeyStage, "rollout")); n != 450 {
		t.Errorf("%s at stage rollout = %d, want 450", MetricTokenUsage, n)
	}
	dur, ok := got[MetricOperationDuration].Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s data = %T", MetricOperationDuration, got[MetricOperationDuration].Data)
	}
	var calls, failed uint64
	for _, p := range dur.DataPoints {
		calls += p.Count
		if v, ok := p.Attributes.Value(KeyErrorType); ok && v.AsString() == "rate_limited" {
			failed += p.Count
		}
	}
	if calls != 4 || failed != 1 {
		t.Errorf("%s count = %d (%d failed), want 4 (1 failed)", MetricOperationDuration, calls, failed)
	}
	if n := sumInt(t, got[MetricRetries], all); n != 6 {
		t.Errorf("%s = %d, want 6 (3 calls x 2 retries)", MetricRetries, n)
	}
	if n := sumInt(t, got[MetricRateLimited], has(KeyProviderName, "sim")); n != 7 {
		t.Errorf("%s = %d, want 7 (3 x 2 + 1)", MetricRateLimited, n)
	}
	if tok.Unit != "{token}" || got[MetricOperationDuration].Unit != "s" {
		t.Errorf("units = %q, %q; want {token}, s", tok.Unit, got[MetricOperationDuration].Unit)
	}
}

func TestMeters(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	ms, ctx := b.tel.Meters, t.Context()
	ms.RecordTask(ctx, "rollout", "ok")
	ms.RecordTask(ctx, "rollout", "ok")
	ms.RecordTask(ctx, "reflect", "invalid_reply")
	ms.RecordCacheHit(ctx, "rollout", 250)
	ms.RecordCacheHit(ctx, "rollout", 0)
	ms.SetQueueDepth(ctx, 9)
	ms.SetQueueDepth(ctx, 4)
	ms.AddInFlight(ctx, "rollout", 3)
	ms.AddInFlight(ctx, "rollout", -1)
	ms.SetWorkers(ctx, 8)
	ms.RecordRetries(ctx, "merge", 2)

	got := collect(t, b.reader)
	tests := []struct {
		name   string
		metric string
		match  func(attribute.Set) bool
		want   int64
	}{
		{"ok rollouts", MetricTasks, func(s attribute.Set) bool { return has(KeyKind, "rollout")(s) && has(KeyOutcome, "ok")(s) }, 2},
		{"invalid replies", MetricTasks, has(KeyOutcome, "invalid_reply"), 1},
		{"cache hits", MetricCacheHits, has(KeyKind, "rollout"), 2},
		{"tokens saved", MetricCacheTokensSaved, all, 250},
		{"queue depth is the last value", MetricQueueDepth, all, 4},
		{"in flight", MetricInFlight, has(KeyKind, "rollout"), 2},
		{"workers", MetricWorkers, all, 8},
		{"retries", MetricRetries, has(KeyStage, "merge"), 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := got[tt.metric]
			if !ok {
				t.Fatalf("metric %s not collected", tt.metric)
			}
			if n := sumInt(t, m, tt.match); n != tt.want {
				t.Errorf("%s = %d, want %d", tt.metric, n, tt.want)
			}
		})
	}
	var nilMeters *Meters
	nilMeters.RecordTask(ctx, "x", "ok") // a nil *Meters records nothing and does not panic
}

func TestPrometheusEndpoint(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{ServiceName: "skillfleet-test", MetricsAddr: "127.0.0.1:0", TraceContent: false})
	addr := b.tel.MetricsAddr()
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Fatalf("MetricsAddr() = %q, want a loopback address", addr)
	}
	m := b.tel.WrapModel(&fakeModel{resp: okResponse()}, "sim")
	if _, err := m.Chat(ctxWithAttrs(t), request()); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	b.tel.Meters.RecordTask(ctx, "rollout", "ok")
	b.tel.Meters.RecordCacheHit(ctx, "rollout", 10)
	b.tel.Meters.SetQueueDepth(ctx, 3)
	b.tel.Meters.AddInFlight(ctx, "rollout", 1)
	b.tel.Meters.SetWorkers(ctx, 2)

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics = %d, %v", resp.StatusCode, err)
	}
	text := string(body)
	for _, name := range []string{
		"gen_ai_client_token_usage_bucket{",
		"gen_ai_client_operation_duration_seconds_bucket{",
		"skillfleet_tasks_total{",
		"skillfleet_retries_total{",
		"skillfleet_rate_limited_total{",
		"skillfleet_cache_hits_total{",
		"skillfleet_cache_tokens_saved_total{",
		"skillfleet_queue_depth{",
		"skillfleet_tasks_in_flight{",
		"skillfleet_workers{",
		`gen_ai_token_type="input"`,
		`skillfleet_stage="rollout"`,
		"go_goroutines",
	} {
		if !strings.Contains(text, name) {
			t.Errorf("/metrics lacks %q", name)
		}
	}
	for _, bad := range []string{plantedKey, "PROMPT-MARKER", "run-1/7/rollout/3"} {
		if strings.Contains(text, bad) {
			t.Errorf("/metrics carries %q", bad)
		}
	}
	if t.Failed() {
		t.Logf("/metrics:\n%s", text)
	}
}

func TestMetricsListenAddr(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{":9464", "127.0.0.1:9464"},
		{"9464", "127.0.0.1:9464"},
		{"0.0.0.0:9464", "0.0.0.0:9464"},
		{"localhost:9000", "localhost:9000"},
		{"[::1]:9464", "[::1]:9464"},
	}
	for _, tt := range tests {
		if got := metricsListenAddr(tt.in); got != tt.want {
			t.Errorf("metricsListenAddr(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestExportPlan(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		env     map[string]string
		want    string
		wantErr bool
	}{
		{name: "nothing set", env: nil, want: ""},
		{name: "endpoint defaults to grpc", env: map[string]string{envEndpoint: "http://127.0.0.1:4317"}, want: "otlp/grpc"},
		{name: "traces endpoint alone", env: map[string]string{envTracesEndpoint: "http://127.0.0.1:4318/v1/traces", envProtocol: "http/protobuf"}, want: "otlp/http"},
		{name: "traces protocol wins", env: map[string]string{envEndpoint: "x", envProtocol: "http/protobuf", envTracesProtocol: "grpc"}, want: "otlp/grpc"},
		{name: "exporter none", env: map[string]string{envEndpoint: "x", envTracesExporter: "none"}, want: ""},
		{name: "sdk disabled", env: map[string]string{envEndpoint: "x", envSDKDisabled: "true"}, want: ""},
		{name: "http/json unsupported", env: map[string]string{envEndpoint: "x", envProtocol: "http/json"}, wantErr: true},
		{name: "console unsupported", env: map[string]string{envEndpoint: "x", envTracesExporter: "console"}, wantErr: true},
		{name: "protocol without endpoint", env: map[string]string{envProtocol: "grpc"}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := exportPlan(func(k string) string { return tt.env[k] })
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Errorf("exportPlan() = %q, %v; want %q, error %v", got, err, tt.want, tt.wantErr)
			}
		})
	}
}

func TestLogHandler(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{})
	var buf bytes.Buffer
	log := slog.New(NewLogHandler(slog.NewJSONHandler(&buf, nil))).With("run_id", "r1")
	log.InfoContext(t.Context(), "no span")
	ctx, span := b.tel.Tracer.Start(t.Context(), "op")
	log.InfoContext(ctx, "in span", "step", 2)
	span.End()

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("got %d log lines, want 2: %s", len(lines), buf.String())
	}
	var first, second map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &first); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatal(err)
	}
	if _, ok := first[LogTraceID]; ok {
		t.Errorf("line without a span has %s: %s", LogTraceID, lines[0])
	}
	sc := span.SpanContext()
	if second[LogTraceID] != sc.TraceID().String() || second[LogSpanID] != sc.SpanID().String() || second["run_id"] != "r1" {
		t.Errorf("line in span = %s, want trace_id %s span_id %s run_id r1", lines[1], sc.TraceID(), sc.SpanID())
	}
}

func TestAttrsOverlay(t *testing.T) {
	t.Parallel()
	ctx := WithAttrs(t.Context(), Attrs{Run: "r", Step: 3, Stage: "rollout"})
	ctx = WithAttrs(ctx, Attrs{Stage: "gate", TaskID: "t1"})
	want := Attrs{Run: "r", Step: 3, Stage: "gate", TaskID: "t1"}
	if diff := cmp.Diff(want, AttrsFrom(ctx)); diff != "" {
		t.Errorf("AttrsFrom() (-want +got):\n%s", diff)
	}
	if got := (Attrs{Run: "r"}).KeyValues(); len(got) != 2 || got[1] != KeyStep.Int(0) {
		t.Errorf("KeyValues() of a baseline = %v, want run and step 0", got)
	}
	if got := (Attrs{}).KeyValues(); len(got) != 0 {
		t.Errorf("KeyValues() of nothing = %v, want none", got)
	}
}

func TestRedactor(t *testing.T) {
	t.Parallel()
	r := NewRedactor("exact-secret-123", "", "abc")
	tests := []struct{ in, want string }{
		{"key sk-proj-abcdefghijklmnop1234 end", "key [REDACTED] end"},
		{"key sk-ant-api03-abcdefghijklmnopqrstuv end", "key [REDACTED] end"},
		{"Authorization: Bearer abcdefghijklmnopqrstuvwxyz0123", "Authorization: [REDACTED]"},
		{"api_key=abcd1234efgh5678", "api_key=[REDACTED]"},
		{`{"x-api-key": "zzzzzzzzzzzz"}`, `{"x-api-key": "[REDACTED]"}`},
		{"g AIzaSyA-abcdefghijklmnopqrstuvwxyz12345 g", "g [REDACTED] g"},
		{"value exact-secret-123 here", "value [REDACTED] here"},
		{"abc is too short to redact; the sky is blue", "abc is too short to redact; the sky is blue"},
		{"ask-me anything, sk-short", "ask-me anything, sk-short"},
	}
	for _, tt := range tests {
		if got := r.Redact(tt.in); got != tt.want {
			t.Errorf("Redact(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	var nilR *Redactor
	if got := nilR.Redact("sk-abcdefghijklmnopqrstu"); got != Redacted {
		t.Errorf("nil Redactor.Redact() = %q, want %q", got, Redacted)
	}
}

func TestEndChatErrorKinds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		err      error
		wantType string
		wantDesc string
	}{
		{&llm.Error{Kind: llm.KindRateLimited, Status: 429, Msg: "slow down"}, "rate_limited", "rate_limited (HTTP 429)"},
		{context.DeadlineExceeded, "timeout", "timeout"},
		{fmt.Errorf("wrapped: %w", &llm.Error{Kind: llm.KindTransport, Err: errors.New("dial " + plantedKey)}), "transport", "transport"},
		{errors.New("plain " + plantedKey), "unknown", "unknown"},
	}
	for _, tt := range tests {
		b := setup(t, Options{})
		_, span := StartChat(t.Context(), b.tel.Tracer, ChatAttrs{RequestModel: "m"})
		EndChat(span, Usage{Input: 99}, "", tt.err)
		s := onlySpan(t, b.spans)
		if got := attrMap(s.Attributes)[KeyErrorType].AsString(); got != tt.wantType || s.Status.Description != tt.wantDesc {
			t.Errorf("EndChat(%v): error.type %q status %q, want %q %q", tt.err, got, s.Status.Description, tt.wantType, tt.wantDesc)
		}
		if _, ok := attrMap(s.Attributes)[KeyInputTokens]; ok {
			t.Errorf("EndChat(%v) recorded usage on a failed call", tt.err)
		}
		if strings.Contains(spanText(s), plantedKey) {
			t.Errorf("EndChat(%v) leaked the error text", tt.err)
		}
	}
}

func TestShutdownStopsEndpoint(t *testing.T) {
	t.Parallel()
	tel, shutdown, err := Setup(t.Context(), Options{MetricsAddr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := shutdown(ctx); err != nil {
		t.Errorf("shutdown() = %v", err)
	}
	if c, err := net.Dial("tcp", tel.MetricsAddr()); err == nil {
		c.Close()
		t.Errorf("metrics endpoint %s still accepts connections after shutdown", tel.MetricsAddr())
	}
}

// TestCellTravelsAsBaggage: a cell's names set on the coordinator's
// context reach, through the task headers' propagation, the context a
// worker extracts, where its task and model-call spans carry them; a name
// baggage cannot carry as is (a space, a comma) arrives intact.
func TestCellTravelsAsBaggage(t *testing.T) {
	t.Parallel()
	b := setup(t, Options{ServiceName: "skillfleet-worker"})
	ctx := WithCell(t.Context(), "grid 1", "lr=4,seed 2")
	if a := AttrsFrom(ctx); a.Campaign != "grid 1" || a.Cell != "lr=4,seed 2" {
		t.Fatalf("attrs on the coordinator side %+v", a)
	}
	headers := propagation.MapCarrier{}
	b.tel.Propagator.Inject(ctx, headers)
	if headers.Get("baggage") == "" {
		t.Fatalf("no baggage header in %v", headers)
	}
	wctx := b.tel.Propagator.Extract(context.Background(), headers)
	wctx = WithAttrs(wctx, Attrs{Run: "r1", Stage: "reflect", Role: "optimizer", TaskID: "r1/reflect/0", Kind: "reflect"})
	wctx, task := StartSpan(wctx, b.tel.Tracer, TaskSpanName("reflect"), Attrs{})
	_, chat := StartChat(wctx, b.tel.Tracer, ChatAttrsFrom(wctx, "openai", "m"))
	EndChat(chat, Usage{Input: 1, Output: 1}, "m", nil)
	task.End()
	spans := b.spans.GetSpans()
	if len(spans) != 2 {
		t.Fatalf("%d spans, want 2", len(spans))
	}
	for _, s := range spans {
		got := attrMap(s.Attributes)
		if got[KeyCampaign].AsString() != "grid 1" || got[KeyCell].AsString() != "lr=4,seed 2" {
			t.Errorf("span %q: campaign %q cell %q, want the cell's names", s.Name, got[KeyCampaign].AsString(), got[KeyCell].AsString())
		}
	}
	// Outside a cell, no such attributes.
	_, plain := StartSpan(context.Background(), b.tel.Tracer, SpanRun, Attrs{Run: "r2"})
	plain.End()
	for _, s := range b.spans.GetSpans() {
		if s.Name == SpanRun {
			if _, ok := attrMap(s.Attributes)[KeyCell]; ok {
				t.Errorf("a run outside a campaign carries %s", KeyCell)
			}
		}
	}
}
