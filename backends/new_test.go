package backends_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/backends/backendtest"
	"github.com/skillfleet/skillfleet/pkg/llm"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

func TestNewRejectsUnknownBackend(t *testing.T) {
	t.Parallel()
	_, err := backends.New(t.Context(), backends.Spec{Backend: "nope"}, backends.Deps{Extra: map[string]func(backends.Spec) (llm.Model, error){
		"sim": func(backends.Spec) (llm.Model, error) { return &script{}, nil },
	}})
	if !errors.Is(err, backends.ErrUnknownBackend) || !strings.Contains(err.Error(), `"nope"`) || !strings.Contains(err.Error(), "sim") {
		t.Errorf("New(nope) = %v, want ErrUnknownBackend naming it and the known ones", err)
	}
}

func TestNewReportsEveryBadOption(t *testing.T) {
	t.Parallel()
	_, err := backends.New(t.Context(), backends.Spec{Backend: "openai", Options: map[string]string{
		"rpm": "lots", "circuit": "maybe", "max_tokens_field": "max_toks", "extra_body": "[1]", "retry_cap": "soon",
	}}, backends.Deps{})
	if err == nil {
		t.Fatal("New accepted bad options")
	}
	for _, key := range []string{"rpm", "circuit", "max_tokens_field", "extra_body", "retry_cap"} {
		if !strings.Contains(err.Error(), "option "+key+"=") {
			t.Errorf("New() error %q does not name option %s", err, key)
		}
	}
	if _, err := backends.New(t.Context(), backends.Spec{Backend: "azure"}, backends.Deps{}); err == nil || !strings.Contains(err.Error(), "endpoint") {
		t.Errorf("New(azure without endpoint) = %v, want an error naming the endpoint", err)
	}
	if _, err := backends.New(t.Context(), backends.Spec{Backend: "exec"}, backends.Deps{}); err == nil || !strings.Contains(err.Error(), "option agent") {
		t.Errorf("New(exec without a command) = %v, want an error naming the agent option", err)
	}
}

func TestNewAppliesSpecDefaultsAndWrapsExtra(t *testing.T) {
	t.Parallel()
	m := &script{errs: []error{errOf(llm.KindServer)}}
	var s sleeper
	temp := 0.25
	spec := backends.SpecFromProto(&pb.ModelSpec{Backend: "sim", Model: "sim-target", Temperature: &temp, MaxTokens: 99,
		ReasoningEffort: "low", TimeoutMs: 1500, MaxRetries: 2})
	got, err := backends.New(t.Context(), spec, backends.Deps{Sleep: s.Sleep, Extra: map[string]func(backends.Spec) (llm.Model, error){
		"sim": func(backends.Spec) (llm.Model, error) { return m, nil },
	}})
	if err != nil {
		t.Fatal(err)
	}
	req := &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}
	resp, err := got.Chat(t.Context(), req)
	if err != nil || resp.Attempts != 2 {
		t.Fatalf("Chat() = %+v, %v; want success on the 2nd attempt", resp, err)
	}
	want := llm.Request{Model: "sim-target", Temperature: &temp, MaxTokens: 99, ReasoningEffort: "low", Timeout: 1500 * time.Millisecond, Messages: req.Messages}
	if diff := cmp.Diff(want, m.reqs[1]); diff != "" {
		t.Errorf("request the backend saw (-want +got):\n%s", diff)
	}
	if req.Model != "" || req.Timeout != 0 {
		t.Errorf("New's defaults changed the caller's request: %+v", req)
	}
	// A request's own settings win.
	own := 0.9
	if _, err := got.Chat(t.Context(), &llm.Request{Model: "other", Temperature: &own, MaxTokens: 5, Timeout: time.Second}); err != nil {
		t.Fatal(err)
	}
	if r := m.reqs[2]; r.Model != "other" || *r.Temperature != own || r.MaxTokens != 5 || r.Timeout != time.Second {
		t.Errorf("request settings were overridden: %+v", r)
	}
}

func TestWrapOrderIsFixed(t *testing.T) {
	t.Parallel()
	l := backends.NewLimiter(nil, nil)
	key := backends.LimitKey{Backend: "b", Endpoint: "e", Model: "m"}
	a := backends.Wrap(&script{}, backends.WithLimiter(l, key, backends.Limits{RequestsPerMin: 1}), backends.WithRetry(backends.RetryPolicy{MaxRetries: 2}), backends.WithCircuit(backends.CircuitPolicy{}))
	b := backends.Wrap(&script{}, backends.WithCircuit(backends.CircuitPolicy{}), backends.WithRetry(backends.RetryPolicy{MaxRetries: 2}), backends.WithLimiter(l, key, backends.Limits{RequestsPerMin: 1}))
	want := "retry(2, circuit(limited(b|e|m, *backends_test.script)))"
	for _, m := range []llm.Model{a, b} {
		if got := m.(interface{ String() string }).String(); got != want {
			t.Errorf("Wrap() = %s, want %s", got, want)
		}
	}
}

// recorder is a fake OpenAI server that fails the first n requests.
type recorder struct {
	mu     sync.Mutex
	fail   int
	bodies []map[string]any
	auth   []string
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	var m map[string]any
	_ = json.Unmarshal(b, &m)
	r.mu.Lock()
	r.bodies = append(r.bodies, m)
	r.auth = append(r.auth, req.Header.Get("Authorization"))
	n := len(r.bodies)
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if n <= r.fail {
		w.Header().Set("Retry-After", "1")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":{"message":"slow down","type":"rate_limit_exceeded"}}`)
		return
	}
	_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1,"total_tokens":4}}`)
}

func TestNewOpenAIEndToEnd(t *testing.T) {
	t.Parallel()
	rec := &recorder{fail: 2}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	var s sleeper
	getenv := func(k string) string {
		return map[string]string{"OPENAI_API_KEY": "sk-default-var-123", "MY_KEY": backendtest.APIKey}[k]
	}
	m, err := backends.New(t.Context(), backends.Spec{Backend: "openai_compatible", Model: "Qwen/Qwen3-4B", BaseURL: srv.URL + "/v1", APIKeyEnv: "MY_KEY",
		Options: map[string]string{"thinking_mode": "disabled", "rpm": "600", "max_concurrency": "8"}},
		backends.Deps{Getenv: getenv, Sleep: s.Sleep})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Chat(t.Context(), &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
	if err != nil {
		t.Fatalf("Chat() = %v", err)
	}
	if resp.Attempts != 3 || resp.RateLimited != 2 {
		t.Errorf("Attempts, RateLimited = %d, %d; want 3, 2", resp.Attempts, resp.RateLimited)
	}
	for _, d := range s.slept {
		if d < time.Second {
			t.Errorf("retried after %v, sooner than Retry-After 1s", d)
		}
	}
	if rec.auth[0] != "Bearer "+backendtest.APIKey {
		t.Errorf("Authorization = %q, want the key from the named variable", rec.auth[0])
	}
	if diff := cmp.Diff(map[string]any{"enable_thinking": false}, rec.bodies[0]["chat_template_kwargs"]); diff != "" {
		t.Errorf("chat_template_kwargs (-want +got):\n%s", diff)
	}

	// Default key variable, no thinking kwargs by default, no retries.
	rec2 := &recorder{fail: 1}
	srv2 := httptest.NewServer(rec2)
	defer srv2.Close()
	m2, err := backends.New(t.Context(), backends.Spec{Backend: "openai", Model: "m", BaseURL: srv2.URL, MaxRetries: -1}, backends.Deps{Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	_, err = m2.Chat(t.Context(), &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}})
	if llm.KindOf(err) != llm.KindRateLimited || len(rec2.bodies) != 1 {
		t.Errorf("Chat() with max_retries -1 = %v after %d requests, want rate_limited after 1", err, len(rec2.bodies))
	}
	if rec2.auth[0] != "Bearer sk-default-var-123" {
		t.Errorf("Authorization = %q, want OPENAI_API_KEY's value", rec2.auth[0])
	}
	if _, ok := rec2.bodies[0]["chat_template_kwargs"]; ok {
		t.Error("chat_template_kwargs sent without thinking_mode")
	}
}

func TestNewAzureAndAnthropic(t *testing.T) {
	t.Parallel()
	getenv := func(k string) string {
		return map[string]string{"AZURE_OPENAI_API_KEY": backendtest.APIKey, "ANTHROPIC_API_KEY": backendtest.APIKey}[k]
	}
	for _, tc := range []struct {
		wire backendtest.Wire
		spec func(url string) backends.Spec
	}{
		{backendtest.Azure("dep-1", "2024-10-21"), func(url string) backends.Spec {
			return backends.Spec{Backend: "azure", Model: "gpt-4o", BaseURL: url, Options: map[string]string{"api_version": "2024-10-21", "deployment": "dep-1"}}
		}},
		{backendtest.Anthropic(), func(url string) backends.Spec {
			return backends.Spec{Backend: "anthropic", Model: "claude-x", BaseURL: url, Options: map[string]string{"cache_system": "true"}}
		}},
	} {
		t.Run(tc.wire.Name, func(t *testing.T) {
			t.Parallel()
			backendtest.Run(t, tc.wire, func(t *testing.T, url string) llm.Model {
				m, err := backends.New(t.Context(), tc.spec(url), backends.Deps{Getenv: getenv, Sleep: func(context.Context, time.Duration) error { return nil }})
				if err != nil {
					t.Fatal(err)
				}
				return m
			})
		})
	}
}

func TestNewExec(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/bin/bash"); err != nil {
		t.Skip("no /bin/bash")
	}
	// The agent runs in the sandbox (the default), as uid 65534 for a root
	// worker: its directory must be one others can enter.
	dir, err := os.MkdirTemp("", "skillfleet-newexec-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	agent := filepath.Join(dir, "agent.sh")
	if err := os.WriteFile(agent, []byte("#!/bin/bash\necho \"key=${AGENT_KEY:-unset} task=$1\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	m, err := backends.New(t.Context(), backends.Spec{Backend: "exec", Model: "any", APIKeyEnv: "AGENT_KEY",
		Options: map[string]string{"command": `["` + agent + `","{task}"]`}},
		backends.Deps{Getenv: func(k string) string {
			return map[string]string{"AGENT_KEY": "abc12345", "PATH": os.Getenv("PATH")}[k]
		}})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Chat(t.Context(), &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "do it"}}})
	// The agent saw the key (it did not print "unset"), and its value is
	// redacted from the reply it printed.
	if err != nil || resp.Content != "key=[REDACTED] task=do it" {
		t.Errorf("Chat() = %+v, %v; want the agent's output with the spec's key variable passed through and its value redacted", resp, err)
	}
}

// TestNewOpenAIBaseURLFromEnvironment: with no base URL in the spec, the
// conventional OPENAI_BASE_URL names the server.
func TestNewOpenAIBaseURLFromEnvironment(t *testing.T) {
	t.Parallel()
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	getenv := func(k string) string {
		return map[string]string{"OPENAI_API_KEY": "sk-env-base-url", "OPENAI_BASE_URL": srv.URL + "/v1"}[k]
	}
	m, err := backends.New(t.Context(), backends.Spec{Backend: "openai", Model: "m"}, backends.Deps{Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Chat(t.Context(), &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "x"}}}); err != nil {
		t.Fatalf("Chat() = %v", err)
	}
	if len(rec.bodies) != 1 {
		t.Errorf("server behind OPENAI_BASE_URL saw %d requests, want 1", len(rec.bodies))
	}
}

// TestNewExecChecksVersionUnderCallersContext: building an exec backend
// runs the agent's --version under the caller's context, so a caller that
// is gone is not kept waiting for a subprocess; and a probe cut short is
// not remembered, so the next build with a live context checks the same
// binary again and succeeds.
func TestNewExecChecksVersionUnderCallersContext(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	agent := filepath.Join(dir, "codex.sh")
	if err := os.WriteFile(agent, []byte("#!/bin/bash\necho 'codex-cli 0.169.0'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := backends.Spec{Backend: "exec", Model: "m", Options: map[string]string{"agent": "codex", "bin": agent, "sandbox": "none"}}
	deps := backends.Deps{Getenv: func(k string) string {
		if k == "PATH" {
			return os.Getenv("PATH")
		}
		return ""
	}}
	gone, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := backends.New(gone, spec, deps); !errors.Is(err, context.Canceled) {
		t.Fatalf("New with a cancelled context: err %v, want context.Canceled from the version probe", err)
	}
	if _, err := backends.New(t.Context(), spec, deps); err != nil {
		t.Fatalf("New after a cancelled probe: %v (the cut-short probe was remembered)", err)
	}
}
