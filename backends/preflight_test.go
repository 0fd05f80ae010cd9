package backends_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/backends"
)

// keyServer answers GET /v1/models (and Azure's /openai/models, and
// Anthropic's /v1/models) with 200 for the key good, 401 otherwise, or
// always with status when it is set; it counts the requests.
func keyServer(t *testing.T, good string, status int) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if status != 0 {
			w.WriteHeader(status)
			return
		}
		key := r.Header.Get("api-key") + r.Header.Get("x-api-key") + strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		if key != good {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"error":{"message":"Incorrect API key provided: ` + key + `"}}`))
			return
		}
		_, _ = w.Write([]byte(`{"object":"list","data":[]}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func preflightErr(t *testing.T, err error) *backends.PreflightError {
	t.Helper()
	var pe *backends.PreflightError
	if !errors.As(err, &pe) {
		t.Fatalf("Preflight() = %v, want a *PreflightError", err)
	}
	return pe
}

func TestPreflightNamesMissingVariables(t *testing.T) {
	t.Parallel()
	env := map[string]string{}
	err := backends.Preflight(t.Context(), []backends.RoleSpec{
		{Role: "target", Spec: backends.Spec{Backend: "openai", Model: "gpt-5.5"}},
		{Role: "optimizer", Spec: backends.Spec{Backend: "anthropic", Model: "claude-x", APIKeyEnv: "MY_CLAUDE_KEY"}},
		{Role: "rewriter", Spec: backends.Spec{Backend: "azure", Model: "dep", BaseURL: "http://127.0.0.1:1", Options: map[string]string{"auth_mode": "api_key"}}},
		{Role: "judge", Spec: backends.Spec{Backend: "azure", Model: "dep"}},
		{Role: "sim", Spec: backends.Spec{Backend: "sim", Model: "sim-target"}},
	}, backends.Deps{Getenv: func(k string) string { return env[k] }})
	pe := preflightErr(t, err)
	if len(pe.Problems) != 4 {
		t.Fatalf("problems = %+v, want 4 (sim is not checked)", pe.Problems)
	}
	msg := err.Error()
	for _, want := range []string{
		"target (openai/gpt-5.5): OPENAI_API_KEY is not set",
		"optimizer (anthropic/claude-x): MY_CLAUDE_KEY is not set",
		"rewriter (azure/dep): AZURE_OPENAI_API_KEY is not set (sign-in mode api_key)", "az login",
		"judge (azure/dep): no endpoint: set model.azure_openai_endpoint or AZURE_OPENAI_ENDPOINT",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q:\n%s", want, msg)
		}
	}
}

func TestPreflightMakesOneAuthenticatedRequestPerModel(t *testing.T) {
	t.Parallel()
	srv, n := keyServer(t, "good-key", 0)
	env := map[string]string{"GOOD": "good-key", "BAD": "bad-key-0123456789"}
	getenv := func(k string) string { return env[k] }
	ok := backends.Spec{Backend: "openai", Model: "m", BaseURL: srv.URL + "/v1", APIKeyEnv: "GOOD"}
	if err := backends.Preflight(t.Context(), []backends.RoleSpec{{Role: "target", Spec: ok}, {Role: "optimizer", Spec: ok}}, backends.Deps{Getenv: getenv}); err != nil {
		t.Fatalf("Preflight(good key) = %v", err)
	}
	if n.Load() != 1 {
		t.Errorf("server saw %d requests for one model in two roles, want 1", n.Load())
	}
	bad := ok
	bad.APIKeyEnv = "BAD"
	err := backends.Preflight(t.Context(), []backends.RoleSpec{{Role: "target", Spec: bad}, {Role: "optimizer", Spec: bad}}, backends.Deps{Getenv: getenv})
	pe := preflightErr(t, err)
	if len(pe.Problems) != 1 || strings.Join(pe.Problems[0].Roles, ",") != "target,optimizer" ||
		!strings.Contains(err.Error(), "refused the key in BAD (HTTP 401") {
		t.Errorf("Preflight(bad key) = %v", err)
	}
	if strings.Contains(err.Error(), "bad-key-0123456789") {
		t.Errorf("the error shows the key: %v", err)
	}
	// Azure and Anthropic check the same way.
	az := backends.Spec{Backend: "azure", Model: "dep", BaseURL: srv.URL, APIKeyEnv: "BAD", Options: map[string]string{"auth_mode": "api_key"}}
	an := backends.Spec{Backend: "anthropic", Model: "c", BaseURL: srv.URL, APIKeyEnv: "BAD"}
	err = backends.Preflight(t.Context(), []backends.RoleSpec{{Role: "target", Spec: az}, {Role: "optimizer", Spec: an}}, backends.Deps{Getenv: getenv})
	if pe = preflightErr(t, err); len(pe.Problems) != 2 {
		t.Errorf("Preflight(azure, anthropic with a bad key) = %v", err)
	}
	// A local server needs no key, and one that is busy passes: the
	// run's retries deal with it.
	busy, _ := keyServer(t, "", http.StatusServiceUnavailable)
	if err := backends.Preflight(t.Context(), []backends.RoleSpec{{Role: "target", Spec: backends.Spec{Backend: "openai", Model: "m", BaseURL: busy.URL}}}, backends.Deps{Getenv: getenv}); err != nil {
		t.Errorf("Preflight(busy server, no key) = %v", err)
	}
	// An unreachable server fails.
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	err = backends.Preflight(t.Context(), []backends.RoleSpec{{Role: "target", Spec: backends.Spec{Backend: "openai", Model: "m", BaseURL: gone.URL, APIKeyEnv: "GOOD"}}}, backends.Deps{Getenv: getenv})
	if err == nil || !strings.Contains(err.Error(), "cannot reach") {
		t.Errorf("Preflight(closed port) = %v", err)
	}
}

func TestPreflightAzureSignIn(t *testing.T) {
	dir := t.TempDir()
	script := "#!/bin/sh\necho \"ERROR: Please run 'az login' to setup account.\" >&2\nexit 1\n"
	if err := os.WriteFile(filepath.Join(dir, "az"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	srv, n := keyServer(t, "never", 0)
	err := backends.Preflight(t.Context(), []backends.RoleSpec{{Role: "target", Spec: backends.Spec{Backend: "azure", Model: "dep", BaseURL: srv.URL}}},
		backends.Deps{Getenv: func(string) string { return "" }})
	if err == nil || !strings.Contains(err.Error(), "azure_cli") || !strings.Contains(err.Error(), "az login") || n.Load() != 0 {
		t.Errorf("Preflight(az not signed in) = %v (%d requests)", err, n.Load())
	}

	fakeAzureCLI(t, 3600)
	api := newFakeAzureOpenAI(t, func(tok string) bool { return strings.HasPrefix(tok, "cli-token-") })
	if err := backends.Preflight(t.Context(), []backends.RoleSpec{{Role: "target", Spec: backends.Spec{Backend: "azure", Model: "dep", BaseURL: api.URL}}},
		backends.Deps{Getenv: func(string) string { return "" }}); err != nil || api.calls.Load() != 1 {
		t.Errorf("Preflight(az signed in) = %v after %d requests, want nil after 1", err, api.calls.Load())
	}
}

// An agent CLI target is checked for what can be checked without its
// sign-in: its binary is there and answers --version.
func TestPreflightFindsAMissingAgentBinary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-such-codex")
	present := filepath.Join(dir, "codex")
	if err := os.WriteFile(present, []byte("#!/bin/sh\necho 'codex-cli 0.169.0'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := func(bin string) backends.Spec {
		return backends.Spec{Backend: backends.BackendExec, Model: "gpt-5.5", Options: map[string]string{"agent": "codex", "sandbox": "none", "bin": bin}}
	}
	err := backends.Preflight(t.Context(), []backends.RoleSpec{{Role: "target", Spec: spec(missing)}}, backends.Deps{})
	pe := preflightErr(t, err)
	if len(pe.Problems) != 1 || !strings.Contains(err.Error(), missing) {
		t.Fatalf("missing agent binary: %v", err)
	}
	if err := backends.Preflight(t.Context(), []backends.RoleSpec{{Role: "target", Spec: spec(present)}}, backends.Deps{}); err != nil {
		t.Errorf("an agent binary that answers --version: %v", err)
	}
}

// An agent CLI that starts slowly (opencode's --version took 22 s on a
// loaded host, over DefaultPreflightTimeout) passes the check: an agent's
// --version is given AgentPreflightTimeout.
func TestPreflightWaitsForASlowAgentStart(t *testing.T) {
	t.Parallel()
	slow := filepath.Join(t.TempDir(), "opencode")
	wait := backends.DefaultPreflightTimeout + 2*time.Second
	if err := os.WriteFile(slow, []byte("#!/bin/sh\nsleep "+strconv.Itoa(int(wait.Seconds()))+"\necho 1.18.33\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	spec := backends.Spec{Backend: backends.BackendExec, Model: "sim-target", Options: map[string]string{"agent": "opencode", "sandbox": "none", "bin": slow}}
	start := time.Now()
	if err := backends.Preflight(t.Context(), []backends.RoleSpec{{Role: "target", Spec: spec}}, backends.Deps{}); err != nil {
		t.Fatalf("an agent whose --version answers after %s: %v", wait, err)
	}
	if took := time.Since(start); took < wait {
		t.Fatalf("the check took %s: the stand-in's --version was not waited for", took)
	}
}
