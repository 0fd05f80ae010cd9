package openai_test

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillfleet/skillfleet/backends/backendtest"
	"github.com/skillfleet/skillfleet/backends/openai"
	simmodel "github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

func TestContractOpenAI(t *testing.T) {
	backendtest.Run(t, backendtest.OpenAI(), func(t *testing.T, url string) llm.Model {
		return openai.New(openai.Config{BaseURL: url + "/v1", APIKey: backendtest.APIKey})
	})
}

func TestContractAzure(t *testing.T) {
	backendtest.Run(t, backendtest.Azure("my-gpt4o", "2024-10-21"), func(t *testing.T, url string) llm.Model {
		return openai.New(openai.Config{BaseURL: url, APIKey: backendtest.APIKey, Azure: true, APIVersion: "2024-10-21", Deployment: "my-gpt4o"})
	})
}

func TestContractAzureBearer(t *testing.T) {
	backendtest.Run(t, backendtest.AzureBearer("test-model", openai.DefaultAzureAPIVersion), func(t *testing.T, url string) llm.Model {
		// No deployment: the request's model name is the deployment.
		return openai.New(openai.Config{BaseURL: url + "/", APIKey: backendtest.APIKey, Azure: true, AzureAuth: openai.AzureAuthBearer})
	})
}

func TestChatAgainstSimServer(t *testing.T) {
	const key = backendtest.APIKey
	srv := httptest.NewServer(simmodel.NewServer(simmodel.New(simmodel.Options{}), simmodel.ServerOptions{APIKey: key}))
	defer srv.Close()
	c := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: key})
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
	bad := openai.New(openai.Config{BaseURL: srv.URL + "/v1", APIKey: "sk-wrong-" + key})
	_, err = bad.Chat(t.Context(), &llm.Request{Model: "sim-target", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
	if llm.KindOf(err) != llm.KindAuth {
		t.Errorf("wrong key: kind %v (%v), want auth", llm.KindOf(err), err)
	}
	if err != nil && strings.Contains(err.Error(), key) {
		t.Errorf("error leaks the API key: %v", err)
	}
}

// capture serves reply to every request and records the raw bodies.
func capture(t *testing.T, reply string) (*httptest.Server, func() map[string]any) {
	t.Helper()
	var mu sync.Mutex
	var last []byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		last = b
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, reply)
	}))
	t.Cleanup(srv.Close)
	return srv, func() map[string]any {
		mu.Lock()
		defer mu.Unlock()
		var m map[string]any
		if err := json.Unmarshal(last, &m); err != nil {
			t.Fatalf("request body %q: %v", last, err)
		}
		return m
	}
}

const okReply = `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`

func TestWirePolicy(t *testing.T) {
	t.Parallel()
	f := func(v float64) *float64 { return &v }
	seed := int64(42)
	for _, tc := range []struct {
		name   string
		wire   openai.WirePolicy
		req    llm.Request
		want   map[string]any // fields that must be present with these values
		absent []string
	}{
		{
			name:   "plain model: max_tokens, explicit temperature 0, nothing extra",
			req:    llm.Request{Model: "gpt-4o", MaxTokens: 100, Temperature: f(0)},
			want:   map[string]any{"max_tokens": 100.0, "temperature": 0.0},
			absent: []string{"max_completion_tokens", "chat_template_kwargs", "reasoning_effort", "seed", "response_format"},
		},
		{
			name:   "reasoning model: max_completion_tokens, temperature dropped, effort sent",
			req:    llm.Request{Model: "o3-mini", MaxTokens: 100, Temperature: f(0.2), ReasoningEffort: "high"},
			want:   map[string]any{"max_completion_tokens": 100.0, "reasoning_effort": "high"},
			absent: []string{"max_tokens", "temperature"},
		},
		{
			name:   "gpt-5 family is a reasoning model by default",
			req:    llm.Request{Model: "GPT-5-mini", MaxTokens: 64},
			want:   map[string]any{"max_completion_tokens": 64.0},
			absent: []string{"max_tokens"},
		},
		{
			name:   "forced max_tokens reaches the wire even for a reasoning name",
			wire:   openai.WirePolicy{MaxTokensField: openai.MaxTokensLegacy},
			req:    llm.Request{Model: "gpt-5", MaxTokens: 64},
			want:   map[string]any{"max_tokens": 64.0},
			absent: []string{"max_completion_tokens"},
		},
		{
			name:   "forced max_completion_tokens for a compatible server",
			wire:   openai.WirePolicy{MaxTokensField: openai.MaxTokensCompletion},
			req:    llm.Request{Model: "qwen3", MaxTokens: 64},
			want:   map[string]any{"max_completion_tokens": 64.0},
			absent: []string{"max_tokens"},
		},
		{
			name: "no reasoning prefixes",
			wire: openai.WirePolicy{ReasoningModelPrefixes: []string{}},
			req:  llm.Request{Model: "o3", MaxTokens: 64, Temperature: f(0.5)},
			want: map[string]any{"max_tokens": 64.0, "temperature": 0.5},
		},
		{
			name: "temperature sent to reasoning models when asked",
			wire: openai.WirePolicy{SendTemperatureToReasoning: true},
			req:  llm.Request{Model: "o4-mini", Temperature: f(1)},
			want: map[string]any{"temperature": 1.0},
		},
		{
			name: "thinking kwargs only when configured",
			wire: openai.WirePolicy{ChatTemplateKwargs: map[string]any{"enable_thinking": false}},
			req:  llm.Request{Model: "Qwen/Qwen3-4B"},
			want: map[string]any{"chat_template_kwargs": map[string]any{"enable_thinking": false}},
		},
		{
			name: "extra body fields",
			wire: openai.WirePolicy{ExtraBody: map[string]any{"top_k": 20, "reasoning_split": true}},
			req:  llm.Request{Model: "MiniMax-M2"},
			want: map[string]any{"top_k": 20.0, "reasoning_split": true},
		},
		{
			name: "seed, stop and JSON mode",
			req:  llm.Request{Model: "gpt-4o", Seed: &seed, Stop: []string{"\n\n"}, JSONMode: true},
			want: map[string]any{"seed": 42.0, "stop": []any{"\n\n"}, "response_format": map[string]any{"type": "json_object"}},
		},
		{
			name:   "seed and effort omitted by policy",
			wire:   openai.WirePolicy{OmitSeed: true, OmitReasoningEffort: true},
			req:    llm.Request{Model: "o3", Seed: &seed, ReasoningEffort: "low"},
			absent: []string{"seed", "reasoning_effort"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, body := capture(t, okReply)
			c := openai.New(openai.Config{BaseURL: srv.URL, Wire: tc.wire})
			req := tc.req
			req.Messages = []llm.Message{{Role: llm.RoleUser, Content: "hi"}}
			if _, err := c.Chat(t.Context(), &req); err != nil {
				t.Fatalf("Chat() = %v", err)
			}
			got := body()
			for k, v := range tc.want {
				if diff := cmp.Diff(v, got[k]); diff != "" {
					t.Errorf("field %s (-want +got):\n%s", k, diff)
				}
			}
			for _, k := range tc.absent {
				if v, ok := got[k]; ok {
					t.Errorf("field %s = %v, want it absent", k, v)
				}
			}
		})
	}
}

func TestRejectedBeforeSending(t *testing.T) {
	t.Parallel()
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { calls++ }))
	defer srv.Close()
	c := openai.New(openai.Config{BaseURL: srv.URL, APIKey: backendtest.APIKey})
	for _, req := range []*llm.Request{
		{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{Type: "audio"}}}}},
		{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{Type: "image"}}}}},
		// The SDK's own validation for a model it knows (an effort it rejects).
		{Model: "gpt-6-astra", ReasoningEffort: "none", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}},
	} {
		_, err := c.Chat(t.Context(), req)
		if llm.KindOf(err) != llm.KindInvalidRequest {
			t.Errorf("Chat(%+v) = %v, want invalid_request", req.Messages, err)
		}
	}
	if calls != 0 {
		t.Errorf("server got %d requests, want none", calls)
	}
}

func TestNoChoicesIsBilledInvalidReply(t *testing.T) {
	t.Parallel()
	srv, _ := capture(t, `{"id":"x","object":"chat.completion","choices":[],"usage":{"prompt_tokens":10,"completion_tokens":2,"total_tokens":12}}`)
	_, err := openai.New(openai.Config{BaseURL: srv.URL}).Chat(t.Context(), &llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
	if llm.KindOf(err) != llm.KindInvalidReply {
		t.Fatalf("Chat() = %v, want invalid_reply", err)
	}
	if diff := cmp.Diff(llm.Usage{InputTokens: 10, OutputTokens: 2}, llm.BilledUsage(err)); diff != "" {
		t.Errorf("billed usage (-want +got):\n%s", diff)
	}
}

func TestRefusalIsTheContent(t *testing.T) {
	t.Parallel()
	srv, _ := capture(t, `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"I can't help with that."},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":5,"total_tokens":8}}`)
	resp, err := openai.New(openai.Config{BaseURL: srv.URL}).Chat(t.Context(), &llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
	if err != nil || resp.Content != "I can't help with that." {
		t.Errorf("Chat() = %+v, %v; want the refusal text", resp, err)
	}
}

func TestKeyNeverPrinted(t *testing.T) {
	t.Parallel()
	const key = backendtest.APIKey
	cfg := openai.Config{BaseURL: "http://user:" + key + "@127.0.0.1:1/v1?key=" + key, APIKey: key, Azure: true}
	c := openai.New(cfg)
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "cfg", cfg)
	// An unreachable server: the transport error names the URL.
	_, err := c.Chat(t.Context(), &llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
	if llm.KindOf(err) != llm.KindTransport {
		t.Errorf("Chat(unreachable) = %v, want transport", err)
	}
	backendtest.CheckNoKey(t, cfg.String(), cfg.GoString(), c.String(), logged.String(), err.Error(),
		func() string { b, _ := json.Marshal(err); return string(b) }())
	for _, verb := range []string{"%v", "%+v", "%#v", "%s"} {
		backendtest.CheckNoKey(t, sprintf(verb, cfg), sprintf(verb, err))
	}
}
