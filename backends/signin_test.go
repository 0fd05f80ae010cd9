package backends_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// fakeAzureCLI puts an `az` on PATH that issues cli-token-1, -2, ...
// valid for life seconds, as `az account get-access-token -o json` does.
func fakeAzureCLI(t *testing.T, life int) {
	t.Helper()
	dir := t.TempDir()
	count := filepath.Join(dir, "runs")
	script := fmt.Sprintf(`#!/bin/sh
n=$(cat %[1]q 2>/dev/null || echo 0); n=$((n+1)); echo $n > %[1]q
printf '{"accessToken":"cli-token-%%s","expires_on":%%s,"tokenType":"Bearer"}\n' "$n" $(( $(date +%%s) + %[2]d ))
`, count, life)
	if err := os.WriteFile(filepath.Join(dir, "az"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// fakeAzureOpenAI is an Azure OpenAI endpoint that accepts the bearer
// tokens accept reports valid and records the tokens it saw.
type fakeAzureOpenAI struct {
	*httptest.Server
	mu     sync.Mutex
	tokens []string
	calls  atomic.Int64
}

func newFakeAzureOpenAI(t *testing.T, accept func(tok string) bool) *fakeAzureOpenAI {
	t.Helper()
	f := &fakeAzureOpenAI{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || r.Header.Get("api-key") != "" || !accept(tok) {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"code":"401","message":"Access denied due to invalid subscription key or wrong API endpoint."}}`))
			return
		}
		f.mu.Lock()
		if len(f.tokens) == 0 || f.tokens[len(f.tokens)-1] != tok {
			f.tokens = append(f.tokens, tok)
		}
		f.mu.Unlock()
		f.calls.Add(1)
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/openai/models":
			_, _ = w.Write([]byte(`{"object":"list","data":[]}`))
		case r.URL.Path == "/openai/deployments/dep-1/chat/completions":
			_, _ = w.Write([]byte(`{"object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"ok"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}`))
		case r.URL.Path == "/openai/responses":
			_, _ = w.Write([]byte(`{"object":"response","status":"completed","model":"gpt-5-codex","output":[{"type":"message","role":"assistant","content":[{"type":"output_text","text":"ok"}]}],"usage":{"input_tokens":3,"output_tokens":1}}`))
		default:
			http.Error(w, "no route "+r.URL.Path, http.StatusNotFound)
		}
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeAzureOpenAI) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.tokens...)
}

// A run signed in with the Azure CLI outlives its tokens: calls go on
// across expiries, each with a token the CLI issued, and a new token is
// fetched before the old one runs out.
func TestAzureCLISignInRefreshesMidRun(t *testing.T) {
	fakeAzureCLI(t, 2)
	api := newFakeAzureOpenAI(t, func(tok string) bool { return strings.HasPrefix(tok, "cli-token-") })
	env := map[string]string{} // no AZURE_OPENAI_API_KEY: SkillOpt's default azure_cli applies
	m, err := backends.New(t.Context(), backends.Spec{Backend: "azure", Model: "dep-1", BaseURL: api.URL}, backends.Deps{Getenv: func(k string) string { return env[k] }})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2500 * time.Millisecond)
	for time.Now().Before(deadline) {
		if _, err := m.Chat(t.Context(), &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}); err != nil {
			t.Fatalf("call %d: %v", api.calls.Load()+1, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if got := api.seen(); len(got) < 2 || got[0] != "cli-token-1" || got[1] != "cli-token-2" {
		t.Errorf("tokens the API saw = %v; want cli-token-1 then cli-token-2 (a refresh mid-run)", got)
	}
}

func TestAzureModeFromOptionAndVariable(t *testing.T) {
	fakeAzureCLI(t, 3600)
	api := newFakeAzureOpenAI(t, func(tok string) bool { return strings.HasPrefix(tok, "cli-token-") })
	for _, tc := range []struct {
		name string
		opts map[string]string
		env  map[string]string
		ok   bool
		want string
	}{
		{name: "option", opts: map[string]string{"auth_mode": "azure_cli"}, env: map[string]string{"AZURE_OPENAI_API_KEY": "a-key"}, ok: true},
		{name: "variable", env: map[string]string{"AZURE_OPENAI_AUTH_MODE": "azure-cli", "AZURE_OPENAI_API_KEY": "a-key"}, ok: true},
		{name: "key present", env: map[string]string{"AZURE_OPENAI_API_KEY": "a-key"}, want: "auth (HTTP 401)"},
		{name: "bad option", opts: map[string]string{"auth_mode": "azure_clii"}, want: "option auth_mode: unknown Azure sign-in mode"},
		{name: "bad variable", env: map[string]string{"AZURE_OPENAI_AUTH_MODE": "nope"}, want: "AZURE_OPENAI_AUTH_MODE: unknown Azure sign-in mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, err := backends.New(t.Context(), backends.Spec{Backend: "azure", Model: "dep-1", BaseURL: api.URL, MaxRetries: -1, Options: tc.opts},
				backends.Deps{Getenv: func(k string) string { return tc.env[k] }})
			if err == nil {
				_, err = m.Chat(t.Context(), &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
			}
			if tc.ok != (err == nil) || (!tc.ok && !strings.Contains(fmt.Sprint(err), tc.want)) {
				t.Errorf("err = %v; want ok=%t or %q", err, tc.ok, tc.want)
			}
		})
	}
}

// A codex deployment signed in with a managed identity goes through the
// Responses API with the identity's token.
func TestManagedIdentityResponsesModel(t *testing.T) {
	var issued atomic.Int64
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-IDENTITY-HEADER") != "h" {
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		fmt.Fprintf(w, `{"access_token":"mi-token-%d","expires_on":"%d","resource":"https://cognitiveservices.azure.com","token_type":"Bearer"}`,
			issued.Add(1), time.Now().Add(time.Hour).Unix())
	}))
	defer idp.Close()
	t.Setenv("IDENTITY_ENDPOINT", idp.URL)
	t.Setenv("IDENTITY_HEADER", "h")
	api := newFakeAzureOpenAI(t, func(tok string) bool { return strings.HasPrefix(tok, "mi-token-") })
	m, err := backends.New(t.Context(), backends.Spec{Backend: "azure", Model: "gpt-5.1-codex", BaseURL: api.URL, Options: map[string]string{"auth_mode": "managed_identity"}},
		backends.Deps{Getenv: func(string) string { return "" }})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := m.Chat(t.Context(), &llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}})
	if err != nil || resp.Content != "ok" || resp.Usage.InputTokens != 3 {
		t.Fatalf("Chat() = %+v, %v", resp, err)
	}
	if got := api.seen(); len(got) != 1 || !strings.HasPrefix(got[0], "mi-token-") {
		t.Errorf("tokens the API saw = %v", got)
	}
}
