package telemetry

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// These tests export over a real OTLP connection to a receiver in the test
// and look at the bytes on the wire. They set process environment
// variables, so they do not run in parallel.

// receiver keeps every export request it is sent.
type receiver struct {
	coltracepb.UnimplementedTraceServiceServer
	mu   sync.Mutex
	reqs []*coltracepb.ExportTraceServiceRequest
}

func (r *receiver) Export(_ context.Context, req *coltracepb.ExportTraceServiceRequest) (*coltracepb.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, req)
	return &coltracepb.ExportTraceServiceResponse{}, nil
}

// spans returns the names of the spans received and the raw bytes of all
// requests.
func (r *receiver) spans(t *testing.T) ([]string, []byte) {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var names []string
	var raw bytes.Buffer
	for _, req := range r.reqs {
		b, err := proto.Marshal(req)
		if err != nil {
			t.Fatal(err)
		}
		raw.Write(b)
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					names = append(names, s.GetName())
				}
			}
		}
	}
	return names, raw.Bytes()
}

func exportOneCall(t *testing.T) {
	t.Helper()
	tel, shutdown, err := Setup(t.Context(), Options{ServiceName: "skillfleet-worker", Secrets: []string{plantedSecret}})
	if err != nil {
		t.Fatalf("Setup() = %v", err)
	}
	m := tel.WrapModel(&fakeModel{resp: okResponse()}, "sim")
	if _, err := m.Chat(ctxWithAttrs(t), request()); err != nil {
		t.Fatal(err)
	}
	bad := tel.WrapModel(&fakeModel{err: &llm.Error{Kind: llm.KindAuth, Status: 401, Msg: "bad key " + plantedKey}}, "sim")
	_, _ = bad.Chat(ctxWithAttrs(t), request())
	if err := shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown() = %v", err)
	}
}

func checkWire(t *testing.T, r *receiver) {
	t.Helper()
	names, raw := r.spans(t)
	if len(names) != 2 || names[0] != "chat sim-target" {
		t.Errorf("received spans %q, want two \"chat sim-target\"", names)
	}
	for _, bad := range []string{plantedKey, plantedSecret, "PROMPT-MARKER", "REPLY-MARKER"} {
		if bytes.Contains(raw, []byte(bad)) {
			t.Errorf("exported bytes contain %q", bad)
		}
	}
	if !bytes.Contains(raw, []byte("gen_ai.usage.input_tokens")) {
		t.Errorf("exported bytes lack gen_ai.usage.input_tokens")
	}
}

func clearOTELEnv(t *testing.T) {
	for _, k := range []string{envEndpoint, envTracesEndpoint, envProtocol, envTracesProtocol, envTracesExporter, envSDKDisabled,
		"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_INSECURE"} {
		t.Setenv(k, "")
	}
}

func TestOTLPExportHTTP(t *testing.T) {
	clearOTELEnv(t)
	rcv := &receiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/v1/traces" {
			http.NotFound(w, req)
			return
		}
		body, err := io.ReadAll(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var er coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &er); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		_, _ = rcv.Export(req.Context(), &er)
		w.Header().Set("Content-Type", "application/x-protobuf")
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		_, _ = w.Write(out)
	}))
	defer srv.Close()
	t.Setenv(envEndpoint, srv.URL)
	t.Setenv(envProtocol, "http/protobuf")
	exportOneCall(t)
	checkWire(t, rcv)
}

func TestOTLPExportGRPC(t *testing.T) {
	clearOTELEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rcv := &receiver{}
	gs := grpc.NewServer()
	coltracepb.RegisterTraceServiceServer(gs, rcv)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = gs.Serve(ln)
	}()
	defer func() {
		gs.Stop()
		<-done
	}()
	t.Setenv(envEndpoint, "http://"+ln.Addr().String())
	exportOneCall(t)
	checkWire(t, rcv)
}

func TestNoExportWithoutEndpoint(t *testing.T) {
	clearOTELEnv(t)
	tel, shutdown, err := Setup(t.Context(), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = shutdown(context.Background()) }()
	if got := tel.Exporter(); got != "none" {
		t.Errorf("Exporter() = %q with no OTEL_EXPORTER_OTLP_* set, want none", got)
	}
}
