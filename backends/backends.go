// Package backends builds llm.Model implementations from a model spec and
// wraps them with the resilience every call needs: retries with jittered
// exponential back-off that honour Retry-After, and a per-call timeout.
//
// Implementations live in subpackages (openai, sim). A model spec never
// carries a secret: it names the environment variable that holds the key,
// and the key is read here, in the process that makes the call.
package backends

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"time"

	"github.com/skillfleet/skillfleet/backends/openai"
	"github.com/skillfleet/skillfleet/pkg/llm"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Spec says which model to call and how.
type Spec struct {
	// Backend: openai, azure, sim (or one registered in Deps.Extra).
	Backend         string
	Model           string
	BaseURL         string
	APIKeyEnv       string
	Temperature     *float64
	MaxTokens       int
	ReasoningEffort string
	Timeout         time.Duration
	MaxRetries      int
	Options         map[string]string
}

// SpecFromProto converts the wire spec.
func SpecFromProto(m *pb.ModelSpec) Spec {
	s := Spec{
		Backend: m.GetBackend(), Model: m.GetModel(), BaseURL: m.GetBaseUrl(), APIKeyEnv: m.GetApiKeyEnv(),
		MaxTokens: int(m.GetMaxTokens()), ReasoningEffort: m.GetReasoningEffort(),
		Timeout: time.Duration(m.GetTimeoutMs()) * time.Millisecond, MaxRetries: int(m.GetMaxRetries()), Options: m.GetOptions(),
	}
	if m.Temperature != nil {
		v := m.GetTemperature()
		s.Temperature = &v
	}
	return s
}

// Deps are optional collaborators of New.
type Deps struct {
	// Getenv reads environment variables (default os.Getenv).
	Getenv func(string) string
	// Extra builds backends this package does not know (e.g. "sim").
	Extra map[string]func(Spec) (llm.Model, error)
	// Sleep waits between retries (default: a timer honouring ctx).
	Sleep func(ctx context.Context, d time.Duration) error
}

// ErrUnknownBackend is returned for a backend name nobody implements.
var ErrUnknownBackend = errors.New("unknown backend")

// New builds the model a spec names, wrapped with retries.
func New(spec Spec, deps Deps) (llm.Model, error) {
	getenv := deps.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	key := ""
	if spec.APIKeyEnv != "" {
		key = getenv(spec.APIKeyEnv)
	}
	var m llm.Model
	switch spec.Backend {
	case "openai", "openai_compatible":
		m = openai.New(openai.Config{BaseURL: spec.BaseURL, APIKey: key, ThinkingKwargs: thinking(spec.Options)})
	case "azure":
		if spec.BaseURL == "" {
			return nil, fmt.Errorf("backend azure: no endpoint (set model.azure_openai_endpoint or AZURE_OPENAI_ENDPOINT)")
		}
		m = openai.New(openai.Config{BaseURL: spec.BaseURL, APIKey: key, Azure: true, APIVersion: spec.Options["api_version"]})
	default:
		f, ok := deps.Extra[spec.Backend]
		if !ok {
			return nil, fmt.Errorf("%w %q (known: openai, azure%s)", ErrUnknownBackend, spec.Backend, extraNames(deps.Extra))
		}
		var err error
		if m, err = f(spec); err != nil {
			return nil, fmt.Errorf("backend %s: %w", spec.Backend, err)
		}
	}
	retries := spec.MaxRetries
	if retries <= 0 {
		retries = 3
	}
	return &Retry{Model: m, MaxRetries: retries, Sleep: deps.Sleep}, nil
}

func extraNames(m map[string]func(Spec) (llm.Model, error)) string {
	s := ""
	for k := range m {
		s += ", " + k
	}
	return s
}

// thinking returns chat_template_kwargs when options ask for them.
func thinking(opts map[string]string) map[string]any {
	switch opts["thinking_mode"] {
	case "enabled", "true", "on":
		return map[string]any{"enable_thinking": true}
	case "disabled", "false", "off":
		return map[string]any{"enable_thinking": false}
	default:
		return nil // server default: send nothing
	}
}

// Retry retries retryable failures (rate limits, timeouts, 5xx, transport
// errors) with full-jitter exponential back-off, never sooner than a
// server's Retry-After. Non-retryable failures return at once.
type Retry struct {
	Model      llm.Model
	MaxRetries int
	// Base and Cap bound the back-off (defaults 500ms and 30s).
	Base, Cap time.Duration
	Sleep     func(ctx context.Context, d time.Duration) error
}

// Chat implements llm.Model.
func (r *Retry) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	base, capd := r.Base, r.Cap
	if base == 0 {
		base = 500 * time.Millisecond
	}
	if capd == 0 {
		capd = 30 * time.Second
	}
	sleep := r.Sleep
	if sleep == nil {
		sleep = sleepCtx
	}
	limited := 0
	var failed llm.Usage
	for attempt := 0; ; attempt++ {
		resp, err := r.Model.Chat(ctx, req)
		if err == nil {
			resp.Attempts = attempt + 1
			resp.RateLimited += limited
			resp.FailedUsage.Add(failed)
			return resp, nil
		}
		kind := llm.KindOf(err)
		if kind == llm.KindRateLimited {
			limited++
		}
		if !kind.Retryable() || attempt >= r.MaxRetries || ctx.Err() != nil {
			return nil, err
		}
		d := time.Duration(rand.Int64N(int64(min(capd, base<<min(attempt, 16))) + 1))
		var le *llm.Error
		if errors.As(err, &le) && le.RetryAfter > d {
			d = le.RetryAfter
		}
		if err := sleep(ctx, d); err != nil {
			return nil, err
		}
	}
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return &llm.Error{Kind: llm.KindCancelled, Err: ctx.Err()}
	}
}
