package main

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/skillfleet/skillfleet/internal/ui/uitest"
	"github.com/skillfleet/skillfleet/pkg/telemetry"
)

// The Jaeger these tests run is the v2 all-in-one that scripts/jaeger.sh
// builds from the Go module proxy; SKILLFLEET_JAEGER names the binary,
// and without it the script's default cache path is tried.
const jaegerVersion = "v1.76.0"

// jaegerBinary returns the Jaeger binary, or skips the test (fails it
// under SKILLFLEET_REQUIRE_JAEGER=1) naming how to build one.
func jaegerBinary(t *testing.T) string {
	t.Helper()
	path := os.Getenv("SKILLFLEET_JAEGER")
	if path == "" {
		path = filepath.Join(jaegerCache(), "jaeger-"+jaegerVersion, "bin", "jaeger")
	}
	if fi, err := os.Stat(path); err != nil || fi.IsDir() || fi.Mode()&0o111 == 0 {
		msg := fmt.Sprintf("no Jaeger binary at %s: build it with `nice -n 10 scripts/jaeger.sh` and set SKILLFLEET_JAEGER to the path it prints", path)
		if os.Getenv("SKILLFLEET_REQUIRE_JAEGER") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return path
}

// jaegerCache is where scripts/jaeger.sh builds: $XDG_CACHE_HOME or
// ~/.cache, then skillfleet.
func jaegerCache() string {
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, _ := os.UserHomeDir()
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "skillfleet")
}

// jaegerUIAssets returns a jaeger-ui build (the directory holding its
// index.html) at $SKILLFLEET_JAEGER_UI, else where `scripts/jaeger.sh
// --ui` builds it, or skips the test (fails it under
// SKILLFLEET_REQUIRE_JAEGER_UI=1) naming how to build one. The UI has a
// flag of its own: its build needs GitHub and npm, the binary only the Go
// module proxy.
func jaegerUIAssets(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("SKILLFLEET_JAEGER_UI")
	if dir == "" {
		dir = filepath.Join(jaegerCache(), "jaeger-ui-"+jaegerVersion, "packages", "jaeger-ui", "build")
	}
	if _, err := os.Stat(filepath.Join(dir, "index.html")); err != nil {
		msg := fmt.Sprintf("no jaeger-ui build at %s: build it with `nice -n 10 scripts/jaeger.sh --ui` and set SKILLFLEET_JAEGER_UI to the path it prints", dir)
		if os.Getenv("SKILLFLEET_REQUIRE_JAEGER_UI") == "1" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

// jaegerServer is a running Jaeger: OTLP in over gRPC and HTTP, the query
// API (the one its UI uses) out, in-memory storage, all on loopback.
type jaegerServer struct {
	otlpGRPC, otlpHTTP string // host:port
	query              string // http://host:port
	p                  *proc
}

// jaegerConfig is a v2 configuration that keeps every listener on the
// given loopback addresses and stores traces in memory.
func jaegerConfig(otlpGRPC, otlpHTTP, queryHTTP, queryGRPC, uiAssets string) string {
	ui := ""
	if uiAssets != "" {
		ui = "\n    ui:\n      assets_path: " + uiAssets
	}
	return `service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      processors: [batch]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 100000
  jaeger_query:
    storage:
      traces: mem
    http:
      endpoint: ` + queryHTTP + `
    grpc:
      endpoint: ` + queryGRPC + ui + `
receivers:
  otlp:
    protocols:
      grpc:
        endpoint: ` + otlpGRPC + `
      http:
        endpoint: ` + otlpHTTP + `
processors:
  batch:
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`
}

// startJaeger starts a Jaeger of its own for the test and waits until its
// query API answers.
func startJaeger(t *testing.T) *jaegerServer {
	t.Helper()
	return startJaegerUI(t, "")
}

// startJaegerUI is startJaeger serving the jaeger-ui build at uiAssets
// ("" for the module's placeholder page).
func startJaegerUI(t *testing.T, uiAssets string) *jaegerServer {
	t.Helper()
	bin := jaegerBinary(t)
	j := &jaegerServer{otlpGRPC: freeAddr(t), otlpHTTP: freeAddr(t)}
	queryHTTP := freeAddr(t)
	j.query = "http://" + queryHTTP
	cfg := filepath.Join(t.TempDir(), "jaeger.yaml")
	if err := os.WriteFile(cfg, []byte(jaegerConfig(j.otlpGRPC, j.otlpHTTP, queryHTTP, freeAddr(t), uiAssets)), 0o644); err != nil {
		t.Fatal(err)
	}
	j.p = startCmd(t, bin, "--config", cfg)
	deadline := time.Now().Add(60 * time.Second)
	for {
		r, err := http.Get(j.query + "/api/services")
		if err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				return j
			}
		}
		select {
		case err := <-j.p.done:
			t.Fatalf("jaeger exited: %v\n%s", err, j.p.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("jaeger's query API did not answer in 60 s: %v\n%s", err, j.p.stderr.String())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// exportTo points this test's skillfleet processes at j: over gRPC or
// over HTTP (http/protobuf).
func (j *jaegerServer) exportTo(t *testing.T, protocol string) {
	t.Helper()
	for _, k := range []string{"OTEL_SDK_DISABLED", "OTEL_TRACES_EXPORTER", "OTEL_SERVICE_NAME", "OTEL_TRACES_SAMPLER",
		"OTEL_TRACES_SAMPLER_ARG", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_HEADERS"} {
		t.Setenv(k, "")
		os.Unsetenv(k)
	}
	switch protocol {
	case "grpc":
		t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+j.otlpGRPC)
	case "http/protobuf":
		t.Setenv("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://"+j.otlpHTTP)
	default:
		t.Fatalf("protocol %q", protocol)
	}
}

// The query API's JSON (GET /api/traces), as far as the checks read it.
type jaegerTrace struct {
	TraceID   string                   `json:"traceID"`
	Spans     []jaegerSpan             `json:"spans"`
	Processes map[string]jaegerProcess `json:"processes"`
	Warnings  []string                 `json:"warnings"`
}

type jaegerSpan struct {
	TraceID       string      `json:"traceID"`
	SpanID        string      `json:"spanID"`
	OperationName string      `json:"operationName"`
	References    []jaegerRef `json:"references"`
	Tags          []jaegerTag `json:"tags"`
	ProcessID     string      `json:"processID"`
	Warnings      []string    `json:"warnings"`
}

type jaegerRef struct {
	RefType string `json:"refType"`
	TraceID string `json:"traceID"`
	SpanID  string `json:"spanID"`
}

type jaegerTag struct {
	Key   string      `json:"key"`
	Type  string      `json:"type"`
	Value json.Number `json:"value"`
	// Str is the value of string and bool tags (json.Number takes numbers only).
	Str string `json:"-"`
}

func (g *jaegerTag) UnmarshalJSON(b []byte) error {
	var raw struct {
		Key   string          `json:"key"`
		Type  string          `json:"type"`
		Value json.RawMessage `json:"value"`
	}
	if err := json.Unmarshal(b, &raw); err != nil {
		return err
	}
	g.Key, g.Type = raw.Key, raw.Type
	switch raw.Type {
	case "int64", "float64":
		return json.Unmarshal(raw.Value, &g.Value)
	case "bool":
		var v bool
		if err := json.Unmarshal(raw.Value, &v); err != nil {
			return err
		}
		g.Str = fmt.Sprint(v)
	default:
		if err := json.Unmarshal(raw.Value, &g.Str); err != nil {
			g.Str = string(raw.Value)
		}
	}
	return nil
}

type jaegerProcess struct {
	ServiceName string `json:"serviceName"`
}

// getJSON GETs the query API's path into v, failing the test on a non-200.
func (j *jaegerServer) getJSON(t *testing.T, path string, v any) {
	t.Helper()
	r, err := http.Get(j.query + path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(r.Body)
	if r.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s\n%s", path, r.Status, buf.String())
	}
	if err := json.Unmarshal(buf.Bytes(), v); err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
}

// services lists the services Jaeger holds spans of.
func (j *jaegerServer) services(t *testing.T) []string {
	t.Helper()
	var resp struct {
		Data []string `json:"data"`
	}
	j.getJSON(t, "/api/services", &resp)
	sort.Strings(resp.Data)
	return resp.Data
}

// traces finds every trace with a span of service since the given time,
// as the UI's Find Traces does (with no limit that could cut the list).
func (j *jaegerServer) traces(t *testing.T, service string, since time.Time) []jaegerTrace {
	t.Helper()
	return j.search(t, url.Values{"service": {service}}, since)
}

// search is the UI's Find Traces with the given fields (service,
// operation, tags as JSON).
func (j *jaegerServer) search(t *testing.T, q url.Values, since time.Time) []jaegerTrace {
	t.Helper()
	q.Set("start", fmt.Sprint(since.Add(-time.Minute).UnixMicro()))
	q.Set("end", fmt.Sprint(time.Now().Add(time.Minute).UnixMicro()))
	q.Set("limit", "100000")
	var resp struct {
		Data   []jaegerTrace `json:"data"`
		Errors []any         `json:"errors"`
	}
	j.getJSON(t, "/api/traces?"+q.Encode(), &resp)
	if len(resp.Errors) > 0 {
		t.Fatalf("jaeger: %v", resp.Errors)
	}
	return resp.Data
}

// allTraces reads back every trace of every skillfleet service, once
// Jaeger has stored all the processes exported: the count of spans is the
// same in two reads in a row. It returns the traces by ID. A campaign's
// traces are some ten megabytes of JSON per service, which the query API
// takes seconds to serve on a busy machine: the wait is bounded by a few
// minutes, not by a count of reads.
func (j *jaegerServer) allTraces(t *testing.T, since time.Time) map[string]jaegerTrace {
	t.Helper()
	last := -1
	deadline := time.Now().Add(5 * time.Minute)
	for {
		out := map[string]jaegerTrace{}
		for _, svc := range j.services(t) {
			if !strings.HasPrefix(svc, "skillfleet") {
				continue
			}
			for _, tr := range j.traces(t, svc, since) {
				out[tr.TraceID] = tr
			}
		}
		n := 0
		for _, tr := range out {
			n += len(tr.Spans)
		}
		if n > 0 && n == last {
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("jaeger's span count did not settle in 5 minutes (last %d)", n)
		}
		last = n
		time.Sleep(2 * time.Second)
	}
}

// spanStubs turns the query API's traces into the SDK's span records, so
// that the in-memory exporter tests' checks read them: IDs, name, parent
// (the CHILD_OF reference), links (FOLLOWS_FROM), kind and typed
// attributes. Jaeger's own warnings about a trace (a span whose parent it
// does not hold, for one) fail the test.
func spanStubs(t *testing.T, traces map[string]jaegerTrace) (tracetest.SpanStubs, map[string]int) {
	t.Helper()
	var out tracetest.SpanStubs
	perService := map[string]int{}
	seen := map[string]bool{}
	for _, tr := range traces {
		for _, w := range tr.Warnings {
			t.Errorf("jaeger warns about trace %s: %s", tr.TraceID, w)
		}
		for _, s := range tr.Spans {
			if seen[s.SpanID] {
				continue
			}
			seen[s.SpanID] = true
			for _, w := range s.Warnings {
				if strings.Contains(w, "parent") {
					t.Errorf("jaeger warns about span %q: %s", s.OperationName, w)
				}
			}
			perService[tr.Processes[s.ProcessID].ServiceName]++
			st := tracetest.SpanStub{Name: s.OperationName, SpanContext: spanContext(t, s.TraceID, s.SpanID)}
			for _, r := range s.References {
				sc := spanContext(t, r.TraceID, r.SpanID)
				switch r.RefType {
				case "CHILD_OF":
					st.Parent = sc
				default:
					st.Links = append(st.Links, sdktrace.Link{SpanContext: sc})
				}
			}
			for _, g := range s.Tags {
				if g.Key == "span.kind" {
					st.SpanKind = map[string]trace.SpanKind{"client": trace.SpanKindClient, "server": trace.SpanKindServer,
						"producer": trace.SpanKindProducer, "consumer": trace.SpanKindConsumer, "internal": trace.SpanKindInternal}[g.Str]
					continue
				}
				switch g.Type {
				case "int64":
					v, err := g.Value.Int64()
					if err != nil {
						t.Fatalf("span %q tag %s: %v", s.OperationName, g.Key, err)
					}
					st.Attributes = append(st.Attributes, attribute.Int64(g.Key, v))
				case "float64":
					v, _ := g.Value.Float64()
					st.Attributes = append(st.Attributes, attribute.Float64(g.Key, v))
				case "bool":
					st.Attributes = append(st.Attributes, attribute.Bool(g.Key, g.Str == "true"))
				default:
					st.Attributes = append(st.Attributes, attribute.String(g.Key, g.Str))
				}
			}
			out = append(out, st)
		}
	}
	return out, perService
}

func spanContext(t *testing.T, traceID, spanID string) trace.SpanContext {
	t.Helper()
	var tid trace.TraceID
	var sid trace.SpanID
	// Jaeger drops leading zeros of IDs: pad them back.
	tb, err1 := hex.DecodeString(fmt.Sprintf("%032s", traceID))
	sb, err2 := hex.DecodeString(fmt.Sprintf("%016s", spanID))
	if err1 != nil || err2 != nil || len(tb) != 16 || len(sb) != 8 {
		t.Fatalf("bad ids %q %q", traceID, spanID)
	}
	copy(tid[:], tb)
	copy(sid[:], sb)
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid})
}

// checkStageTokens compares the model-call spans' tokens per stage with
// tokens.json's (want): each stage's spans hold at least its row, and
// what they hold beyond it adds up to the hedged and prefetch rows (a
// hedged loser's tokens are counted under "hedged" and its span under the
// stage it was hedged in; a prefetched rollout a gate threw away is
// counted under "prefetch" and its span under "rollout").
func checkStageTokens(t *testing.T, what string, got, want map[string]inOut) {
	t.Helper()
	hedged := want["hedged"]
	hedged.In += want["prefetch"].In
	hedged.Out += want["prefetch"].Out
	var extra inOut
	for st, w := range want {
		if w == (inOut{}) || st == "hedged" || st == "prefetch" {
			continue
		}
		g := got[st]
		if g.In < w.In || g.Out < w.Out {
			t.Errorf("%s stage %s: spans %d in / %d out, less than tokens.json's %d / %d", what, st, g.In, g.Out, w.In, w.Out)
		}
		extra.In += g.In - w.In
		extra.Out += g.Out - w.Out
	}
	for st, g := range got {
		if _, ok := want[st]; !ok {
			extra.In += g.In
			extra.Out += g.Out
		}
	}
	if extra != hedged {
		t.Errorf("%s: spans hold %d in / %d out beyond tokens.json's stages, its hedged and prefetch rows %d / %d", what, extra.In, extra.Out, hedged.In, hedged.Out)
	}
}

// checkRunTraceInJaeger: one run span, the root of one trace holding
// every span read back, each connected to it through parents Jaeger
// holds; model-call tokens per stage as tokens.json says.
func checkRunTraceInJaeger(t *testing.T, spans tracetest.SpanStubs, dir string) {
	t.Helper()
	byID := map[trace.SpanID]tracetest.SpanStub{}
	var runs []tracetest.SpanStub
	for _, s := range spans {
		byID[s.SpanContext.SpanID()] = s
		if s.Name == telemetry.SpanRun {
			runs = append(runs, s)
		}
	}
	if len(runs) != 1 {
		t.Fatalf("%d run spans in Jaeger, want 1 (of %d spans)", len(runs), len(spans))
	}
	run := runs[0]
	got := map[string]inOut{}
	kinds := map[string]int{}
	for _, s := range spans {
		if s.SpanContext.TraceID() != run.SpanContext.TraceID() {
			t.Errorf("span %q is in trace %s, not the run's", s.Name, s.SpanContext.TraceID())
			continue
		}
		connected := false
		for cur, n := s, 0; n < 64; n++ {
			if cur.SpanContext.SpanID() == run.SpanContext.SpanID() {
				connected = true
				break
			}
			p, ok := byID[cur.Parent.SpanID()]
			if !ok {
				break
			}
			cur = p
		}
		if !connected {
			t.Errorf("span %q (parent %s) is not connected to the run span", s.Name, s.Parent.SpanID())
		}
		kinds[s.Name]++
		if !strings.HasPrefix(s.Name, "chat ") {
			continue
		}
		kinds["chat"]++
		if s.SpanKind != trace.SpanKindClient {
			t.Errorf("chat span kind %v in Jaeger, want client", s.SpanKind)
		}
		st, _ := attrOf(s, telemetry.KeyStage)
		in, _ := attrOf(s, telemetry.KeyInputTokens)
		o, _ := attrOf(s, telemetry.KeyOutputTokens)
		io := got[st.AsString()]
		io.In += in.AsInt64()
		io.Out += o.AsInt64()
		got[st.AsString()] = io
	}
	t.Logf("run trace: %d spans: %d step, %d task, %d chat, %d report, %d record", len(spans), kinds[telemetry.SpanStep],
		countPrefix(kinds, telemetry.SpanTask), kinds["chat"], kinds[telemetry.SpanReport], kinds[telemetry.SpanRecord])
	if kinds["chat"] == 0 || countPrefix(kinds, telemetry.SpanTask) == 0 || kinds[telemetry.SpanRecord] == 0 {
		t.Errorf("no task, model-call or record spans in the run's trace: %v", kinds)
	}
	want := map[string]inOut{}
	for st, tot := range stageTokens(t, filepath.Join(dir, "tokens.json")) {
		want[st] = inOut{tot.Input, tot.Output}
	}
	checkStageTokens(t, "run", got, want)
	logStageTokens(t, "run", got)
}

func logStageTokens(t *testing.T, what string, got map[string]inOut) {
	var stages []string
	var total inOut
	for st, io := range got {
		stages = append(stages, fmt.Sprintf("%s %d/%d", st, io.In, io.Out))
		total.In += io.In
		total.Out += io.Out
	}
	sort.Strings(stages)
	t.Logf("%s: tokens in/out per stage in Jaeger: %s; total %d/%d", what, strings.Join(stages, ", "), total.In, total.Out)
}

// stopGracefully ends a long-lived process (a worker) with SIGTERM, as an
// operator would, so that it flushes its spans, and waits for it.
func stopGracefully(t *testing.T, p *proc) {
	t.Helper()
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		t.Errorf("process did not stop 30 s after SIGTERM\n%s", p.stderr.String())
	}
}

// waitDone waits for a process that ends by itself (train, coordinator,
// campaign) and fails the test unless it exits 0.
func waitDone(t *testing.T, what string, p *proc, timeout time.Duration) {
	t.Helper()
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, p.stderr.String())
		}
	case <-time.After(timeout):
		t.Fatalf("%s did not finish in %s\n%s", what, timeout, p.stderr.String())
	}
}

// jaegerDemoArgs: the demo without gate early stop (a rollout cancelled
// while its call is in flight has no usage to count on either side, so
// the spans and tokens.json agree exactly only without it).
func jaegerDemoArgs(root string) []string {
	return []string{"--config", filepath.Join(root, "configs", "demo.yaml"), "--no-fsync", "--log-level", "warn",
		"--set", "env.skill_init=" + filepath.Join(root, "configs", "skills", "sim_demo_seed.md"),
		"--set", "evaluation.early_stop=false"}
}

// jaegerCampaign writes a two-cell campaign of the demo (seeds 1 and 2),
// each cell measuring the no-skill column after training.
func jaegerCampaign(t *testing.T, root string) string {
	t.Helper()
	spec := filepath.Join(t.TempDir(), "campaign.yaml")
	body := "name: jaeger\nmax_active_runs: 2\nno_skill: true\ncells:\n" +
		"  - name: a\n    config: " + filepath.Join(root, "configs", "demo.yaml") + "\n    set: {train.seed: 1}\n" +
		"  - name: b\n    config: " + filepath.Join(root, "configs", "demo.yaml") + "\n    set: {train.seed: 2}\n"
	if err := os.WriteFile(spec, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestJaegerReadsBackEveryToken exports to a real Jaeger (v2, built by
// scripts/jaeger.sh) over OTLP and reads the traces back through the
// query API its UI uses, for the demo and a two-cell campaign, each
// all-in-one and on an external fleet (a NATS server, coordinator or
// campaign and two worker processes): one trace per run or cell, every
// span connected to its root, the no-skill measurement inside its cell's
// trace, and per stage the model-call spans' tokens equal to tokens.json
// (for a cell, its training's plus its no-skill run's).
func TestJaegerReadsBackEveryToken(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo and campaigns against a Jaeger process")
	}
	jaegerBinary(t) // skip before anything starts
	root := repoRoot(t)

	t.Run("demo-all-in-one", func(t *testing.T) {
		j := startJaeger(t)
		j.exportTo(t, "grpc")
		since := time.Now()
		dir := filepath.Join(t.TempDir(), "run")
		p := start(t, append(append([]string{"train"}, jaegerDemoArgs(root)...), "--out", dir, "--workers", "2")...)
		waitDone(t, "train", p, 4*time.Minute)
		spans, per := spanStubs(t, j.allTraces(t, since))
		t.Logf("services %v", per)
		checkRunTraceInJaeger(t, spans, dir)
	})

	t.Run("demo-external-fleet", func(t *testing.T) {
		j := startJaeger(t)
		j.exportTo(t, "http/protobuf")
		since := time.Now()
		natsURL := startNatsd(t)
		grpcAddr := freeAddr(t)
		dir := t.TempDir()
		coord := start(t, append(append([]string{"coordinator"}, jaegerDemoArgs(root)...), "--out", dir,
			"--nats", natsURL, "--grpc-addr", grpcAddr)...)
		var workers []*proc
		for range 2 {
			workers = append(workers, start(t, "worker", "--nats", natsURL, "--coordinator", grpcAddr,
				"--concurrency", "12", "--optimizer-concurrency", "8", "--log-level", "warn"))
		}
		waitDone(t, "coordinator", coord, 4*time.Minute)
		for _, w := range workers {
			stopGracefully(t, w)
		}
		spans, per := spanStubs(t, j.allTraces(t, since))
		t.Logf("services %v", per)
		if per["skillfleet-worker"] == 0 {
			t.Errorf("no spans of the worker processes (skillfleet-worker) in Jaeger: %v", per)
		}
		checkRunTraceInJaeger(t, spans, dir)
	})

	t.Run("campaign-all-in-one", func(t *testing.T) {
		j := startJaeger(t)
		j.exportTo(t, "grpc")
		since := time.Now()
		out := filepath.Join(t.TempDir(), "camp")
		p := start(t, "campaign", "--config", jaegerCampaign(t, root), "--out", out, "--workers", "2", "--log-level", "warn",
			"--set", "env.skill_init="+filepath.Join(root, "configs", "skills", "sim_demo_seed.md"),
			"--set", "evaluation.early_stop=false")
		waitDone(t, "campaign", p, 6*time.Minute)
		spans, per := spanStubs(t, j.allTraces(t, since))
		t.Logf("services %v", per)
		checkCampaignTrace(t, spans, out, []string{"a", "b"})
		logCellTokens(t, spans)
		checkReflectSearch(t, j, "skillfleet-campaign", spans, since)
	})

	t.Run("campaign-external-fleet", func(t *testing.T) {
		j := startJaeger(t)
		j.exportTo(t, "grpc")
		since := time.Now()
		natsURL := startNatsd(t)
		var workers []*proc
		for range 2 {
			workers = append(workers, start(t, "worker", "--nats", natsURL, "--concurrency", "12",
				"--optimizer-concurrency", "8", "--log-level", "warn"))
		}
		out := filepath.Join(t.TempDir(), "camp")
		p := start(t, "campaign", "--config", jaegerCampaign(t, root), "--out", out, "--nats", natsURL, "--log-level", "warn",
			"--set", "env.skill_init="+filepath.Join(root, "configs", "skills", "sim_demo_seed.md"),
			"--set", "evaluation.early_stop=false")
		waitDone(t, "campaign", p, 6*time.Minute)
		for _, w := range workers {
			stopGracefully(t, w)
		}
		spans, per := spanStubs(t, j.allTraces(t, since))
		t.Logf("services %v", per)
		if per["skillfleet-worker"] == 0 {
			t.Errorf("no spans of the worker processes (skillfleet-worker) in Jaeger: %v", per)
		}
		checkCampaignTrace(t, spans, out, []string{"a", "b"})
		logCellTokens(t, spans)
		checkReflectSearch(t, j, "skillfleet-worker", spans, since)
	})
}

// checkReflectSearch does the search docs/observability.md gives for a
// cell's reflect calls (operation chat sim-optimizer, tags skillfleet.cell
// and skillfleet.stage=reflect, under the service that made the calls):
// for each cell it finds that cell's trace and no other, and the matching
// spans there are every reflect call of the cell.
func checkReflectSearch(t *testing.T, j *jaegerServer, service string, spans tracetest.SpanStubs, since time.Time) {
	t.Helper()
	cellTrace := map[string]string{}
	reflects := map[string]int{}
	for _, s := range spans {
		if s.Name == telemetry.SpanCell {
			v, _ := attrOf(s, telemetry.KeyCell)
			cellTrace[v.AsString()] = s.SpanContext.TraceID().String()
		}
	}
	for _, s := range spans {
		if st, _ := attrOf(s, telemetry.KeyStage); s.Name == "chat sim-optimizer" && st.AsString() == "reflect" {
			for c, tr := range cellTrace {
				if tr == s.SpanContext.TraceID().String() {
					reflects[c]++
				}
			}
		}
	}
	for c, tr := range cellTrace {
		tags, _ := json.Marshal(map[string]string{"skillfleet.cell": c, "skillfleet.stage": "reflect"})
		found := j.search(t, url.Values{"service": {service}, "operation": {"chat sim-optimizer"}, "tags": {string(tags)}}, since)
		if len(found) != 1 || strings.TrimLeft(found[0].TraceID, "0") != strings.TrimLeft(tr, "0") {
			var ids []string
			for _, f := range found {
				ids = append(ids, f.TraceID)
			}
			t.Errorf("cell %s: the reflect search found traces %v, want its trace %s only", c, ids, tr)
			continue
		}
		if reflects[c] == 0 {
			t.Errorf("cell %s: no reflect calls in its trace", c)
		}
		t.Logf("cell %s: the reflect search finds its trace (%d spans, %d reflect calls)", c, len(found[0].Spans), reflects[c])
	}
}

// logCellTokens logs each cell's model-call tokens per stage as read
// back from Jaeger (the figures docs/observability.md quotes).
func logCellTokens(t *testing.T, spans tracetest.SpanStubs) {
	cellOf := map[trace.TraceID]string{}
	for _, s := range spans {
		if s.Name == telemetry.SpanCell {
			v, _ := attrOf(s, telemetry.KeyCell)
			cellOf[s.SpanContext.TraceID()] = v.AsString()
		}
	}
	per := map[string]map[string]inOut{}
	for _, s := range spans {
		if !strings.HasPrefix(s.Name, "chat ") {
			continue
		}
		c := cellOf[s.SpanContext.TraceID()]
		if per[c] == nil {
			per[c] = map[string]inOut{}
		}
		st, _ := attrOf(s, telemetry.KeyStage)
		in, _ := attrOf(s, telemetry.KeyInputTokens)
		o, _ := attrOf(s, telemetry.KeyOutputTokens)
		io := per[c][st.AsString()]
		io.In += in.AsInt64()
		io.Out += o.AsInt64()
		per[c][st.AsString()] = io
	}
	for c, got := range per {
		logStageTokens(t, "cell "+c, got)
	}
}

// TestJaegerUIFindsACellsReflectCalls does in the real Jaeger UI (the
// jaeger-ui build scripts/jaeger.sh --ui makes, served by the Jaeger
// binary) what docs/observability.md tells a user to do: after a two-cell
// campaign, Find Traces with the service skillfleet-campaign, the
// operation chat sim-optimizer and the tags skillfleet.cell=a
// skillfleet.stage=reflect. The page lists exactly one trace, cell a's,
// and none of cell b's. The window's screenshot goes to the test's
// artifact dir and, when set, to $SKILLFLEET_JAEGER_SCREENSHOT (the
// docs' image: docs/img/jaeger-cell-reflect.png).
func TestJaegerUIFindsACellsReflectCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a campaign against Jaeger and its UI in Chromium")
	}
	jaegerBinary(t)
	assets := jaegerUIAssets(t)
	uitest.Chromium(t)
	root := repoRoot(t)
	j := startJaegerUI(t, assets)
	j.exportTo(t, "grpc")
	since := time.Now()
	out := filepath.Join(t.TempDir(), "camp")
	p := start(t, "campaign", "--config", jaegerCampaign(t, root), "--out", out, "--workers", "2", "--log-level", "warn",
		"--set", "env.skill_init="+filepath.Join(root, "configs", "skills", "sim_demo_seed.md"),
		"--set", "evaluation.early_stop=false")
	waitDone(t, "campaign", p, 6*time.Minute)
	spans, _ := spanStubs(t, j.allTraces(t, since))
	cellTrace := map[string]string{}
	reflects := 0
	for _, s := range spans {
		if s.Name == telemetry.SpanCell {
			v, _ := attrOf(s, telemetry.KeyCell)
			// In full (32 hex digits): the UI's excerpt is the first 7 of
			// them, leading zeros included.
			cellTrace[v.AsString()] = s.SpanContext.TraceID().String()
		}
	}
	for _, s := range spans {
		if st, _ := attrOf(s, telemetry.KeyStage); s.Name == "chat sim-optimizer" && st.AsString() == "reflect" &&
			s.SpanContext.TraceID().String() == cellTrace["a"] {
			reflects++
		}
	}
	if cellTrace["a"] == "" || cellTrace["b"] == "" || reflects == 0 {
		t.Fatalf("cells %v, %d reflect calls in cell a's trace: nothing to search for", cellTrace, reflects)
	}

	b := uitest.New(t)
	q := url.Values{"service": {"skillfleet-campaign"}, "operation": {"chat sim-optimizer"},
		"tags": {`{"skillfleet.cell":"a","skillfleet.stage":"reflect"}`}, "lookback": {"1h"}, "limit": {"20"}}
	if err := b.Navigate(j.query + "/search?" + q.Encode()); err != nil {
		t.Fatal(err)
	}
	if err := b.WaitFor(`document.querySelectorAll('.ResultItem').length > 0`, 90*time.Second); err != nil {
		t.Fatalf("the UI listed no trace: %v", err)
	}
	time.Sleep(time.Second) // the list is complete when its first item draws
	n, err := uitest.Eval[int](b, `document.querySelectorAll('.ResultItem').length`)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := uitest.Eval[[]string](b, `Array.from(document.querySelectorAll('.ResultItemTitle--idExcerpt')).map(e => e.textContent.trim())`)
	if err != nil {
		t.Fatal(err)
	}
	form, _ := uitest.Eval[string](b, `(document.querySelector('input[name=tags]') || {}).value || ''`)
	t.Logf("the UI lists %d trace(s) %v for cell a's reflect calls (cell a's trace %s, %d reflect calls; cell b's %s)", n, ids, cellTrace["a"], reflects, cellTrace["b"])
	if n != 1 || len(ids) != 1 || !strings.HasPrefix(cellTrace["a"], ids[0]) || strings.HasPrefix(cellTrace["b"], ids[0]) {
		t.Errorf("the UI lists %d traces %v, want cell a's trace %s only", n, ids, cellTrace["a"])
	}
	if !strings.Contains(form, "skillfleet.cell") {
		t.Errorf("the search form's tags field holds %q, not the tags searched for", form)
	}
	shot := filepath.Join(t.ArtifactDir(), "jaeger-cell-reflect.png")
	if err := b.Screenshot(shot, false); err != nil {
		t.Fatal(err)
	}
	if dst := os.Getenv("SKILLFLEET_JAEGER_SCREENSHOT"); dst != "" {
		data, err := os.ReadFile(shot)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
