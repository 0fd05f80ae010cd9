// Package backendtest is the contract suite every chat backend passes:
// [Run] drives a model against an httptest server that speaks the
// provider's wire format, replaying recorded replies (fixtures/, written
// from the providers' API references), and checks that requests reach the
// server in the provider's shape (text, image parts, JSON mode, tools,
// sampling fields) and that replies and failures come back as the
// llm contract says: content, tool calls, exact usage mapping, and typed
// errors (429 with Retry-After, 5xx, auth, invalid request, timeout,
// cancellation, dropped connections, malformed bodies), with the API key
// in no error text.
//
// A backend's test supplies the [Wire] ([OpenAI], [Azure], [Anthropic],
// [OpenAIResponses], [AzureResponses])
// and a constructor pointed at the server's URL, configured with [APIKey].
package backendtest

import (
	"context"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// APIKey is the key the fake servers require. The suite plants it in
// every error reply the server can echo it into and fails if any error
// text holds it.
const APIKey = "sk-backendtest-PLANTED-0123456789abcdefXYZ"

//go:embed fixtures/*.json
var fixtures embed.FS

func fixture(name string) []byte {
	b, err := fixtures.ReadFile("fixtures/" + name)
	if err != nil {
		panic("backendtest: missing fixture " + name)
	}
	return b
}

// Seen is what the fake server saw of one request, in provider-neutral
// terms.
type Seen struct {
	Model string
	// System is the system prompt text.
	System string
	// Texts are the text parts of user and assistant turns, in order.
	Texts []string
	// Images are the images of user turns as data: URIs or URLs.
	Images []string
	// Tools are the names of the declared tools.
	Tools []string
	// ToolCalls are the ids of assistant tool calls; ToolResults the ids
	// tool results answer.
	ToolCalls   []string
	ToolResults []string
	JSONMode    bool
	Temperature *float64
	MaxTokens   int
	Stop        []string
	Seed        *int64
}

// Wire describes a provider's wire format for the suite.
type Wire struct {
	Name string
	// Path is the request path every call must use.
	Path string
	// Query holds query parameters every call must carry.
	Query url.Values
	// Authorized reports whether a request carries APIKey the provider's way.
	Authorized func(h http.Header) bool
	// Parse decodes a request body.
	Parse func(body []byte) (Seen, error)
	// Reply is a recorded reply whose content, model, finish reason and
	// usage are the Want fields.
	Reply       []byte
	WantContent string
	WantModel   string
	WantFinish  string
	WantUsage   llm.Usage
	// ToolReply is a recorded reply calling WantToolCall.
	ToolReply    []byte
	WantToolCall llm.ToolCall
	// ErrorBody renders the provider's error body for a status.
	ErrorBody func(status int, msg string) []byte
	// NoStop says the wire has no stop parameter (the Responses API).
	NoStop bool
}

// Factory builds the model under test, pointed at serverURL and
// configured with APIKey.
type Factory func(t *testing.T, serverURL string) llm.Model

// handler answers one request the suite has already checked and parsed.
type handler func(w http.ResponseWriter, r *http.Request, seen Seen)

// server is a fake provider: it checks path, query and credentials,
// parses each request and hands it to h.
type server struct {
	*httptest.Server
	mu   sync.Mutex
	seen []Seen
}

func serve(t *testing.T, wire Wire, h handler) *server {
	t.Helper()
	s := &server{}
	release := make(chan struct{})
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != wire.Path {
			http.Error(w, fmt.Sprintf("backendtest: path %q, want %q", r.URL.Path, wire.Path), http.StatusNotFound)
			return
		}
		for k, vs := range wire.Query {
			if got := r.URL.Query()[k]; !cmp.Equal(got, vs) {
				http.Error(w, fmt.Sprintf("backendtest: query %s=%q, want %q", k, got, vs), http.StatusBadRequest)
				return
			}
		}
		if !wire.Authorized(r.Header) {
			writeErr(w, wire, http.StatusUnauthorized, "backendtest: missing or wrong credentials")
			return
		}
		body := make([]byte, 0, 4096)
		buf := make([]byte, 4096)
		for {
			n, err := r.Body.Read(buf)
			body = append(body, buf[:n]...)
			if err != nil {
				break
			}
		}
		seen, err := wire.Parse(body)
		if err != nil {
			http.Error(w, "backendtest: "+err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.seen = append(s.seen, seen)
		s.mu.Unlock()
		h(w, r.WithContext(contextWithRelease(r.Context(), release)), seen)
	}))
	t.Cleanup(func() {
		close(release)
		s.Close()
	})
	return s
}

type releaseKey struct{}

func contextWithRelease(ctx context.Context, ch chan struct{}) context.Context {
	return context.WithValue(ctx, releaseKey{}, ch)
}

// stall holds a request until the client goes away or the test ends.
func stall(r *http.Request) {
	ch, _ := r.Context().Value(releaseKey{}).(chan struct{})
	select {
	case <-r.Context().Done():
	case <-ch:
	}
}

func (s *server) last(t *testing.T) Seen {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.seen) == 0 {
		t.Fatal("the server saw no request")
	}
	return s.seen[len(s.seen)-1]
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

func writeErr(w http.ResponseWriter, wire Wire, status int, msg string) {
	writeJSON(w, status, wire.ErrorBody(status, msg))
}

func reply(body []byte) handler {
	return func(w http.ResponseWriter, _ *http.Request, _ Seen) { writeJSON(w, http.StatusOK, body) }
}

func user(text string) []llm.Message { return []llm.Message{{Role: llm.RoleUser, Content: text}} }

func ptr[T any](v T) *T { return &v }

// Run runs the contract suite for one backend.
func Run(t *testing.T, wire Wire, newModel Factory) {
	t.Helper()
	t.Run("text", func(t *testing.T) { testText(t, wire, newModel) })
	t.Run("image_parts", func(t *testing.T) { testImages(t, wire, newModel) })
	t.Run("json_mode", func(t *testing.T) { testJSONMode(t, wire, newModel) })
	t.Run("tools", func(t *testing.T) { testTools(t, wire, newModel) })
	t.Run("errors", func(t *testing.T) { testErrors(t, wire, newModel) })
	t.Run("retry_after_http_date", func(t *testing.T) { testRetryAfterDate(t, wire, newModel) })
	t.Run("timeout", func(t *testing.T) { testTimeout(t, wire, newModel) })
	t.Run("cancelled", func(t *testing.T) { testCancelled(t, wire, newModel) })
	t.Run("concurrent", func(t *testing.T) { testConcurrent(t, wire, newModel) })
}

func testText(t *testing.T, wire Wire, newModel Factory) {
	srv := serve(t, wire, reply(wire.Reply))
	m := newModel(t, srv.URL)
	resp, err := m.Chat(t.Context(), &llm.Request{
		Model: "test-model", Temperature: ptr(0.0), MaxTokens: 77, Stop: []string{"END"},
		Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "You are terse."},
			{Role: llm.RoleUser, Content: "What is the capital of France?"},
		},
	})
	if err != nil {
		t.Fatalf("Chat() = %v", err)
	}
	got := srv.last(t)
	want := Seen{
		Model: "test-model", System: "You are terse.", Texts: []string{"What is the capital of France?"},
		Temperature: ptr(0.0), MaxTokens: 77, Stop: []string{"END"},
	}
	if wire.NoStop {
		want.Stop = nil
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("request (-want +got):\n%s", diff)
	}
	if got.Temperature == nil {
		t.Error("temperature 0 was not sent (an explicit 0 must reach the wire)")
	}
	if resp.Content != wire.WantContent || resp.Model != wire.WantModel || resp.FinishReason != wire.WantFinish {
		t.Errorf("reply = %q, model %q, finish %q; want %q, %q, %q", resp.Content, resp.Model, resp.FinishReason, wire.WantContent, wire.WantModel, wire.WantFinish)
	}
	if diff := cmp.Diff(wire.WantUsage, resp.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
}

// A 1x1 transparent PNG.
const pngDataURI = "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAQAAAC1HAwCAAAAC0lEQVR42mNkYAAAAAYAAjCB0C8AAAAASUVORK5CYII="

func testImages(t *testing.T, wire Wire, newModel Factory) {
	srv := serve(t, wire, reply(wire.Reply))
	m := newModel(t, srv.URL)
	_, err := m.Chat(t.Context(), &llm.Request{Model: "test-model", Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{
		{Type: "text", Text: "What is in these images?"},
		{Type: "image", ImageURL: pngDataURI, Detail: "low"},
		{Type: "image", ImageURL: "https://example.com/cat.jpg"},
	}}}})
	if err != nil {
		t.Fatalf("Chat() = %v", err)
	}
	got := srv.last(t)
	if diff := cmp.Diff([]string{"What is in these images?"}, got.Texts); diff != "" {
		t.Errorf("texts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{pngDataURI, "https://example.com/cat.jpg"}, got.Images); diff != "" {
		t.Errorf("images (-want +got):\n%s", diff)
	}
}

func testJSONMode(t *testing.T, wire Wire, newModel Factory) {
	srv := serve(t, wire, reply(wire.Reply))
	m := newModel(t, srv.URL)
	for _, on := range []bool{false, true} {
		if _, err := m.Chat(t.Context(), &llm.Request{Model: "test-model", JSONMode: on, Messages: user("Give me JSON.")}); err != nil {
			t.Fatalf("Chat(JSONMode=%t) = %v", on, err)
		}
		if got := srv.last(t).JSONMode; got != on {
			t.Errorf("JSONMode=%t: server saw JSON mode %t", on, got)
		}
	}
}

func testTools(t *testing.T, wire Wire, newModel Factory) {
	srv := serve(t, wire, reply(wire.ToolReply))
	m := newModel(t, srv.URL)
	tool := llm.Tool{Name: "get_weather", Description: "Weather for a city.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}`)}
	resp, err := m.Chat(t.Context(), &llm.Request{Model: "test-model", Tools: []llm.Tool{tool}, Messages: user("Weather in Paris?")})
	if err != nil {
		t.Fatalf("Chat() = %v", err)
	}
	if diff := cmp.Diff([]string{"get_weather"}, srv.last(t).Tools); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]llm.ToolCall{wire.WantToolCall}, resp.ToolCalls); diff != "" {
		t.Errorf("tool calls (-want +got):\n%s", diff)
	}
	if resp.FinishReason != "tool_calls" {
		t.Errorf("finish reason = %q, want tool_calls", resp.FinishReason)
	}

	// The tool result goes back answering the call's id.
	_, err = m.Chat(t.Context(), &llm.Request{Model: "test-model", Tools: []llm.Tool{tool}, Messages: []llm.Message{
		{Role: llm.RoleUser, Content: "Weather in Paris?"},
		{Role: llm.RoleAssistant, ToolCalls: resp.ToolCalls},
		{Role: llm.RoleTool, ToolCallID: wire.WantToolCall.ID, Content: `{"temp_c":18}`},
	}})
	if err != nil {
		t.Fatalf("Chat(tool result) = %v", err)
	}
	got := srv.last(t)
	if diff := cmp.Diff([]string{wire.WantToolCall.ID}, got.ToolCalls); diff != "" {
		t.Errorf("assistant tool call ids (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{wire.WantToolCall.ID}, got.ToolResults); diff != "" {
		t.Errorf("tool result ids (-want +got):\n%s", diff)
	}
}

// errorCase is one failure the server produces and the kind it must map to.
type errorCase struct {
	name       string
	h          handler
	kind       llm.ErrorKind
	status     int
	retryAfter time.Duration
}

func errorCases(wire Wire) []errorCase {
	status := func(code int, header map[string]string) handler {
		return func(w http.ResponseWriter, _ *http.Request, _ Seen) {
			for k, v := range header {
				w.Header().Set(k, v)
			}
			writeErr(w, wire, code, "echoing your key "+APIKey+" back")
		}
	}
	raw := func(code int, body string) handler {
		return func(w http.ResponseWriter, _ *http.Request, _ Seen) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(code)
			_, _ = w.Write([]byte(body))
		}
	}
	return []errorCase{
		{name: "429 with Retry-After", h: status(429, map[string]string{"Retry-After": "7"}), kind: llm.KindRateLimited, status: 429, retryAfter: 7 * time.Second},
		{name: "429 with retry-after-ms", h: status(429, map[string]string{"Retry-After-Ms": "1500", "Retry-After": "2"}), kind: llm.KindRateLimited, status: 429, retryAfter: 1500 * time.Millisecond},
		{name: "429 without Retry-After", h: status(429, nil), kind: llm.KindRateLimited, status: 429},
		{name: "500", h: status(500, nil), kind: llm.KindServer, status: 500},
		{name: "502 html", h: raw(502, "<html><body>Bad Gateway "+APIKey+"</body></html>"), kind: llm.KindServer, status: 502},
		{name: "503 with Retry-After", h: status(503, map[string]string{"Retry-After": "3"}), kind: llm.KindServer, status: 503, retryAfter: 3 * time.Second},
		{name: "529 overloaded", h: status(529, nil), kind: llm.KindServer, status: 529},
		{name: "401", h: status(401, nil), kind: llm.KindAuth, status: 401},
		{name: "403", h: status(403, nil), kind: llm.KindAuth, status: 403},
		{name: "400", h: status(400, nil), kind: llm.KindInvalidRequest, status: 400},
		{name: "404", h: status(404, nil), kind: llm.KindInvalidRequest, status: 404},
		{name: "422", h: status(422, nil), kind: llm.KindInvalidRequest, status: 422},
		{name: "malformed body", h: raw(200, "this is not json "+APIKey), kind: llm.KindInvalidReply, status: 200},
		{name: "truncated JSON", h: raw(200, `{"id":"x","choices":[`), kind: llm.KindInvalidReply, status: 200},
		{name: "empty body", h: raw(200, ""), kind: llm.KindInvalidReply, status: 200},
		{name: "dropped connection", h: func(w http.ResponseWriter, _ *http.Request, _ Seen) {
			hj, ok := w.(http.Hijacker)
			if !ok {
				panic("backendtest: no hijacker")
			}
			conn, _, err := hj.Hijack()
			if err == nil {
				_ = conn.Close()
			}
		}, kind: llm.KindTransport},
	}
}

func testErrors(t *testing.T, wire Wire, newModel Factory) {
	for _, tc := range errorCases(wire) {
		t.Run(tc.name, func(t *testing.T) {
			srv := serve(t, wire, tc.h)
			m := newModel(t, srv.URL)
			resp, err := m.Chat(t.Context(), &llm.Request{Model: "test-model", Messages: user("hi")})
			if err == nil {
				t.Fatalf("Chat() = %+v, nil; want a %v error", resp, tc.kind)
			}
			checkKey(t, err)
			var le *llm.Error
			if !errors.As(err, &le) {
				t.Fatalf("Chat() error %v (%T) is not an *llm.Error", err, err)
			}
			if le.Kind != tc.kind {
				t.Errorf("Chat() kind = %v, want %v (%v)", le.Kind, tc.kind, err)
			}
			if tc.status != 0 && le.Status != tc.status {
				t.Errorf("Chat() status = %d, want %d", le.Status, tc.status)
			}
			if le.RetryAfter != tc.retryAfter {
				t.Errorf("Chat() RetryAfter = %v, want %v", le.RetryAfter, tc.retryAfter)
			}
		})
	}
}

func testRetryAfterDate(t *testing.T, wire Wire, newModel Factory) {
	at := time.Now().Add(30 * time.Second).UTC()
	srv := serve(t, wire, func(w http.ResponseWriter, _ *http.Request, _ Seen) {
		w.Header().Set("Retry-After", at.Format(http.TimeFormat))
		writeErr(w, wire, 429, "slow down")
	})
	_, err := newModel(t, srv.URL).Chat(t.Context(), &llm.Request{Model: "test-model", Messages: user("hi")})
	var le *llm.Error
	if !errors.As(err, &le) || le.Kind != llm.KindRateLimited {
		t.Fatalf("Chat() = %v, want rate_limited", err)
	}
	// The header has one-second resolution and the clock moved on a little.
	if le.RetryAfter <= 27*time.Second || le.RetryAfter > 30*time.Second {
		t.Errorf("RetryAfter = %v, want about 30s", le.RetryAfter)
	}
}

func testTimeout(t *testing.T, wire Wire, newModel Factory) {
	srv := serve(t, wire, func(_ http.ResponseWriter, r *http.Request, _ Seen) { stall(r) })
	_, err := newModel(t, srv.URL).Chat(t.Context(), &llm.Request{Model: "test-model", Timeout: 100 * time.Millisecond, Messages: user("hi")})
	checkKey(t, err)
	if llm.KindOf(err) != llm.KindTimeout || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Chat() against a stalled server = %v (kind %v), want timeout wrapping context.DeadlineExceeded", err, llm.KindOf(err))
	}
}

func testCancelled(t *testing.T, wire Wire, newModel Factory) {
	arrived := make(chan struct{})
	srv := serve(t, wire, func(_ http.ResponseWriter, r *http.Request, _ Seen) {
		close(arrived)
		stall(r)
	})
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		<-arrived
		cancel()
	}()
	_, err := newModel(t, srv.URL).Chat(ctx, &llm.Request{Model: "test-model", Messages: user("hi")})
	if llm.KindOf(err) != llm.KindCancelled {
		t.Errorf("Chat() cancelled mid-call = %v (kind %v), want cancelled", err, llm.KindOf(err))
	}
}

func testConcurrent(t *testing.T, wire Wire, newModel Factory) {
	srv := serve(t, wire, reply(wire.Reply))
	m := newModel(t, srv.URL)
	const n = 16
	errs := make(chan error, n)
	for range n {
		go func() {
			resp, err := m.Chat(t.Context(), &llm.Request{Model: "test-model", Messages: user("hi")})
			if err == nil && resp.Content != wire.WantContent {
				err = fmt.Errorf("content %q, want %q", resp.Content, wire.WantContent)
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Errorf("concurrent Chat() = %v", err)
		}
	}
}

// checkKey fails if err's text, in any verb, holds the API key.
func checkKey(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		return
	}
	for _, s := range []string{err.Error(), fmt.Sprintf("%v", err), fmt.Sprintf("%+v", err), fmt.Sprintf("%#v", err)} {
		if strings.Contains(s, APIKey) || strings.Contains(s, APIKey[8:]) {
			t.Errorf("error text leaks the API key: %s", s)
		}
	}
}

// CheckNoKey fails if any of the texts holds the API key (for a backend's
// own String or log output).
func CheckNoKey(t *testing.T, texts ...string) {
	t.Helper()
	for _, s := range texts {
		if strings.Contains(s, APIKey) {
			t.Errorf("text leaks the API key: %s", s)
		}
	}
}
