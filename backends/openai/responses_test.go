package openai_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/skillfleet/skillfleet/backends/backendtest"
	"github.com/skillfleet/skillfleet/backends/openai"
	simmodel "github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

func TestContractOpenAIResponses(t *testing.T) {
	backendtest.Run(t, backendtest.OpenAIResponses(), func(t *testing.T, url string) llm.Model {
		return openai.New(openai.Config{BaseURL: url + "/v1", APIKey: backendtest.APIKey, API: openai.APIResponses})
	})
}

func TestContractAzureResponses(t *testing.T) {
	backendtest.Run(t, backendtest.AzureResponses(openai.DefaultAzureResponsesAPIVersion), func(t *testing.T, url string) llm.Model {
		// The default api-version predates the Responses API; the client
		// moves to one that has it.
		return openai.New(openai.Config{BaseURL: url, APIKey: backendtest.APIKey, Azure: true, APIVersion: openai.DefaultAzureAPIVersion, API: openai.APIResponses})
	})
}

// staticTokens hands out one token and counts the calls.
type tokens struct {
	mu          sync.Mutex
	issued      []string
	next        int
	invalidated []string
}

func (s *tokens) Token(context.Context) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.next >= len(s.issued) {
		return "", errors.New("no more tokens")
	}
	return s.issued[s.next], nil
}

func (s *tokens) Invalidate(tok string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.invalidated = append(s.invalidated, tok)
	if s.next < len(s.issued) && s.issued[s.next] == tok {
		s.next++
	}
}

func TestContractAzureTokenSource(t *testing.T) {
	backendtest.Run(t, backendtest.AzureBearer("test-model", openai.DefaultAzureAPIVersion), func(t *testing.T, url string) llm.Model {
		return openai.New(openai.Config{BaseURL: url, Azure: true, Tokens: &tokens{issued: []string{backendtest.APIKey}}})
	})
}

func TestContractAzureResponsesTokenSource(t *testing.T) {
	w := backendtest.AzureResponses("2025-04-01-preview")
	w.Authorized = backendtest.AzureBearer("x", "y").Authorized
	backendtest.Run(t, w, func(t *testing.T, url string) llm.Model {
		return openai.New(openai.Config{BaseURL: url, Azure: true, APIVersion: "2025-04-01-preview", Tokens: &tokens{issued: []string{backendtest.APIKey}}, API: openai.APIResponses})
	})
}

func TestUsesResponses(t *testing.T) {
	t.Parallel()
	auto := openai.New(openai.Config{})
	for model, want := range map[string]bool{
		"gpt-5-codex": true, "gpt-5.1-codex-mini": true, "GPT-5.3-Codex": true, "codex-mini": true, "codex-mini-latest": true, "gpt-5.4-pro": true,
		"gpt-5.5": false, "gpt-5-codexx": false, "gpt-4o": false, "": false,
	} {
		if got := auto.UsesResponses(model); got != want {
			t.Errorf("auto: UsesResponses(%q) = %t, want %t", model, got, want)
		}
	}
	dep := openai.New(openai.Config{Azure: true, Deployment: "gpt-5.2-codex"})
	if !dep.UsesResponses("anything") {
		t.Error("an Azure deployment of a codex model does not use the Responses API")
	}
	if openai.New(openai.Config{API: openai.APIChat}).UsesResponses("gpt-5-codex") {
		t.Error("API chat sends gpt-5-codex to the Responses API")
	}
	if !openai.New(openai.Config{API: openai.APIResponses}).UsesResponses("gpt-4o") {
		t.Error("API responses sends gpt-4o to Chat Completions")
	}
	if openai.New(openai.Config{ResponsesModels: []string{}}).UsesResponses("gpt-5-codex") {
		t.Error("an empty model list still routes gpt-5-codex to the Responses API")
	}
}

// serveOnce answers POSTs to path with body and records the request body.
func serveOnce(t *testing.T, path string, status int, body string) (*httptest.Server, *[]byte) {
	t.Helper()
	var got []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != path {
			http.Error(w, "wrong path "+r.URL.Path, http.StatusNotFound)
			return
		}
		got, _ = io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv, &got
}

func TestResponsesRequestShape(t *testing.T) {
	t.Parallel()
	fixture, err := os.ReadFile("../backendtest/fixtures/responses_message.json")
	if err != nil {
		t.Fatal(err)
	}
	srv, got := serveOnce(t, "/openai/responses", 200, string(fixture))
	c := openai.New(openai.Config{BaseURL: srv.URL, Azure: true, APIKey: "k", Deployment: "my-codex-deployment", API: openai.APIResponses,
		Wire: openai.WirePolicy{ExtraBody: map[string]any{"service_tier": "flex"}}})
	temp := 0.5
	resp, err := c.Chat(t.Context(), &llm.Request{Model: "gpt-5-codex", ReasoningEffort: "high", Temperature: &temp, MaxTokens: 500, Stop: []string{"Paris"},
		Messages: []llm.Message{{Role: llm.RoleSystem, Content: "Be terse."}, {Role: llm.RoleSystem, Content: "Answer in English."}, {Role: llm.RoleUser, Content: "Capital of France?"}}})
	if err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	if err := json.Unmarshal(*got, &body); err != nil {
		t.Fatal(err)
	}
	if body["model"] != "my-codex-deployment" || body["instructions"] != "Be terse.\n\nAnswer in English." || body["max_output_tokens"] != 500.0 ||
		body["service_tier"] != "flex" || body["store"] != false {
		t.Errorf("request body = %s", *got)
	}
	if r, _ := body["reasoning"].(map[string]any); r["effort"] != "high" {
		t.Errorf("reasoning = %v, want effort high", body["reasoning"])
	}
	if _, ok := body["temperature"]; ok {
		t.Errorf("temperature sent to a reasoning model: %s", *got)
	}
	// The stop sequence is applied to the reply.
	if resp.Content != "The capital of France is " || resp.FinishReason != "stop" {
		t.Errorf("reply %q (%s), want it cut before the stop sequence", resp.Content, resp.FinishReason)
	}
	if resp.Usage != (llm.Usage{InputTokens: 1117, OutputTokens: 46, CacheReadTokens: 1024, ReasoningTokens: 12}) {
		t.Errorf("usage = %+v", resp.Usage)
	}
}

func TestResponsesMalformedAndFailedReplies(t *testing.T) {
	t.Parallel()
	usage := `"usage":{"input_tokens":10,"output_tokens":5,"output_tokens_details":{"reasoning_tokens":2}}`
	for _, tc := range []struct {
		name   string
		body   string
		kind   llm.ErrorKind
		billed bool
		finish string
	}{
		{name: "chat completion body", body: `{"object":"chat.completion","choices":[]}`, kind: llm.KindInvalidReply},
		{name: "no output", body: `{"object":"response","status":"completed","output":[],` + usage + `}`, kind: llm.KindInvalidReply, billed: true},
		{name: "output not a list", body: `{"object":"response","status":"completed","output":{"type":"message"}}`, kind: llm.KindInvalidReply},
		{name: "function call without name", body: `{"object":"response","status":"completed","output":[{"type":"function_call","call_id":"c"}]}`, kind: llm.KindInvalidReply},
		{name: "failed", body: `{"object":"response","status":"failed","error":{"code":"server_error","message":"boom"},` + usage + `}`, kind: llm.KindServer, billed: true},
		{name: "failed rate limited", body: `{"object":"response","status":"failed","error":{"code":"rate_limit_exceeded","message":"slow"}}`, kind: llm.KindRateLimited},
		{name: "incomplete", body: `{"object":"response","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"output":[{"type":"reasoning"}],` + usage + `}`, finish: "length"},
		{name: "refusal", body: `{"object":"response","status":"completed","output":[{"type":"message","role":"assistant","content":[{"type":"refusal","refusal":"I can't help."}]}]}`, finish: "stop"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, _ := serveOnce(t, "/v1/responses", 200, tc.body)
			c := openai.New(openai.Config{BaseURL: srv.URL + "/v1", API: openai.APIResponses})
			resp, err := c.Chat(t.Context(), &llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
			if tc.finish != "" {
				if err != nil || resp.FinishReason != tc.finish {
					t.Fatalf("Chat() = %+v, %v; want finish %s", resp, err, tc.finish)
				}
				return
			}
			if llm.KindOf(err) != tc.kind {
				t.Fatalf("Chat() error = %v (kind %v), want %v", err, llm.KindOf(err), tc.kind)
			}
			var be *llm.BilledError
			if got := errors.As(err, &be); got != tc.billed {
				t.Errorf("billed = %t, want %t (%v)", got, tc.billed, err)
			} else if got && be.Usage.InputTokens != 10 || got && be.Usage.ReasoningTokens != 2 {
				t.Errorf("billed usage = %+v", be.Usage)
			}
		})
	}
}

// A token the server refuses is replaced once: the call goes through with
// the next token, and the refused one is invalidated.
func TestTokenRefusedIsReplacedOnce(t *testing.T) {
	t.Parallel()
	fixture, _ := os.ReadFile("../backendtest/fixtures/azure_chat.json")
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Header.Get("Authorization")+"|"+r.Header.Get("api-key"))
		mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer tok-2" {
			http.Error(w, `{"error":{"code":"401","message":"token expired"}}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(fixture)
	}))
	defer srv.Close()
	ts := &tokens{issued: []string{"tok-1", "tok-2"}}
	c := openai.New(openai.Config{BaseURL: srv.URL, Azure: true, Tokens: ts})
	resp, err := c.Chat(t.Context(), &llm.Request{Model: "dep", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	if err != nil || resp.Content == "" {
		t.Fatalf("Chat() = %+v, %v", resp, err)
	}
	if fmt.Sprint(seen) != "[Bearer tok-1| Bearer tok-2|]" || fmt.Sprint(ts.invalidated) != "[tok-1]" {
		t.Errorf("server saw %v, invalidated %v", seen, ts.invalidated)
	}
	// Both tokens refused: one retry only, and the error is auth without
	// the token in it.
	seen = nil
	ts2 := &tokens{issued: []string{"tok-a", "tok-b", "tok-c"}}
	_, err = openai.New(openai.Config{BaseURL: srv.URL, Azure: true, Tokens: ts2}).Chat(t.Context(), &llm.Request{Model: "dep", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	if llm.KindOf(err) != llm.KindAuth || len(seen) != 2 || strings.Contains(err.Error(), "tok-") {
		t.Errorf("Chat() = %v after %d requests; want auth after 2, without the token", err, len(seen))
	}
	// A token that cannot be had is an auth failure naming the sign-in.
	_, err = openai.New(openai.Config{BaseURL: srv.URL, Azure: true, Tokens: &tokens{}}).Chat(t.Context(), &llm.Request{Model: "dep", Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	if llm.KindOf(err) != llm.KindAuth || !strings.Contains(err.Error(), "sign-in") {
		t.Errorf("Chat() without a token = %v, want an auth error about the sign-in", err)
	}
}

func TestResponsesAgainstSimServer(t *testing.T) {
	t.Parallel()
	const key = backendtest.APIKey
	srv := httptest.NewServer(simmodel.NewServer(simmodel.New(simmodel.Options{}), simmodel.ServerOptions{APIKey: key}))
	defer srv.Close()
	c := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: key, API: openai.APIResponses})
	w, err := simbench.Generate("demo", 7)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Chat(t.Context(), &llm.Request{Model: "sim-target", Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: simbench.SystemPrompt("# skill\n")},
		{Role: llm.RoleUser, Content: simbench.UserPrompt(w.Test[0].Question)},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(resp.Content, "<answer>") || resp.Usage.InputTokens == 0 || resp.Usage.OutputTokens == 0 {
		t.Errorf("reply = %+v, want an answer and usage", resp)
	}
}

func TestCheck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		status int
		want   func(error) bool
	}{
		{200, func(err error) bool { return err == nil }},
		{401, func(err error) bool { return llm.KindOf(err) == llm.KindAuth }},
		{403, func(err error) bool { return llm.KindOf(err) == llm.KindAuth }},
		{404, func(err error) bool { return errors.Is(err, openai.ErrNoCheck) }},
	} {
		var got *http.Request
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got = r
			w.WriteHeader(tc.status)
			_, _ = io.WriteString(w, `{"object":"list","data":[]}`)
		}))
		err := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: "sk-x"}).Check(t.Context())
		if !tc.want(err) || got.URL.Path != "/v1/models" || got.Header.Get("Authorization") != "Bearer sk-x" {
			t.Errorf("status %d: Check() = %v (path %s)", tc.status, err, got.URL.Path)
		}
		err = openai.New(openai.Config{BaseURL: srv.URL, APIKey: "az-key", Azure: true}).Check(t.Context())
		if !tc.want(err) || got.URL.Path != "/openai/models" || got.Header.Get("api-key") != "az-key" {
			t.Errorf("azure status %d: Check() = %v (path %s)", tc.status, err, got.URL.Path)
		}
		srv.Close()
	}
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	if err := openai.New(openai.Config{BaseURL: srv.URL}).Check(t.Context()); llm.KindOf(err) != llm.KindTransport {
		t.Errorf("Check() against a closed port = %v, want transport", err)
	}
}
