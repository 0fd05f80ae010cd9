package backends

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/backends/openai"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// Deps are optional collaborators of [New].
type Deps struct {
	// Getenv reads environment variables (default os.Getenv).
	Getenv func(string) string
	// Extra builds backends this package does not know (e.g. "sim"); an
	// entry here wins over a built-in of the same name.
	Extra map[string]func(Spec) (llm.Model, error)
	// Sleep waits between retries and for the limiter (default
	// SleepContext).
	Sleep func(ctx context.Context, d time.Duration) error
	// Limiter is shared by every model built with these Deps, so calls to
	// one (backend, endpoint, model) share its budgets (nil = a limiter per
	// model, made only when the spec sets limits).
	Limiter *Limiter
	// HTTPClient sends the HTTP backends' requests (default: a pooled
	// transport per model).
	HTTPClient *http.Client
	// Now is the circuit breaker's clock (default time.Now).
	Now func() time.Time
}

// ErrUnknownBackend is returned for a backend name nobody implements.
var ErrUnknownBackend = errors.New("unknown backend")

// New builds the model a spec names, wrapped as [Wrap] describes: retries
// (spec.MaxRetries, default 4), a circuit breaker (unless option
// circuit=off), a limiter (when rpm, tpm or max_concurrency is set), and
// the spec's request defaults. ctx bounds the work building does before
// the first call: the exec backend checks the agent CLI's version then.
func New(ctx context.Context, spec Spec, deps Deps) (llm.Model, error) {
	getenv := deps.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	o := newOptions(spec)
	base, endpoint, err := build(ctx, spec, deps, getenv, o)
	if err != nil {
		return nil, err
	}

	retries := spec.MaxRetries
	switch {
	case retries == 0:
		retries = DefaultMaxRetries
	case retries < 0:
		retries = 0
	}
	opts := []Option{WithRetry(RetryPolicy{
		MaxRetries: retries, Sleep: deps.Sleep,
		Base: o.duration("retry_base"), Cap: o.duration("retry_cap"), MaxRetryAfter: o.duration("max_retry_after"),
	})}
	if o.oneOf("circuit", "on", "on", "off") == "on" {
		opts = append(opts, WithCircuit(CircuitPolicy{
			Threshold: int(o.int("circuit_failures")), Cooldown: o.duration("circuit_cooldown"), Now: deps.Now,
		}))
	}
	lim := Limits{
		RequestsPerMin: o.int("rpm"), TokensPerMin: o.int("tpm"),
		MaxConcurrency: int(o.int("max_concurrency")), MinConcurrency: int(o.int("min_concurrency")),
		IncreaseEvery: int(o.int("aimd_increase_every")), DefaultOutputTokens: o.int("default_output_tokens"),
	}
	if lim.RequestsPerMin > 0 || lim.TokensPerMin > 0 || lim.MaxConcurrency > 0 {
		l := deps.Limiter
		if l == nil {
			l = NewLimiter(nil, deps.Sleep)
		}
		opts = append(opts, WithLimiter(l, LimitKey{Backend: spec.Backend, Endpoint: endpoint, Model: spec.Model}, lim))
	}
	opts = append(opts, WithDeadline(deadlinePolicy(o, spec.Timeout, spec.Backend == BackendExec)))
	if hp, ok := hedgePolicy(o); ok {
		opts = append(opts, WithHedge(hp))
	}
	// Option skill_files=tool: a skill package reaches the model as
	// SKILL.md plus a read_skill_file tool, not inlined (pkg/skillpkg).
	readTool := o.oneOf("skill_files", "inline", "inline", "tool") == "tool"
	if err := o.err(); err != nil {
		return nil, err
	}
	var m llm.Model = &defaults{next: Wrap(base, opts...), spec: spec}
	if readTool {
		m = skillpkg.WithReadTool(m)
	}
	return withRedaction(m, credentials(spec, getenv)), nil
}

// credentials are the key and token values a model of spec may hold: the
// spec's own key variable and every backend's default one.
func credentials(spec Spec, getenv func(string) string) []string {
	var out []string
	for _, name := range []string{spec.APIKeyEnv, DefaultOpenAIKeyEnv, DefaultAzureKeyEnv, DefaultAzureTokenEnv, DefaultAnthropicKeyEnv} {
		if name == "" {
			continue
		}
		if v := getenv(name); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// build makes the bare backend and names its endpoint (for limiter keys).
func build(ctx context.Context, spec Spec, deps Deps, getenv func(string) string, o *options) (llm.Model, string, error) {
	if f, ok := deps.Extra[spec.Backend]; ok {
		m, err := f(spec)
		if err != nil {
			return nil, "", fmt.Errorf("backend %s: %w", spec.Backend, err)
		}
		return m, spec.BaseURL, nil
	}
	b, ok := implementation(spec.Backend)
	if !ok {
		names := make([]string, 0, len(implementations)+len(deps.Extra))
		for _, i := range implementations {
			names = append(names, i.name)
		}
		for k := range deps.Extra {
			names = append(names, k)
		}
		slices.Sort(names)
		return nil, "", fmt.Errorf("%w %q (known: %s)", ErrUnknownBackend, spec.Backend, strings.Join(slices.Compact(names), ", "))
	}
	return b(ctx, spec, deps, getenv, o)
}

func listOr(o *options, key string) []string {
	l, _ := o.list(key)
	return l
}

// wirePolicy reads the OpenAI wire policy from the options.
func wirePolicy(o *options) openai.WirePolicy {
	w := openai.WirePolicy{
		MaxTokensField:             o.oneOf("max_tokens_field", "auto", "auto", openai.MaxTokensLegacy, openai.MaxTokensCompletion),
		SendTemperatureToReasoning: o.oneOf("temperature_for_reasoning", "omit", "omit", "send") == "send",
		OmitReasoningEffort:        o.oneOf("reasoning_effort_param", "send", "send", "omit") == "omit",
		OmitSeed:                   o.oneOf("seed_param", "send", "send", "omit") == "omit",
		ChatTemplateKwargs:         o.jsonObject("chat_template_kwargs"),
		ExtraBody:                  o.jsonObject("extra_body"),
		MaxTokensCap:               int(o.int("max_tokens_cap")),
	}
	if w.MaxTokensField == "auto" {
		w.MaxTokensField = openai.MaxTokensAuto
	}
	if p, ok := o.list("reasoning_models"); ok {
		if len(p) == 1 && p[0] == "none" {
			p = []string{}
		}
		w.ReasoningModelPrefixes = p
	}
	var thinking *bool
	switch o.oneOf("thinking_mode", "server_default", "server_default", "enabled", "disabled", "true", "false", "on", "off") {
	case "enabled", "true", "on":
		t := true
		thinking = &t
	case "disabled", "false", "off":
		f := false
		thinking = &f
	}
	if thinking != nil {
		if w.ChatTemplateKwargs == nil {
			w.ChatTemplateKwargs = map[string]any{}
		}
		w.ChatTemplateKwargs["enable_thinking"] = *thinking
	}
	return w
}
