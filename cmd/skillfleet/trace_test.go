package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	simmodel "github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/pkg/telemetry"
)

// keepSpans keeps the in-memory exporter's spans when the run shuts its
// tracer provider down (the exporter would reset itself).
type keepSpans struct{ *tracetest.InMemoryExporter }

func (keepSpans) Shutdown(context.Context) error { return nil }

func attrOf(s tracetest.SpanStub, k attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes {
		if kv.Key == k {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// TestTraceCoversEveryToken runs the demo in-process (coordinator and
// workers over embedded NATS and gRPC, the model behind the sim's HTTP
// server) with an in-memory span exporter. Every step is one connected
// subtree run > epoch > step > stage > task > chat crossing the queue and
// the workers; every model call's span carries the GenAI attributes; the
// token counts of the chat spans add up to tokens.json and to the sim
// server's own count; neither the planted API key nor prompt text appears
// in any span or metric.
func TestTraceCoversEveryToken(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo")
	}
	const plantedKey = "sk-planted-trace-key-0123456789abcdef"
	t.Setenv("OPENAI_API_KEY", plantedKey)
	exp := tracetest.NewInMemoryExporter()
	reader := sdkmetric.NewManualReader()
	telemetryHook = func(o *telemetry.Options) {
		o.SpanExporter = keepSpans{exp}
		o.MetricReader = reader
	}
	defer func() { telemetryHook = nil }()

	simSrv := simmodel.NewServer(simmodel.New(simmodel.Options{}), simmodel.ServerOptions{})
	hs := httptest.NewServer(simSrv)
	defer hs.Close()
	root := repoRoot(t)
	dir := filepath.Join(t.TempDir(), "run")
	var stdout, stderr bytes.Buffer
	code := run([]string{"train", "--config", filepath.Join(root, "configs", "demo.yaml"), "--out", dir, "--no-fsync",
		"--set", "env.skill_init=" + filepath.Join(root, "configs", "skills", "sim_demo_seed.md"),
		"--set", "runtime.sim_llm=false", "--set", "runtime.workers=2",
		// No early stop: a gate rollout cancelled while its call is in
		// flight is billed by the server but never answered, so no client
		// can count it; without cancellations the counts must agree exactly.
		"--set", "evaluation.early_stop=false",
		"--set", "model.target_base_url=" + hs.URL + "/v1", "--set", "model.optimizer_base_url=" + hs.URL + "/v1"}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("train exit %d\n%s", code, stderr.String())
	}
	// Metrics are read before the run's providers are gone? The manual
	// reader keeps working after shutdown only for what it collected; it
	// was registered, so Collect returns the final state or an error.
	var rm metricdata.ResourceMetrics
	_ = reader.Collect(context.Background(), &rm)

	spans := exp.GetSpans()
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID()] = s
	}
	// One run span, the root of one trace holding everything.
	var runSpan tracetest.SpanStub
	runs := 0
	for _, s := range spans {
		if s.Name == telemetry.SpanRun {
			runSpan = s
			runs++
		}
	}
	if runs != 1 {
		t.Fatalf("%d run spans, want 1 (of %d spans)", runs, len(spans))
	}
	// Every span reaches the run span through recorded parents: the trace
	// is connected across the queue (task spans) and gRPC (report spans).
	stepOf := func(s tracetest.SpanStub) (int64, bool) {
		for cur := s; ; {
			if cur.Name == telemetry.SpanStep {
				v, _ := attrOf(cur, telemetry.KeyStep)
				return v.AsInt64(), true
			}
			p, ok := byID[cur.Parent.SpanID()]
			if !ok {
				return 0, false
			}
			cur = p
		}
	}
	reachesRun := func(s tracetest.SpanStub) bool {
		for cur, n := s, 0; n < 64; n++ {
			if cur.SpanContext.SpanID() == runSpan.SpanContext.SpanID() {
				return true
			}
			p, ok := byID[cur.Parent.SpanID()]
			if !ok {
				return false
			}
			cur = p
		}
		return false
	}
	steps := map[int64]int{}
	var chats int
	var inTok, outTok int64
	for _, s := range spans {
		if strings.HasSuffix(s.Name, "/Register") || strings.HasSuffix(s.Name, "/Heartbeat") {
			continue // worker lifecycle calls, not part of any task
		}
		if s.SpanContext.TraceID() != runSpan.SpanContext.TraceID() {
			t.Errorf("span %q is in another trace", s.Name)
			continue
		}
		if !reachesRun(s) {
			t.Errorf("span %q (parent %s) is not connected to the run span", s.Name, s.Parent.SpanID())
		}
		if s.Name == telemetry.SpanStep {
			v, _ := attrOf(s, telemetry.KeyStep)
			steps[v.AsInt64()]++
		}
		if !strings.HasPrefix(s.Name, "chat ") {
			continue
		}
		chats++
		if s.SpanKind != trace.SpanKindClient {
			t.Errorf("chat span kind %v", s.SpanKind)
		}
		for _, k := range []attribute.Key{telemetry.KeyOperationName, telemetry.KeyProviderName, telemetry.KeyRequestModel,
			telemetry.KeyResponseModel, telemetry.KeyInputTokens, telemetry.KeyOutputTokens,
			telemetry.KeyStage, telemetry.KeyRole, telemetry.KeyRun, telemetry.KeyTaskID} {
			if _, ok := attrOf(s, k); !ok {
				t.Errorf("chat span %q lacks %s", s.Name, k)
			}
		}
		// A step, never negative; or, for an epoch-level wave, its epoch.
		if v, ok := attrOf(s, telemetry.KeyStep); ok && v.AsInt64() < 0 {
			t.Errorf("chat span %q has skillfleet.step %d", s.Name, v.AsInt64())
		} else if _, epoch := attrOf(s, telemetry.KeyEpoch); !ok && !epoch {
			t.Errorf("chat span %q has neither skillfleet.step nor skillfleet.epoch", s.Name)
		}
		in, _ := attrOf(s, telemetry.KeyInputTokens)
		out, _ := attrOf(s, telemetry.KeyOutputTokens)
		inTok += in.AsInt64()
		outTok += out.AsInt64()
		// A chat span under a step carries that step.
		if g, ok := stepOf(s); ok {
			if v, _ := attrOf(s, telemetry.KeyStep); v.AsInt64() != g {
				t.Errorf("chat span under step %d says skillfleet.step=%d", g, v.AsInt64())
			}
		}
	}
	var sum struct {
		TotalSteps int `json:"total_steps"`
	}
	if err := json.Unmarshal(readFile(t, filepath.Join(dir, "summary.json")), &sum); err != nil {
		t.Fatal(err)
	}
	if len(steps) != sum.TotalSteps {
		t.Errorf("%d step spans, want one per step (%d)", len(steps), sum.TotalSteps)
	}
	for g, n := range steps {
		if n != 1 {
			t.Errorf("step %d has %d spans", g, n)
		}
	}

	// Tokens: spans = tokens.json = the sim server's count.
	var tok struct {
		Total struct {
			Input  int64 `json:"input_tokens"`
			Output int64 `json:"output_tokens"`
			Calls  int64 `json:"calls"`
		} `json:"total"`
	}
	if err := json.Unmarshal(readFile(t, filepath.Join(dir, "tokens.json")), &tok); err != nil {
		t.Fatal(err)
	}
	st := simSrv.Stats()
	t.Logf("%d spans, %d chat spans; tokens in/out: spans %d/%d, tokens.json %d/%d, sim %d/%d",
		len(spans), chats, inTok, outTok, tok.Total.Input, tok.Total.Output, st.InputTokens, st.OutputTokens)
	if inTok != tok.Total.Input || outTok != tok.Total.Output {
		t.Errorf("span tokens %d/%d != tokens.json %d/%d", inTok, outTok, tok.Total.Input, tok.Total.Output)
	}
	if inTok != st.InputTokens || outTok != st.OutputTokens {
		t.Errorf("span tokens %d/%d != sim server %d/%d", inTok, outTok, st.InputTokens, st.OutputTokens)
	}
	if int64(chats) != st.Served || tok.Total.Calls != st.Served {
		t.Errorf("chat spans %d, tokens.json calls %d, sim served %d", chats, tok.Total.Calls, st.Served)
	}

	// No key, no prompt text in spans or metrics.
	prompt := "Answer every question from the record it quotes."
	dump := fmt.Sprintf("%+v", spans) + fmt.Sprintf("%+v", rm)
	for _, secret := range []string{plantedKey, prompt} {
		if strings.Contains(dump, secret) {
			t.Errorf("spans or metrics contain %q", secret)
		}
	}
}
