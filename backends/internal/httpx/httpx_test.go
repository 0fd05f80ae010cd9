package httpx_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillfleet/skillfleet/backends/internal/httpx"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{
		"3": 3 * time.Second, " 0.5 ": 500 * time.Millisecond, "0": 0,
		"Thu, 01 Jan 2026 00:00:10 GMT": 10 * time.Second,
		"Wed, 31 Dec 2025 23:59:00 GMT": 0, // in the past
	} {
		if got, ok := httpx.ParseRetryAfter(in, now); !ok || got != want {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "soon", "-1", "1e300"} {
		if got, ok := httpx.ParseRetryAfter(in, now); ok {
			t.Errorf("ParseRetryAfter(%q) = %v, accepted", in, got)
		}
	}
	h := http.Header{}
	h.Set("Retry-After", "2")
	h.Set("Retry-After-Ms", "250")
	if got, ok := httpx.RetryAfter(h, now); !ok || got != 250*time.Millisecond {
		t.Errorf("RetryAfter(both) = %v, %v; want retry-after-ms first", got, ok)
	}
}

func TestKindForStatus(t *testing.T) {
	t.Parallel()
	for status, want := range map[int]llm.ErrorKind{
		429: llm.KindRateLimited, 401: llm.KindAuth, 403: llm.KindAuth, 408: llm.KindTimeout,
		400: llm.KindInvalidRequest, 404: llm.KindInvalidRequest, 413: llm.KindInvalidRequest, 422: llm.KindInvalidRequest,
		500: llm.KindServer, 502: llm.KindServer, 503: llm.KindServer, 529: llm.KindServer,
	} {
		if got := httpx.KindForStatus(status); got != want {
			t.Errorf("KindForStatus(%d) = %v, want %v", status, got, want)
		}
	}
	// Retry-After is kept only where a retry may follow.
	if e := httpx.StatusError(400, time.Second, "x", httpx.Redactor{}); e.RetryAfter != 0 {
		t.Errorf("StatusError(400).RetryAfter = %v, want 0", e.RetryAfter)
	}
}

func TestRedaction(t *testing.T) {
	t.Parallel()
	r := httpx.NewRedactor("sk-secret-1", "", "ab")
	if got := r.String("key sk-secret-1 and ab"); got != "key [REDACTED] and ab" {
		t.Errorf("String() = %q", got)
	}
	if got := r.Msg(strings.Repeat("x ", 400)); len(got) > httpx.MaxMsg+3 {
		t.Errorf("Msg() kept %d bytes, want at most %d", len(got), httpx.MaxMsg+3)
	}
	if got := httpx.SafeURLString("https://user:pw@host.example/v1/chat?key=k#frag"); got != "https://host.example/v1/chat" {
		t.Errorf("SafeURLString() = %q", got)
	}
}

func TestTransportPatchesAndRecords(t *testing.T) {
	t.Parallel()
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_ = json.Unmarshal(b, &got)
		if int64(len(b)) != r.ContentLength {
			t.Errorf("Content-Length %d, body %d bytes", r.ContentLength, len(b))
		}
		w.Header().Set("Retry-After", "4")
		w.WriteHeader(http.StatusTooManyRequests)
	}))
	defer srv.Close()
	hc := &http.Client{Transport: &httpx.Transport{Next: http.DefaultTransport}}
	ctx, call := httpx.Track(context.Background(), map[string]any{"temperature": 0, "extra": map[string]any{"a": true}})
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(`{"model":"m","temperature":0.7}`))
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if diff := cmp.Diff(map[string]any{"model": "m", "temperature": 0.0, "extra": map[string]any{"a": true}}, got); diff != "" {
		t.Errorf("patched body (-want +got):\n%s", diff)
	}
	if !call.Sent() || call.Status() != 429 || call.RetryAfter() != 4*time.Second {
		t.Errorf("call = sent %t, status %d, retry after %v; want true, 429, 4s", call.Sent(), call.Status(), call.RetryAfter())
	}
}
