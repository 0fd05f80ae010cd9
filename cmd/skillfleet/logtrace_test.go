package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http/httptest"
	"path/filepath"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	simmodel "github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/pkg/telemetry"
)

// TestLogLineCarriesItsTrace runs the demo against a sim server whose
// optimizer replies are sometimes unusable, with JSON logs and an
// in-memory span exporter. The trainer's warning about a failed optimizer
// call is written inside that call's stage span: the line must carry the
// trace and span ids of a recorded stage span, so it leads to its trace.
func TestLogLineCarriesItsTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo")
	}
	exp := tracetest.NewInMemoryExporter()
	telemetryHook = func(o *telemetry.Options) { o.SpanExporter = keepSpans{exp} }
	defer func() { telemetryHook = nil }()

	hs := httptest.NewServer(simmodel.NewServer(simmodel.New(simmodel.Options{}), simmodel.ServerOptions{FaultRateMalformed: 0.5, FaultSeed: 7}))
	defer hs.Close()
	root := repoRoot(t)
	var stdout, stderr bytes.Buffer
	code := run([]string{"train", "--config", filepath.Join(root, "configs", "demo.yaml"), "--out", filepath.Join(t.TempDir(), "run"),
		"--no-fsync", "--log-format", "json",
		"--set", "env.skill_init=" + filepath.Join(root, "configs", "skills", "sim_demo_seed.md"),
		"--set", "runtime.sim_llm=false", "--set", "runtime.max_deliveries=1",
		"--set", "model.target_base_url=" + hs.URL + "/v1", "--set", "model.optimizer_base_url=" + hs.URL + "/v1"}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("train exit %d\n%s", code, stderr.String())
	}

	// span id -> name, for every recorded span: a stage's span, or the
	// step's span for the reflect and merge calls the step streams.
	stages := map[string]string{}
	for _, s := range exp.GetSpans() {
		stages[s.SpanContext.TraceID().String()+"/"+s.SpanContext.SpanID().String()] = s.Name
	}
	var warned, traced int
	sc := bufio.NewScanner(&stderr)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line map[string]any
		if json.Unmarshal(sc.Bytes(), &line) != nil || line["msg"] != "optimizer call failed" {
			continue
		}
		warned++
		tid, _ := line[telemetry.LogTraceID].(string)
		sid, _ := line[telemetry.LogSpanID].(string)
		if name, ok := stages[tid+"/"+sid]; ok {
			traced++
			if line["stage"] == nil {
				t.Errorf("line %s has no stage attribute (span %s)", sc.Bytes(), name)
			}
		} else {
			t.Errorf("log line %s: trace_id/span_id name no recorded span", sc.Bytes())
		}
	}
	if warned == 0 {
		t.Fatalf("no 'optimizer call failed' line in the log; faults did not reach the trainer:\n%s", stderr.String())
	}
	t.Logf("%d failed optimizer calls logged, %d with their stage span's ids", warned, traced)
}
