package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/fleettest"
	"github.com/skillfleet/skillfleet/pkg/config"
	"github.com/skillfleet/skillfleet/pkg/telemetry"
)

// plantingServer is the sim-llm on loopback with every reply's text
// opened by a line that prints key, as a careless agent or a model that
// read its environment would. It keeps every request body it was sent:
// the target's and the optimizer's prompts.
type plantingServer struct {
	key     string
	next    http.Handler
	mu      sync.Mutex
	bodies  [][]byte
	planted int
}

func (p *plantingServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	p.bodies = append(p.bodies, body)
	p.mu.Unlock()
	r.Body = io.NopCloser(bytes.NewReader(body))
	rec := httptest.NewRecorder()
	p.next.ServeHTTP(rec, r)
	out := rec.Body.Bytes()
	var v any
	if rec.Code == http.StatusOK && json.Unmarshal(out, &v) == nil {
		if n := p.plant(v); n > 0 {
			out, _ = json.Marshal(v)
			p.mu.Lock()
			p.planted += n
			p.mu.Unlock()
		}
	}
	for k, vs := range rec.Header() {
		if k != "Content-Length" {
			w.Header()[k] = vs
		}
	}
	w.WriteHeader(rec.Code)
	_, _ = w.Write(out)
}

// plant opens every non-empty "content" text of a reply with the key.
func (p *plantingServer) plant(v any) int {
	n := 0
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); ok && k == "content" && s != "" {
				x[k] = "(my credential is " + p.key + ")\n" + s
				n++
				continue
			}
			n += p.plant(e)
		}
	case []any:
		for _, e := range x {
			n += p.plant(e)
		}
	}
	return n
}

// TestPlantedKeyInRepliesIsRecordedNowhere trains the demo through the
// real worker path (in-process workers, the OpenAI backend over HTTP to a
// loopback sim-llm) while every model reply prints the worker's API key.
// The key appears in no file of the run dir (events, steps, the result
// journal, the embedded NATS store), in no prompt the model was sent (the
// optimizer's prompts quote the trajectories) and in no traced span with
// content tracing on; the redacted replies do reach all three.
func TestPlantedKeyInRepliesIsRecordedNowhere(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the demo")
	}
	// Not shaped like a provider key, so that only the exact-value
	// redaction can catch it (the telemetry's key-shape net cannot).
	const key = "planted-credential-5c1e9a7f3d"
	t.Setenv("OPENAI_API_KEY", key)
	root := fleettest.RepoRoot(t)
	cfg, err := config.Load(filepath.Join(root, "configs", "demo.yaml"), []string{
		"env.skill_init=" + filepath.Join(root, "configs", "skills", "sim_demo_seed.md"), "runtime.sim_llm=true",
	})
	if err != nil {
		t.Fatal(err)
	}
	ps := &plantingServer{key: key, next: sim.NewServer(sim.New(sim.Options{}), sim.ServerOptions{})}
	srv := httptest.NewServer(ps)
	defer srv.Close()
	spans := keptSpans{tracetest.NewInMemoryExporter()}
	log := slog.New(slog.DiscardHandler)
	deps := Deps(log)
	deps.SimLLM = func(context.Context) (string, func(), error) { return srv.URL + "/v1", func() {}, nil }
	deps.Telemetry = func(ctx context.Context, runID string) (*telemetry.Telemetry, func(), error) {
		tel, shutdown, err := telemetry.Setup(ctx, telemetry.Options{ServiceName: "redact-test", TraceContent: true, SpanExporter: spans})
		if err != nil {
			return nil, nil, err
		}
		return tel, func() { _ = shutdown(context.WithoutCancel(ctx)) }, nil
	}
	dir := filepath.Join(t.TempDir(), "run")
	run, err := coordinator.Start(t.Context(), coordinator.Config{Run: cfg, Dir: dir, Workers: -1, Logger: log}, deps)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := run.Wait(); err != nil {
		t.Fatal(err)
	}
	if ps.planted == 0 {
		t.Fatal("no reply had the key planted: the test proves nothing")
	}

	redactedIn := map[string]bool{}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		if bytes.Contains(b, []byte(key)) {
			t.Errorf("run dir file %s holds the planted key", rel)
		}
		if bytes.Contains(b, []byte("[REDACTED]")) {
			redactedIn[rel] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !redactedIn["results.journal"] {
		t.Errorf("the result journal holds no redacted reply (files with one: %v): the replies did not reach it", redactedIn)
	}

	optimizerPrompts, redactedPrompts := 0, 0
	for i, b := range ps.bodies {
		if bytes.Contains(b, []byte(key)) {
			t.Errorf("request %d to the model holds the planted key: %.300s", i, b)
		}
		if bytes.Contains(b, []byte("[REDACTED]")) {
			redactedPrompts++
		}
		if bytes.Contains(b, []byte("trajector")) {
			optimizerPrompts++
		}
	}
	if redactedPrompts == 0 {
		t.Errorf("no prompt of the %d sent quotes a redacted reply (%d look like the optimizer's)", len(ps.bodies), optimizerPrompts)
	}

	tracedRedacted := 0
	for _, s := range spans.GetSpans() {
		text := fmt.Sprint(s.Attributes, s.Events)
		if strings.Contains(text, key) {
			t.Errorf("span %q holds the planted key", s.Name)
		}
		if strings.Contains(text, "[REDACTED]") {
			tracedRedacted++
		}
	}
	if tracedRedacted == 0 {
		t.Errorf("no traced span of %d holds a redacted reply: content tracing saw none", len(spans.GetSpans()))
	}
	t.Logf("%d replies planted, %d requests (%d quoting a redacted reply), %d spans (%d with one), redacted in %d run-dir files",
		ps.planted, len(ps.bodies), redactedPrompts, len(spans.GetSpans()), tracedRedacted, len(redactedIn))
}

// keptSpans keeps its spans past the run's telemetry shutdown (the
// in-memory exporter forgets them on Shutdown).
type keptSpans struct{ *tracetest.InMemoryExporter }

func (keptSpans) Shutdown(context.Context) error { return nil }
