package openai_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/backends/openai"
	simmodel "github.com/skillfleet/skillfleet/backends/sim"
	simbench "github.com/skillfleet/skillfleet/pkg/bench/sim"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

const plantedKey = "sk-test-PLANTED-0123456789"

func TestChatAgainstSimServer(t *testing.T) {
	srv := httptest.NewServer(simmodel.NewServer(simmodel.New(simmodel.Options{}), simmodel.ServerOptions{APIKey: plantedKey}))
	defer srv.Close()
	c := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: plantedKey})
	w, err := simbench.Generate("demo", 7)
	if err != nil {
		t.Fatal(err)
	}
	seed := int64(0)
	resp, err := c.Chat(t.Context(), &llm.Request{Model: "sim-target", Seed: &seed, Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: simbench.SystemPrompt("# skill\n")},
		{Role: llm.RoleUser, Content: simbench.UserPrompt(w.Test[0].Question)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resp.Content, "<answer>") || resp.Usage.InputTokens == 0 || resp.Usage.OutputTokens == 0 {
		t.Errorf("reply = %+v, want an answer and usage", resp)
	}
	// A wrong key is an auth error that does not echo the key.
	bad := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: "sk-wrong-" + plantedKey})
	_, err = bad.Chat(t.Context(), &llm.Request{Model: "sim-target", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
	if llm.KindOf(err) != llm.KindAuth {
		t.Errorf("wrong key: kind %v (%v), want auth", llm.KindOf(err), err)
	}
	if err != nil && strings.Contains(err.Error(), plantedKey) {
		t.Errorf("error leaks the API key: %v", err)
	}
}

func TestErrorMapping(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		timeout time.Duration
		kind    llm.ErrorKind
		retry   time.Duration
	}{
		{"429 with Retry-After", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = w.Write([]byte(`{"error":{"message":"slow down","type":"rate_limit"}}`))
		}, 0, llm.KindRateLimited, 7 * time.Second},
		{"500", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`{"error":{"message":"boom","type":"server"}}`))
		}, 0, llm.KindServer, 0},
		{"400", func(w http.ResponseWriter, _ *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"error":{"message":"bad field","type":"invalid_request_error"}}`))
		}, 0, llm.KindInvalidRequest, 0},
		{"malformed body", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`this is not json`))
		}, 0, llm.KindInvalidReply, 0},
		{"no choices", func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"id":"x","object":"chat.completion","choices":[]}`))
		}, 0, llm.KindInvalidReply, 0},
		{"timeout", func(w http.ResponseWriter, r *http.Request) {
			select {
			case <-r.Context().Done():
			case <-time.After(2 * time.Second):
			}
		}, 50 * time.Millisecond, llm.KindTimeout, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(tc.handler)
			defer srv.Close()
			defer srv.CloseClientConnections()
			c := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: plantedKey})
			_, err := c.Chat(context.Background(), &llm.Request{Model: "m", Timeout: tc.timeout, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
			var le *llm.Error
			if !errors.As(err, &le) || le.Kind != tc.kind {
				t.Fatalf("Chat() error = %v, want kind %v", err, tc.kind)
			}
			if le.RetryAfter != tc.retry {
				t.Errorf("RetryAfter = %v, want %v", le.RetryAfter, tc.retry)
			}
			if strings.Contains(err.Error(), plantedKey) {
				t.Errorf("error leaks the API key: %v", err)
			}
		})
	}
}

func TestParseRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Duration{"3": 3 * time.Second, "0.5": 500 * time.Millisecond, "Thu, 01 Jan 2026 00:00:10 GMT": 10 * time.Second} {
		if got, ok := openai.ParseRetryAfter(in, now); !ok || got != want {
			t.Errorf("ParseRetryAfter(%q) = %v, %v; want %v", in, got, ok, want)
		}
	}
	if _, ok := openai.ParseRetryAfter("soon", now); ok {
		t.Error("ParseRetryAfter(soon) accepted")
	}
}
