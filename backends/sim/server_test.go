package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	openai "github.com/sashabaranov/go-openai"

	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// setupServer starts the HTTP face on an httptest server.
func setupServer(t *testing.T, o ServerOptions) (*Server, *httptest.Server) {
	t.Helper()
	s := NewServer(New(Options{}), o)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts
}

func openaiClient(ts *httptest.Server) *openai.Client {
	cfg := openai.DefaultConfig("test-key")
	cfg.BaseURL = ts.URL + "/v1"
	return openai.NewClientWithConfig(cfg)
}

const question = "Note the route length. It also refers to the serial code. " + simbench.RecordMarker + "4821."

func TestOpenAIClientContract(t *testing.T) {
	t.Parallel()
	s, ts := setupServer(t, ServerOptions{})
	c := openaiClient(ts)
	km := mustLookup("units_km")
	skill := "# Skill\n- " + km.Rule + "\n"
	seed := 3
	resp, err := c.CreateChatCompletion(t.Context(), openai.ChatCompletionRequest{
		Model: "sim-target", Seed: &seed,
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: simbench.SystemPrompt(skill)},
			{Role: openai.ChatMessageRoleUser, Content: simbench.UserPrompt(question)},
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The same request in-process gives the same reply and usage.
	dreq := targetRequest(skill, question, 3)
	dreq.Model = "sim-target"
	direct, err := New(Options{}).Chat(t.Context(), dreq)
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 1 || resp.Choices[0].Message.Content != direct.Content || resp.Choices[0].Message.Role != "assistant" ||
		resp.Choices[0].FinishReason != openai.FinishReasonStop || resp.Model != "sim-target" || resp.Object != "chat.completion" || resp.ID == "" || resp.Created == 0 {
		t.Errorf("response = %+v, want the in-process reply %q", resp, direct.Content)
	}
	want := openai.Usage{PromptTokens: int(direct.Usage.InputTokens), CompletionTokens: int(direct.Usage.OutputTokens),
		TotalTokens: int(direct.Usage.InputTokens + direct.Usage.OutputTokens)}
	if diff := cmp.Diff(want, resp.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}

	// Content parts read the same as a string.
	parts, err := c.CreateChatCompletion(t.Context(), openai.ChatCompletionRequest{
		Model: "sim-target", Seed: &seed,
		Messages: []openai.ChatCompletionMessage{
			{Role: openai.ChatMessageRoleSystem, Content: simbench.SystemPrompt(skill)},
			{Role: openai.ChatMessageRoleUser, MultiContent: []openai.ChatMessagePart{{Type: openai.ChatMessagePartTypeText, Text: simbench.UserPrompt(question)}}},
		},
	})
	if err != nil || parts.Choices[0].Message.Content != direct.Content {
		t.Errorf("content parts: reply %+v, %v; want %q", parts, err, direct.Content)
	}

	// An optimizer request over the wire.
	system, user, err := prompts.New(nil).Render(prompts.Ranking, prompts.ModePatch, prompts.RankInput{Skill: skill, Budget: 1,
		Items: []prompts.Item{{Op: "append", Content: "- a", SupportCount: 1}, {Op: "append", Content: "- b", SupportCount: 3}}}, prompts.RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	opt, err := c.CreateChatCompletion(t.Context(), openai.ChatCompletionRequest{Model: "sim-optimizer", Messages: []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleSystem, Content: system}, {Role: openai.ChatMessageRoleUser, Content: user},
	}})
	if err != nil {
		t.Fatal(err)
	}
	var rk prompts.RankReply
	decodeReply(t, opt.Choices[0].Message.Content, &rk)
	if len(rk.SelectedIndices) != 1 || string(rk.SelectedIndices[0]) != "1" {
		t.Errorf("ranking over HTTP selected %s, want [1]", rk.SelectedIndices)
	}

	// An unreadable optimizer request is a 400 naming its kind.
	_, err = c.CreateChatCompletion(t.Context(), openai.ChatCompletionRequest{Model: "sim-optimizer", Messages: []openai.ChatCompletionMessage{
		{Role: openai.ChatMessageRoleUser, Content: "go\n```json\n{\"kind\":\"merge_final\",\"mode\":\"patch\",\"surprise\":true}\n```\n"},
	}})
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || apiErr.HTTPStatusCode != http.StatusBadRequest || !strings.Contains(apiErr.Message, "merge_final") || apiErr.Type != "invalid_request_error" {
		t.Errorf("bad payload: error %v, want a 400 invalid_request_error naming merge_final", err)
	}

	models, err := c.ListModels(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range models.Models {
		ids = append(ids, m.ID)
	}
	if want := []string{"sim", "sim-optimizer", "sim-target"}; !slices.Equal(ids, want) {
		t.Errorf("models = %v, want %v", ids, want)
	}

	st := s.Stats()
	if st.Requests != 4 || st.Served != 3 || st.BadRequests != 1 || st.Models["sim-target"].Served != 2 ||
		st.InputTokens != st.Models["sim-target"].InputTokens+st.Models["sim-optimizer"].InputTokens || st.OutputTokens == 0 {
		t.Errorf("stats = %+v", st)
	}
	var remote Stats
	getJSON(t, ts.URL+"/v1/stats", &remote)
	if diff := cmp.Diff(st, remote); diff != "" {
		t.Errorf("GET /v1/stats (-Stats() +remote):\n%s", diff)
	}
}

func getJSON(t *testing.T, url string, out any) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}

// post sends a raw chat completion request.
func post(t *testing.T, ctx context.Context, url string, body any, header ...string) (*http.Response, []byte, error) {
	t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions", bytes.NewReader(data))
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp, b, err
}

func targetBody(model string) map[string]any {
	return map[string]any{"model": model, "seed": 1, "messages": []map[string]any{
		{"role": "system", "content": simbench.SystemPrompt("# Skill")},
		{"role": "user", "content": simbench.UserPrompt(question)},
	}}
}

func optimizerBody(t *testing.T) map[string]any {
	t.Helper()
	_, user, err := prompts.New(nil).Render(prompts.Consolidate, "", prompts.ConsolidateInput{Notes: []string{"Check units."}}, prompts.RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]any{"model": "opt", "messages": []map[string]any{{"role": "user", "content": user}}}
}

type errorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Code    *string `json:"code"`
	} `json:"error"`
}

// fakeClock is a settable clock for the rate limits.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestRateLimits(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t.Run("rpm", func(t *testing.T) {
		t.Parallel()
		clock := &fakeClock{now: start}
		s, ts := setupServer(t, ServerOptions{RPM: 2, Now: clock.Now})
		for i := range 2 {
			if resp, body, err := post(t, t.Context(), ts.URL, targetBody("m")); err != nil || resp.StatusCode != 200 {
				t.Fatalf("request %d: %v %v %s", i, err, resp, body)
			}
		}
		resp, body, err := post(t, t.Context(), ts.URL, targetBody("m"))
		if err != nil {
			t.Fatal(err)
		}
		var eb errorBody
		_ = json.Unmarshal(body, &eb)
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "30" || eb.Error.Type != "rate_limit_error" ||
			eb.Error.Code == nil || *eb.Error.Code != "rate_limit_exceeded" {
			t.Errorf("third request: %d Retry-After %q body %s; want 429, Retry-After 30 and an OpenAI-style error", resp.StatusCode, resp.Header.Get("Retry-After"), body)
		}
		clock.Advance(30 * time.Second)
		if resp, _, err := post(t, t.Context(), ts.URL, targetBody("m")); err != nil || resp.StatusCode != 200 {
			t.Errorf("after Retry-After: %v %v, want 200", resp, err)
		}
		if st := s.Stats(); st.RateLimited != 1 || st.Models["m"].RateLimited != 1 || st.Served != 3 || st.Requests != 4 {
			t.Errorf("stats = %+v", st)
		}
	})
	t.Run("tpm", func(t *testing.T) {
		t.Parallel()
		clock := &fakeClock{now: start}
		s, ts := setupServer(t, ServerOptions{TPM: 60, RPM: 1000, Now: clock.Now})
		// One request costs its prompt tokens (well over 60, so capped at
		// the bucket): the next must wait a whole minute's refill.
		if resp, _, err := post(t, t.Context(), ts.URL, targetBody("m")); err != nil || resp.StatusCode != 200 {
			t.Fatalf("first request: %v %v", resp, err)
		}
		resp, _, err := post(t, t.Context(), ts.URL, targetBody("m"))
		if err != nil || resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") != "60" {
			t.Fatalf("second request: %v %v, want 429 with Retry-After 60", resp, err)
		}
		// The refused request took no request token either.
		if st := s.Stats(); st.RateLimited != 1 {
			t.Errorf("stats = %+v", st)
		}
	})
}

func TestFaults(t *testing.T) {
	t.Parallel()
	t.Run("malformed", func(t *testing.T) {
		t.Parallel()
		s, ts := setupServer(t, ServerOptions{FaultRateMalformed: 1})
		_, body, err := post(t, t.Context(), ts.URL, optimizerBody(t))
		if err != nil {
			t.Fatal(err)
		}
		var r wireReply
		if err := json.Unmarshal(body, &r); err != nil || len(r.Choices) != 1 {
			t.Fatalf("reply %s: %v", body, err)
		}
		if c := r.Choices[0].Message.Content; strings.ContainsAny(c, "{}") || c == "" {
			t.Errorf("malformed reply content = %q, want prose without JSON", c)
		}
		// A target request is never malformed: it has no JSON to break.
		_, body, _ = post(t, t.Context(), ts.URL, targetBody("m"))
		if !strings.Contains(string(body), "<answer>") {
			t.Errorf("target reply under the malformed fault = %s", body)
		}
		if st := s.Stats(); st.Faults[FaultMalformed] != 1 || st.Served != 1 {
			t.Errorf("stats = %+v", st)
		}
	})
	t.Run("500", func(t *testing.T) {
		t.Parallel()
		_, ts := setupServer(t, ServerOptions{FaultRate500: 1})
		resp, body, err := post(t, t.Context(), ts.URL, targetBody("m"))
		var eb errorBody
		if err != nil || resp.StatusCode != 500 || json.Unmarshal(body, &eb) != nil || eb.Error.Type != "server_error" {
			t.Errorf("got %v %v %s, want a 500 with an error body", resp, err, body)
		}
	})
	t.Run("drop", func(t *testing.T) {
		t.Parallel()
		s, ts := setupServer(t, ServerOptions{FaultRateDrop: 1})
		if _, _, err := post(t, t.Context(), ts.URL, targetBody("m")); err == nil {
			t.Error("dropped connection: request succeeded")
		}
		if st := s.Stats(); st.Faults[FaultDrop] != 1 {
			t.Errorf("stats = %+v", st)
		}
	})
	t.Run("stall", func(t *testing.T) {
		t.Parallel()
		s := NewServer(New(Options{}), ServerOptions{FaultRateStall: 1})
		ctx, cancel := context.WithCancel(t.Context())
		s.faultHook = func(string) { cancel() } // the client gives up once the server stalls
		ts := httptest.NewServer(s)
		t.Cleanup(ts.Close)
		if _, _, err := post(t, ctx, ts.URL, targetBody("m")); !errors.Is(err, context.Canceled) {
			t.Errorf("stalled request: error %v, want the client's cancellation", err)
		}
		if st := s.Stats(); st.Faults[FaultStall] != 1 {
			t.Errorf("stats = %+v", st)
		}
	})
	t.Run("rates", func(t *testing.T) {
		t.Parallel()
		s, ts := setupServer(t, ServerOptions{FaultRate500: 0.2, FaultRateMalformed: 0.1, FaultSeed: 7})
		statuses := map[int]int{}
		const n = 400
		for range n {
			resp, _, err := post(t, t.Context(), ts.URL, optimizerBody(t))
			if err != nil {
				t.Fatal(err)
			}
			statuses[resp.StatusCode]++
		}
		st := s.Stats()
		if got := float64(statuses[500]) / n; got < 0.15 || got > 0.25 {
			t.Errorf("500 rate = %.3f, want about 0.2", got)
		}
		if got := float64(st.Faults[FaultMalformed]) / n; got < 0.06 || got > 0.14 {
			t.Errorf("malformed rate = %.3f, want about 0.1", got)
		}
		if int64(statuses[500]) != st.Faults[FaultServerError] || st.Served+st.Faults[FaultMalformed] != int64(statuses[200]) {
			t.Errorf("statuses %v disagree with stats %+v", statuses, st)
		}
		// The faults are a function of the seed and the arrival order.
		s2, ts2 := setupServer(t, ServerOptions{FaultRate500: 0.2, FaultRateMalformed: 0.1, FaultSeed: 7})
		for range n {
			if _, _, err := post(t, t.Context(), ts2.URL, optimizerBody(t)); err != nil {
				t.Fatal(err)
			}
		}
		if diff := cmp.Diff(st.Faults, s2.Stats().Faults); diff != "" {
			t.Errorf("same fault seed, different faults (-first +second):\n%s", diff)
		}
	})
}

func TestRequestErrors(t *testing.T) {
	t.Parallel()
	s, ts := setupServer(t, ServerOptions{APIKey: "k"})
	for name, tc := range map[string]struct {
		body   any
		header []string
		status int
	}{
		"no key":         {targetBody("m"), nil, 401},
		"wrong key":      {targetBody("m"), []string{"Authorization", "Bearer nope"}, 401},
		"no model":       {targetBody(""), []string{"Authorization", "Bearer k"}, 400},
		"stream":         {map[string]any{"model": "m", "stream": true, "messages": []any{}}, []string{"Authorization", "Bearer k"}, 400},
		"bad content":    {map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": 5}}}, []string{"Authorization", "Bearer k"}, 400},
		"not a sim chat": {map[string]any{"model": "m", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}, []string{"Authorization", "Bearer k"}, 400},
		"ok":             {targetBody("m"), []string{"Authorization", "Bearer k"}, 200},
	} {
		resp, body, err := post(t, t.Context(), ts.URL, tc.body, tc.header...)
		if err != nil || resp.StatusCode != tc.status {
			t.Errorf("%s: %v %v %s, want %d", name, resp, err, body, tc.status)
		}
	}
	if st := s.Stats(); st.BadRequests != 6 || st.Served != 1 {
		t.Errorf("stats = %+v", st)
	}
}

func TestLatencyDistribution(t *testing.T) {
	t.Parallel()
	s := NewServer(New(Options{}), ServerOptions{Latency: Latency{Median: 100 * time.Millisecond, P99: time.Second}})
	r := simbench.NewRNG(1)
	var ds []time.Duration
	for range 20000 {
		ds = append(ds, s.latency(r))
	}
	slices.Sort(ds)
	med, p99 := ds[len(ds)/2], ds[len(ds)*99/100]
	if math.Abs(float64(med-100*time.Millisecond)) > float64(10*time.Millisecond) || math.Abs(float64(p99-time.Second)) > float64(150*time.Millisecond) {
		t.Errorf("median %v, p99 %v; want about 100ms and 1s", med, p99)
	}
	if d := NewServer(nil, ServerOptions{Latency: Latency{Fixed: time.Second}}).latency(r); d != time.Second {
		t.Errorf("fixed latency = %v", d)
	}
}

func TestListenAndServe(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	addr, wait, err := ListenAndServe(ctx, ":0", NewServer(New(Options{}), ServerOptions{}))
	if err != nil {
		t.Fatal(err)
	}
	host, _, _ := net.SplitHostPort(addr)
	if host != "127.0.0.1" {
		t.Errorf("bound %s, want loopback", addr)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, "http://"+addr+"/healthz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok\n" {
		t.Errorf("healthz = %d %q", resp.StatusCode, body)
	}
	cancel()
	if err := wait(); err != nil {
		t.Errorf("Serve after cancel = %v, want nil", err)
	}
	if _, err := Listen(t.Context(), "no-port"); err == nil {
		t.Error("Listen(no-port) succeeded")
	}
}

// TestStalledRequestEndsOnShutdown checks that a stall does not hold a
// server past its context.
func TestStalledRequestEndsOnShutdown(t *testing.T) {
	t.Parallel()
	s := NewServer(New(Options{}), ServerOptions{FaultRateStall: 1})
	ctx, cancel := context.WithCancel(t.Context())
	addr, wait, err := ListenAndServe(ctx, "127.0.0.1:0", s)
	if err != nil {
		t.Fatal(err)
	}
	stalled := make(chan struct{})
	s.faultHook = func(string) { close(stalled) }
	body, err := json.Marshal(targetBody("m"))
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+addr+"/v1/chat/completions", bytes.NewReader(body))
	done := make(chan error, 1)
	go func() {
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		done <- err
	}()
	<-stalled
	cancel()
	if err := wait(); err != nil {
		t.Errorf("Serve = %v", err)
	}
	if err := <-done; err == nil {
		t.Error("stalled request succeeded")
	}
}
