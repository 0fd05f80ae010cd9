package anthropic_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillfleet/skillfleet/backends/anthropic"
	"github.com/skillfleet/skillfleet/backends/backendtest"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

func TestContract(t *testing.T) {
	backendtest.Run(t, backendtest.Anthropic(), func(t *testing.T, url string) llm.Model {
		return anthropic.New(anthropic.Config{BaseURL: url, APIKey: backendtest.APIKey})
	})
}

func TestContractBaseURLWithV1(t *testing.T) {
	backendtest.Run(t, backendtest.Anthropic(), func(t *testing.T, url string) llm.Model {
		return anthropic.New(anthropic.Config{BaseURL: url + "/v1/", APIKey: backendtest.APIKey})
	})
}

// capture serves reply and records request bodies and headers.
func capture(t *testing.T, reply string) (*httptest.Server, func() (map[string]any, http.Header)) {
	t.Helper()
	var mu sync.Mutex
	var last []byte
	var hdr http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		last, hdr = b, r.Header.Clone()
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, reply)
	}))
	t.Cleanup(srv.Close)
	return srv, func() (map[string]any, http.Header) {
		mu.Lock()
		defer mu.Unlock()
		var m map[string]any
		if err := json.Unmarshal(last, &m); err != nil {
			t.Fatalf("request body %q: %v", last, err)
		}
		return m, hdr
	}
}

const okReply = `{"id":"msg_1","type":"message","role":"assistant","model":"claude-x","content":[{"type":"text","text":"ok"}],"stop_reason":"max_tokens","usage":{"input_tokens":5,"output_tokens":1}}`

func TestRequestShape(t *testing.T) {
	t.Parallel()
	temp := 0.3
	for _, tc := range []struct {
		name string
		cfg  anthropic.Config
		req  llm.Request
		want map[string]any
		hdr  map[string]string
	}{
		{
			name: "defaults: max_tokens required, system as a string",
			req: llm.Request{Model: "claude-x", Messages: []llm.Message{
				{Role: llm.RoleSystem, Content: "sys A"}, {Role: llm.RoleSystem, Content: "sys B"}, {Role: llm.RoleUser, Content: "hi"}}},
			want: map[string]any{"max_tokens": 4096.0, "system": "sys A\n\nsys B"},
			hdr:  map[string]string{"anthropic-version": anthropic.DefaultVersion, "x-api-key": "k-123456"},
		},
		{
			name: "prompt caching marks the system block",
			cfg:  anthropic.Config{CacheSystem: true, CacheTTL: "1h", Version: "2023-06-01", Betas: []string{"b1", "b2"}},
			req:  llm.Request{Model: "claude-x", MaxTokens: 10, Messages: []llm.Message{{Role: llm.RoleSystem, Content: "skill"}, {Role: llm.RoleUser, Content: "hi"}}},
			want: map[string]any{"system": []any{map[string]any{"type": "text", "text": "skill", "cache_control": map[string]any{"type": "ephemeral", "ttl": "1h"}}}},
			hdr:  map[string]string{"anthropic-beta": "b1,b2"},
		},
		{
			name: "thinking replaces temperature",
			cfg:  anthropic.Config{ThinkingBudget: 2048},
			req:  llm.Request{Model: "claude-x", Temperature: &temp, Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}},
			want: map[string]any{"thinking": map[string]any{"type": "enabled", "budget_tokens": 2048.0}, "temperature": nil},
		},
		{
			name: "consecutive tool results merge into one user turn",
			req: llm.Request{Model: "claude-x", Messages: []llm.Message{
				{Role: llm.RoleUser, Content: "weather?"},
				{Role: llm.RoleAssistant, Content: "checking", ToolCalls: []llm.ToolCall{{ID: "t1", Name: "w", Arguments: `{"c":"a"}`}, {ID: "t2", Name: "w"}}},
				{Role: llm.RoleTool, ToolCallID: "t1", Content: "18C"},
				{Role: llm.RoleTool, ToolCallID: "t2", Content: "20C"},
			}},
			want: map[string]any{"messages": []any{
				map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "weather?"}}},
				map[string]any{"role": "assistant", "content": []any{
					map[string]any{"type": "text", "text": "checking"},
					map[string]any{"type": "tool_use", "id": "t1", "name": "w", "input": map[string]any{"c": "a"}},
					map[string]any{"type": "tool_use", "id": "t2", "name": "w", "input": map[string]any{}},
				}},
				map[string]any{"role": "user", "content": []any{
					map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": "18C"},
					map[string]any{"type": "tool_result", "tool_use_id": "t2", "content": "20C"},
				}},
			}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			srv, last := capture(t, okReply)
			cfg := tc.cfg
			cfg.BaseURL, cfg.APIKey = srv.URL, "k-123456"
			resp, err := anthropic.New(cfg).Chat(t.Context(), &tc.req)
			if err != nil {
				t.Fatalf("Chat() = %v", err)
			}
			if resp.FinishReason != "length" {
				t.Errorf("finish reason = %q, want length (max_tokens)", resp.FinishReason)
			}
			body, hdr := last()
			for k, v := range tc.want {
				if diff := cmp.Diff(v, body[k]); diff != "" {
					t.Errorf("field %s (-want +got):\n%s", k, diff)
				}
			}
			for k, v := range tc.hdr {
				if got := hdr.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
		})
	}
}

func TestRejectedBeforeSending(t *testing.T) {
	t.Parallel()
	calls := 0
	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { calls++ }))
	defer srv.Close()
	c := anthropic.New(anthropic.Config{BaseURL: srv.URL})
	for _, req := range []*llm.Request{
		{Model: "m", Messages: []llm.Message{{Role: llm.RoleSystem, Content: "only a system prompt"}}},
		{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{Type: "image", ImageURL: "file:///etc/passwd"}}}}},
		{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{{Type: "image", ImageURL: "data:image/png,notbase64"}}}}},
		{Model: "m", Messages: []llm.Message{{Role: "critic", Content: "x"}}},
		{Model: "m", Messages: []llm.Message{{Role: llm.RoleAssistant, ToolCalls: []llm.ToolCall{{ID: "1", Name: "f", Arguments: "{not json"}}}}},
	} {
		if _, err := c.Chat(t.Context(), req); llm.KindOf(err) != llm.KindInvalidRequest {
			t.Errorf("Chat(%+v) = %v, want invalid_request", req.Messages, err)
		}
	}
	if calls != 0 {
		t.Errorf("server got %d requests, want none", calls)
	}
}

func TestReplyWithoutUsageIsInvalid(t *testing.T) {
	t.Parallel()
	srv, _ := capture(t, `{"id":"msg_1","type":"message","content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn"}`)
	_, err := anthropic.New(anthropic.Config{BaseURL: srv.URL}).Chat(t.Context(), &llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
	if llm.KindOf(err) != llm.KindInvalidReply {
		t.Errorf("Chat() = %v, want invalid_reply", err)
	}
}

func TestKeyNeverPrinted(t *testing.T) {
	t.Parallel()
	const key = backendtest.APIKey
	cfg := anthropic.Config{BaseURL: "http://u:" + key + "@127.0.0.1:1?k=" + key, APIKey: key}
	c := anthropic.New(cfg)
	var logged bytes.Buffer
	slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "cfg", cfg)
	_, err := c.Chat(t.Context(), &llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
	if llm.KindOf(err) != llm.KindTransport {
		t.Errorf("Chat(unreachable) = %v, want transport", err)
	}
	backendtest.CheckNoKey(t, cfg.String(), c.String(), logged.String(), err.Error(),
		fmt.Sprintf("%v", cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprintf("%+v", err))
}
