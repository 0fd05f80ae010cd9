package backends

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/skillfleet/skillfleet/backends/anthropic"
	"github.com/skillfleet/skillfleet/backends/azure"
	"github.com/skillfleet/skillfleet/backends/exec"
	"github.com/skillfleet/skillfleet/backends/internal/httpx"
	"github.com/skillfleet/skillfleet/backends/openai"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// RoleSpec is a model a run will call and the role (or roles, or
// campaign cells) it plays, for [Preflight] to name in what it reports.
type RoleSpec struct {
	// Role names the model's use: "target", "optimizer", "cell 3 target".
	Role string
	Spec Spec
}

// DefaultPreflightTimeout bounds one model's check.
const DefaultPreflightTimeout = 20 * time.Second

// AgentPreflightTimeout bounds the check of an agent CLI (its --version):
// a little over the probe's own bound, so that a slow start on a busy host
// is waited for and, past that, reported by the probe as a slow start.
const AgentPreflightTimeout = exec.VersionTimeout + 10*time.Second

// PreflightProblem is one model whose credentials cannot work.
type PreflightProblem struct {
	// Roles are the roles the model plays.
	Roles []string
	Spec  Spec
	// Fix says what is wrong and what to set or run; it never holds a key
	// or token.
	Fix string
}

// PreflightError lists every model whose credentials failed the check.
type PreflightError struct{ Problems []PreflightProblem }

func (e *PreflightError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "preflight: %d model(s) cannot be called with the credentials this process has (nothing was run):", len(e.Problems))
	for _, p := range e.Problems {
		fmt.Fprintf(&b, "\n  %s (%s): %s", strings.Join(p.Roles, ", "), p.Spec, p.Fix)
	}
	return b.String()
}

// Preflight checks, before a run's first model call, that each distinct
// model of roles can be called with the credentials of this process: the
// key variable is set (or the Azure sign-in yields a token), and one cheap
// authenticated request (GET /models) is accepted where the provider has
// one. Each distinct (backend, endpoint, credentials) is checked once,
// concurrently. The simulated model is not checked; an agent CLI (its own
// sign-in) only for its binary answering --version. A problem names the variable to set or the sign-in to
// fix; the error is a *[PreflightError] listing every one.
//
// A server that is busy (429, 5xx) or has no model list passes: only a
// missing or refused credential, an unreachable server or a bad setting
// fails.
func Preflight(ctx context.Context, roles []RoleSpec, deps Deps) error {
	getenv := deps.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	type group struct {
		spec  Spec
		roles []string
		fix   string
	}
	var groups []*group
	byKey := map[string]*group{}
	for _, r := range roles {
		k := preflightKey(r.Spec)
		g, ok := byKey[k]
		if !ok {
			g = &group{spec: r.Spec}
			byKey[k] = g
			groups = append(groups, g)
		}
		if !slices.Contains(g.roles, r.Role) {
			g.roles = append(g.roles, r.Role)
		}
	}
	var wg sync.WaitGroup
	for _, g := range groups {
		wg.Go(func() {
			limit := DefaultPreflightTimeout
			if g.spec.Backend == BackendExec {
				limit = AgentPreflightTimeout
			}
			ctx, cancel := context.WithTimeout(ctx, limit)
			defer cancel()
			g.fix = checkOne(ctx, g.spec, deps, getenv)
		})
	}
	wg.Wait()
	var e PreflightError
	for _, g := range groups {
		if g.fix != "" {
			e.Problems = append(e.Problems, PreflightProblem{Roles: g.roles, Spec: g.spec, Fix: g.fix})
		}
	}
	if len(e.Problems) > 0 {
		return &e
	}
	return nil
}

// preflightKey identifies what a check depends on.
func preflightKey(s Spec) string {
	parts := []string{s.Backend, s.Model, s.BaseURL, s.APIKeyEnv}
	for _, k := range []string{"auth_mode", "api_version", "deployment", "ad_scope", "client_id", "tenant_id", "token_env", "api"} {
		parts = append(parts, k+"="+s.Options[k])
	}
	return strings.Join(parts, "\x00")
}

// checker is a backend that can prove its credentials with one request.
type checker interface {
	Check(ctx context.Context) error
}

// checkOne returns what is wrong with one model's credentials, or "".
func checkOne(ctx context.Context, spec Spec, deps Deps, getenv func(string) string) string {
	if _, ok := deps.Extra[spec.Backend]; ok {
		return ""
	}
	o := newOptions(spec)
	switch spec.Backend {
	case BackendOpenAI, BackendOpenAICompatible:
		keyVar := cmpOr(spec.APIKeyEnv, DefaultOpenAIKeyEnv)
		base := cmpOr(spec.BaseURL, getenv(DefaultOpenAIBaseURLEnv))
		if getenv(keyVar) == "" && (base == "" || strings.HasPrefix(base, openai.DefaultBaseURL)) {
			return fmt.Sprintf("%s is not set: export the API key (or name another variable with model.<role>_api_key_env)", keyVar)
		}
		return checkModel(ctx, spec, deps, getenv, o, "the key in "+keyVar)
	case BackendAzure:
		if spec.BaseURL == "" {
			return "no endpoint: set model.azure_openai_endpoint or AZURE_OPENAI_ENDPOINT"
		}
		mode, err := azureMode(spec, getenv, o)
		if err != nil {
			return err.Error()
		}
		keyVar := cmpOr(spec.APIKeyEnv, DefaultAzureKeyEnv)
		var what string
		switch mode {
		case azure.ModeAPIKey:
			if getenv(keyVar) == "" {
				return fmt.Sprintf("%s is not set (sign-in mode api_key): export the key, or sign in with `az login` and set model.azure_openai_auth_mode: azure_cli", keyVar)
			}
			what = "the key in " + keyVar
		case azure.ModeToken:
			v := o.str("token_env", DefaultAzureTokenEnv)
			if getenv(v) == "" {
				return fmt.Sprintf("%s is not set (sign-in mode token): export a bearer token, or use azure_openai_auth_mode azure_cli or managed_identity", v)
			}
			what = "the token in " + v
		case azure.ModeOpenAICompatible:
			what = "the key in " + keyVar
		default:
			what = "the " + mode + " sign-in's token"
		}
		return checkModel(ctx, spec, deps, getenv, o, what)
	case BackendAnthropic:
		keyVar := cmpOr(spec.APIKeyEnv, DefaultAnthropicKeyEnv)
		key := getenv(keyVar)
		if key == "" && spec.BaseURL == "" {
			return fmt.Sprintf("%s is not set: export the API key (or name another variable with model.<role>_api_key_env)", keyVar)
		}
		return checkAnthropic(ctx, spec, deps, key, o.str("anthropic_version", anthropic.DefaultVersion), keyVar)
	case BackendExec:
		// The agent signs in by itself; what can be checked is that its
		// binary is there and answers --version.
		if _, _, err := buildExec(ctx, spec, deps, getenv, o); err != nil {
			return err.Error()
		}
	}
	return ""
}

// checkModel builds the model as a worker would and makes its check
// request.
func checkModel(ctx context.Context, spec Spec, deps Deps, getenv func(string) string, o *options, what string) string {
	m, endpoint, err := build(ctx, spec, deps, getenv, o)
	if err == nil {
		err = o.err()
	}
	if err != nil {
		return err.Error()
	}
	c, ok := m.(checker)
	if !ok {
		return ""
	}
	return checkVerdict(c.Check(ctx), endpoint, what)
}

// checkVerdict words a check's failure, or "" when it passed.
func checkVerdict(err error, endpoint, what string) string {
	var le *llm.Error
	switch {
	case err == nil, errors.Is(err, openai.ErrNoCheck):
		return ""
	case errors.As(err, &le) && le.Kind == llm.KindAuth && strings.HasPrefix(le.Msg, "sign-in: "):
		return strings.TrimPrefix(le.Msg, "sign-in: ")
	case errors.As(err, &le) && le.Kind == llm.KindAuth:
		return fmt.Sprintf("%s refused %s (HTTP %d: %s)", endpoint, what, le.Status, le.Msg)
	case errors.As(err, &le) && (le.Kind == llm.KindTransport || le.Kind == llm.KindTimeout):
		return fmt.Sprintf("cannot reach %s: %s", endpoint, le.Msg)
	case errors.As(err, &le) && le.Kind == llm.KindInvalidRequest && le.Status == 0:
		return le.Msg
	}
	// Busy or failing servers are for the run's retries to handle.
	return ""
}

// checkAnthropic lists the models (GET /v1/models) with the key.
func checkAnthropic(ctx context.Context, spec Spec, deps Deps, key, version, keyVar string) string {
	base := strings.TrimRight(cmpOr(spec.BaseURL, anthropic.DefaultBaseURL), "/")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/v1/models", nil)
	if err != nil {
		return err.Error()
	}
	req.Header.Set("anthropic-version", version)
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	hc := deps.HTTPClient
	if hc == nil {
		hc = http.DefaultClient
	}
	red := httpx.NewRedactor(key)
	resp, err := hc.Do(req)
	if err != nil {
		return checkVerdict(httpx.TransportError(ctx, err, red), httpx.SafeURLString(base), "")
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	switch {
	case resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusMethodNotAllowed:
		return ""
	case resp.StatusCode >= 400:
		return checkVerdict(httpx.StatusError(resp.StatusCode, 0, string(body), red), httpx.SafeURLString(base), "the key in "+keyVar)
	}
	return ""
}
