package officeqa_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/benchtest"
	"github.com/skillfleet/skillfleet/pkg/bench/officeqa"
	"github.com/skillfleet/skillfleet/pkg/bench/registry"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// fakeSearch is a search service on loopback: it records each request
// and answers with reply(n) for the n-th one (from 1).
type fakeSearch struct {
	mu      sync.Mutex
	bodies  []map[string]any
	headers []http.Header
	reply   func(n int) (int, string)
	*httptest.Server
}

func newFakeSearch(t *testing.T, reply func(n int) (int, string)) *fakeSearch {
	f := &fakeSearch{reply: reply}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		json.Unmarshal(b, &m)
		f.mu.Lock()
		f.bodies = append(f.bodies, m)
		f.headers = append(f.headers, r.Header.Clone())
		n := len(f.bodies)
		f.mu.Unlock()
		code, body := f.reply(n)
		w.WriteHeader(code)
		io.WriteString(w, body)
	}))
	t.Cleanup(f.Close)
	return f
}

func searchEnv(t *testing.T, keys map[string]any) bench.Env {
	t.Helper()
	docs, _ := filepath.Abs("testdata/docs")
	cfg := map[string]any{"docs_dir": docs, "max_tool_turns": 5}
	for k, v := range keys {
		cfg[k] = v
	}
	raw, _ := json.Marshal(cfg)
	e, err := registry.New(officeqa.Name, raw)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestSearchCallsReachTheServiceAndAnswersAreScored: the agent's search
// call reaches the configured service with SkillOpt's request body and
// the token in Authorization; the results come back to the agent as
// numbered title/URL/snippet blocks, and its answer is scored.
func TestSearchCallsReachTheServiceAndAnswersAreScored(t *testing.T) {
	t.Setenv("OQ_TEST_SEARCH_KEY", "sk-search-123")
	srv := newFakeSearch(t, func(int) (int, string) {
		return 200, `{"results": [{"title": "Treasury Bulletin March 2019", "url": "https://example.test/tb", "snippet": "FY2018 receipts 3,328,741 million"}, {"name": "Other", "description": "unrelated"}]}`
	})
	env := searchEnv(t, map[string]any{"search_mode": "custom_search", "search_api_url": srv.URL, "search_auth_env": "OQ_TEST_SEARCH_KEY", "search_max_num_results": 2})
	s, err := registry.LoadSplits(officeqa.Name, "testdata/split", 0)
	if err != nil {
		t.Fatal(err)
	}
	m := &benchtest.Scripted{Replies: []*llm.Response{
		{ToolCalls: []llm.ToolCall{call("s1", "search", `{"query":"treasury receipts FY2018"}`)}},
		{Content: "<answer>3,328,741</answer>"},
	}}
	ep, err := env.Episode(context.Background(), m, bench.EpisodeRequest{Item: s.Train[0]})
	if err != nil {
		t.Fatal(err)
	}
	if ep.Hard != 1 || ep.NTurns != 2 {
		t.Errorf("hard %v turns %d reason %q", ep.Hard, ep.NTurns, ep.FailReason)
	}
	if len(srv.bodies) != 1 {
		t.Fatalf("search service saw %d requests, want 1", len(srv.bodies))
	}
	if b := srv.bodies[0]; b["query"] != "treasury receipts FY2018" || b["max_num_results"] != 2.0 || b["provider"] != "duckduckgo" {
		t.Errorf("request body %v", b)
	}
	if got := srv.headers[0].Get("Authorization"); got != "sk-search-123" {
		t.Errorf("Authorization = %q", got)
	}
	names := map[string]bool{}
	for _, tl := range m.Requests[0].Tools {
		names[tl.Name] = true
	}
	if !names["search"] || !names["grep"] {
		t.Errorf("tools offered: %v", names)
	}
	var fed string
	for _, msg := range m.Requests[1].Messages {
		if msg.Role == llm.RoleTool && msg.ToolCallID == "s1" {
			fed = msg.Content
		}
	}
	want := "Query: treasury receipts FY2018\n\n[1] Treasury Bulletin March 2019\nURL: https://example.test/tb\nSnippet: FY2018 receipts 3,328,741 million\n\n[2] Other\nSnippet: unrelated"
	if fed != want {
		t.Errorf("search result fed back:\n%s\nwant\n%s", fed, want)
	}
}

// TestSearchOutageIsATypedFailure: a service that answers 503 through
// every retry fails the episode with ErrSearchUnavailable (an
// infrastructure outcome, never a score of 0), keeping the usage spent;
// the token never appears in the error.
func TestSearchOutageIsATypedFailure(t *testing.T) {
	t.Setenv("OQ_TEST_SEARCH_KEY", "sk-search-123")
	srv := newFakeSearch(t, func(int) (int, string) { return 503, "overloaded; key sk-search-123" })
	env := searchEnv(t, map[string]any{"search_mode": "custom_search", "search_api_url": srv.URL, "search_auth_env": "OQ_TEST_SEARCH_KEY"})
	officeqa.SetSearchBackoff(env, time.Millisecond)
	s, _ := registry.LoadSplits(officeqa.Name, "testdata/split", 0)
	m := &benchtest.Scripted{Replies: []*llm.Response{{ToolCalls: []llm.ToolCall{call("s1", "search", `{"query":"x"}`)}}}}
	ep, err := env.Episode(context.Background(), m, bench.EpisodeRequest{Item: s.Train[0]})
	if !errors.Is(err, officeqa.ErrSearchUnavailable) {
		t.Fatalf("err = %v, want ErrSearchUnavailable", err)
	}
	if strings.Contains(err.Error(), "sk-search-123") {
		t.Errorf("token in the error: %v", err)
	}
	if ep == nil || ep.Calls != 1 || ep.Usage.InputTokens == 0 {
		t.Errorf("partial episode lost the usage: %+v", ep)
	}
	if len(srv.bodies) != 5 {
		t.Errorf("service saw %d requests, want 5 (1 + 4 retries)", len(srv.bodies))
	}

	// A refused key is an outage too, without retries.
	deny := newFakeSearch(t, func(int) (int, string) { return 401, "no" })
	env = searchEnv(t, map[string]any{"search_mode": "custom_search", "search_api_url": deny.URL, "search_auth_env": "OQ_TEST_SEARCH_KEY"})
	m = &benchtest.Scripted{Replies: []*llm.Response{{ToolCalls: []llm.ToolCall{call("s1", "search", `{"query":"x"}`)}}}}
	if _, err := env.Episode(context.Background(), m, bench.EpisodeRequest{Item: s.Train[0]}); !errors.Is(err, officeqa.ErrSearchUnavailable) || !strings.Contains(err.Error(), "OQ_TEST_SEARCH_KEY") || len(deny.bodies) != 1 {
		t.Errorf("401: err %v after %d requests", err, len(deny.bodies))
	}
}

// TestAzureAISearchAndSearchOnly: an Azure AI Search index gets its key in
// api-key and the query as {search, top}; its "value" list is rendered;
// with use_local_tools false only search is offered.
func TestAzureAISearchAndSearchOnly(t *testing.T) {
	t.Setenv("OQ_TEST_AZ_KEY", "az-key-9")
	srv := newFakeSearch(t, func(int) (int, string) {
		return 200, `{"@odata.context": "x", "value": [{"@search.score": 1.2, "title": "Bulletin", "content": "receipts were 3,328,741"}]}`
	})
	env := searchEnv(t, map[string]any{"search_mode": "azure_ai_search", "search_api_url": srv.URL + "/indexes/tb/docs/search?api-version=2024-07-01",
		"search_auth_env": "OQ_TEST_AZ_KEY", "use_local_tools": false, "max_queries_per_turn": 1})
	s, _ := registry.LoadSplits(officeqa.Name, "testdata/split", 0)
	m := &benchtest.Scripted{Replies: []*llm.Response{
		{ToolCalls: []llm.ToolCall{call("a1", "search", `{"query":"receipts"}`), call("a2", "search", `{"query":"again"}`), call("a3", "grep", `{"pattern":"x"}`)}},
		{Content: "<answer>3,328,741</answer>"},
	}}
	ep, err := env.Episode(context.Background(), m, bench.EpisodeRequest{Item: s.Train[0]})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Requests[0].Tools) != 1 || m.Requests[0].Tools[0].Name != "search" {
		t.Errorf("tools offered: %+v", m.Requests[0].Tools)
	}
	if len(srv.bodies) != 1 || srv.bodies[0]["search"] != "receipts" || srv.bodies[0]["top"] != 4.0 || srv.headers[0].Get("api-key") != "az-key-9" {
		t.Errorf("requests %v headers %v", srv.bodies, srv.headers)
	}
	fed := map[string]string{}
	for _, msg := range m.Requests[1].Messages {
		if msg.Role == llm.RoleTool {
			fed[msg.ToolCallID] = msg.Content
		}
	}
	if !strings.Contains(fed["a1"], "[1] Bulletin\nSnippet: receipts were 3,328,741") || !strings.Contains(fed["a2"], "at most 1 searches a turn") || !strings.Contains(fed["a3"], "available: search") {
		t.Errorf("fed back: %q", fed)
	}
	if ep.Hard != 1 || !strings.Contains(ep.Messages[len(ep.Messages)-1].Content, "2 malformed tool call(s)") {
		t.Errorf("hard %v eval %q", ep.Hard, ep.Messages[len(ep.Messages)-1].Content)
	}
}

func TestSearchKeysAreCheckedAtStart(t *testing.T) {
	docs, _ := filepath.Abs("testdata/docs")
	t.Setenv("OQ_TEST_EMPTY", "")
	for _, tc := range []struct {
		keys map[string]any
		want string
	}{
		{map[string]any{"search_mode": "custom_search"}, "env.search_api_url: required"},
		{map[string]any{"search_mode": "custom_search", "search_api_url": "http://127.0.0.1:1", "search_auth_env": "OQ_TEST_EMPTY"}, "$OQ_TEST_EMPTY is empty"},
		{map[string]any{"search_mode": "azure_search"}, "built-in web search"},
		{map[string]any{"search_mode": "bing"}, `unknown mode "bing"`},
		{map[string]any{"use_local_tools": false}, "leaves the agent no tool"},
	} {
		cfg := map[string]any{"docs_dir": docs}
		for k, v := range tc.keys {
			cfg[k] = v
		}
		raw, _ := json.Marshal(cfg)
		if _, err := registry.New(officeqa.Name, raw); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.keys, err, tc.want)
		}
	}
}
