package main

import (
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeAzure is an Azure OpenAI endpoint in front of a sim-llm: it accepts
// only bearer tokens that valid says were issued, serves the deployments'
// Chat Completions path and the Responses API path by forwarding them to
// the sim-llm's OpenAI paths, and records every token it saw.
type fakeAzure struct {
	*httptest.Server
	mu       sync.Mutex
	tokens   []string
	refused  atomic.Int64
	chat     atomic.Int64
	response atomic.Int64
}

func newFakeAzure(t *testing.T, simURL string, valid func(tok string) bool) *fakeAzure {
	t.Helper()
	target, err := url.Parse(simURL)
	if err != nil {
		t.Fatal(err)
	}
	f := &fakeAzure{}
	proxy := httputil.NewSingleHostReverseProxy(target)
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		if !ok || r.Header.Get("api-key") != "" || !valid(tok) {
			f.refused.Add(1)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"code":"401","message":"Access denied: invalid or expired token."}}`))
			return
		}
		if r.URL.Query().Get("api-version") == "" {
			http.Error(w, `{"error":{"code":"404","message":"api-version missing"}}`, http.StatusNotFound)
			return
		}
		f.mu.Lock()
		if !containsString(f.tokens, tok) {
			f.tokens = append(f.tokens, tok)
		}
		f.mu.Unlock()
		r.Header.Del("Authorization")
		r.URL.RawQuery = ""
		switch p := r.URL.Path; {
		case r.Method == http.MethodGet && p == "/openai/models":
			r.URL.Path = "/v1/models"
		case strings.HasPrefix(p, "/openai/deployments/") && strings.HasSuffix(p, "/chat/completions"):
			f.chat.Add(1)
			r.URL.Path = "/v1/chat/completions"
		case p == "/openai/responses":
			f.response.Add(1)
			r.URL.Path = "/v1/responses"
		default:
			http.Error(w, `{"error":{"code":"404","message":"no route"}}`, http.StatusNotFound)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func containsString(l []string, s string) bool {
	for _, x := range l {
		if x == s {
			return true
		}
	}
	return false
}

func (f *fakeAzure) seen() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.tokens...)
}

// azureRun trains the demo against the fake Azure endpoint, both roles
// signed in with mode, and checks that the run finished, that tokens were
// replaced mid-run, and that no token reached the output or the run dir.
func azureRun(t *testing.T, az *fakeAzure, mode string, env []string, extra ...string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "run")
	args := append([]string{"--workers", "2", "--set", "runtime.sim_llm=false", "--set", "model.backend=azure_openai",
		"--set", "model.azure_openai_endpoint=" + az.URL, "--set", "model.azure_openai_auth_mode=" + mode}, extra...)
	out, err := trainDemo(t, dir, env, args...)
	if err != nil {
		t.Fatalf("train: %v\n%s", err, out)
	}
	toks := az.seen()
	if len(toks) < 2 {
		t.Errorf("the endpoint saw tokens %v: want a second one fetched mid-run", toks)
	}
	if az.chat.Load()+az.response.Load() < 100 {
		t.Errorf("only %d model calls reached the endpoint", az.chat.Load()+az.response.Load())
	}
	for _, tok := range toks {
		if strings.Contains(out, tok) {
			t.Errorf("token %s appears in the command's output", tok)
		}
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, tok := range toks {
			if strings.Contains(string(b), tok) {
				t.Errorf("token %s appears in %s", tok, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d chat and %d responses calls, %d tokens, %d refused", mode, az.chat.Load(), az.response.Load(), len(toks), az.refused.Load())
}

func simLLM(t *testing.T) string {
	t.Helper()
	sim := start(t, "sim-llm", "--addr", "127.0.0.1:0")
	line := sim.line(t, "sim-llm", 20*time.Second)
	return strings.TrimSuffix(line[strings.Index(line, "http://"):], "/v1")
}

// TestAzureCLISignInRun: the demo trains against Azure signed in with the
// Azure CLI (a fake `az` on PATH issuing tokens that live 3 s), the target
// through the Responses API; tokens are replaced as they near expiry.
func TestAzureCLISignInRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	bin := t.TempDir()
	script := `#!/bin/sh
case "$*" in *"account get-access-token"*) ;; *) exit 2 ;; esac
printf '{"accessToken":"az-cli-token-%s-%s","expires_on":%s,"tokenType":"Bearer"}\n' $$ $(date +%s%N) $(( $(date +%s) + 3 ))
`
	if err := os.WriteFile(filepath.Join(bin, "az"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	az := newFakeAzure(t, simLLM(t), func(tok string) bool { return strings.HasPrefix(tok, "az-cli-token-") })
	azureRun(t, az, "azure_cli", []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH")},
		"--set", "model.target_options.api=responses")
	if az.response.Load() == 0 || az.chat.Load() == 0 {
		t.Errorf("responses calls %d, chat calls %d: want the target on the Responses API and the optimizer on Chat Completions", az.response.Load(), az.chat.Load())
	}
}

// TestManagedIdentitySignInRun: the demo trains against Azure signed in
// with a managed identity, whose token endpoint (App Service's protocol,
// IDENTITY_ENDPOINT and IDENTITY_HEADER) is a fake on loopback issuing
// tokens that live 3 s.
func TestManagedIdentitySignInRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	var issued atomic.Int64
	idp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-IDENTITY-HEADER") != "e2e-identity-header" || r.URL.Query().Get("resource") != "https://cognitiveservices.azure.com" {
			http.Error(w, `{"error":"unauthorized"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"mi-token-%d","expires_on":"%d","resource":"https://cognitiveservices.azure.com","token_type":"Bearer"}`,
			issued.Add(1), time.Now().Add(3*time.Second).Unix())
	}))
	defer idp.Close()
	az := newFakeAzure(t, simLLM(t), func(tok string) bool { return strings.HasPrefix(tok, "mi-token-") })
	azureRun(t, az, "managed_identity", []string{"IDENTITY_ENDPOINT=" + idp.URL + "/msi/token", "IDENTITY_HEADER=e2e-identity-header"})
	if issued.Load() < 2 {
		t.Errorf("the identity endpoint issued %d tokens, want a refresh mid-run", issued.Load())
	}
}

// TestPreflightMissingKey: a run whose model key is not set stops before
// any model call, exit 2, naming the variable.
func TestPreflightMissingKey(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Header.Get("Authorization") != "Bearer right-key" {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"object":"list","data":[]}`))
	}))
	defer srv.Close()
	dir := filepath.Join(t.TempDir(), "run")
	out, err := trainDemo(t, dir, []string{"SF_UNSET_KEY=", "SF_WRONG_KEY=wrong-key-0123"}, "--set", "runtime.sim_llm=false",
		"--set", "model.optimizer_base_url="+srv.URL+"/v1", "--set", "model.optimizer_api_key_env=SF_WRONG_KEY",
		"--set", "model.target_backend=openai", "--set", "model.target_api_key_env=SF_UNSET_KEY")
	var ee *exec.ExitError
	if err == nil || !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("train = %v, want exit 2\n%s", err, out)
	}
	for _, want := range []string{"target (openai/sim-target): SF_UNSET_KEY is not set", "optimizer (openai/sim-optimizer):", "refused the key in SF_WRONG_KEY (HTTP 401"} {
		if !strings.Contains(out, want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
	if calls.Load() != 1 || strings.Contains(out, "wrong-key-0123") {
		t.Errorf("server saw %d requests (want the one check), or the key leaked:\n%s", calls.Load(), out)
	}
}
