package backends

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// Option adds a resilience layer to [Wrap].
type Option func(*layers)

type layers struct {
	retry    *RetryPolicy
	deadline *DeadlinePolicy
	hedge    *HedgePolicy
	circuit  *CircuitPolicy
	limiter  *Limiter
	key      LimitKey
	limits   Limits
}

// WithRetry adds a [Retry] layer.
func WithRetry(p RetryPolicy) Option { return func(l *layers) { l.retry = &p } }

// WithDeadline adds a [Deadline] layer (the stall deadline of each attempt).
func WithDeadline(p DeadlinePolicy) Option { return func(l *layers) { l.deadline = &p } }

// WithHedge adds a [Hedge] layer; it needs the latencies a [Deadline]
// layer records, so Wrap adds one (with the adaptive deadline off) when
// WithDeadline is not given.
func WithHedge(p HedgePolicy) Option { return func(l *layers) { l.hedge = &p } }

// WithCircuit adds a [Circuit] layer.
func WithCircuit(p CircuitPolicy) Option { return func(l *layers) { l.circuit = &p } }

// WithLimiter adds a [Limited] layer drawing from lim under key.
func WithLimiter(lim *Limiter, key LimitKey, limits Limits) Option {
	return func(l *layers) { l.limiter, l.key, l.limits = lim, key, limits }
}

// Wrap composes the layers the options ask for around m, always in the one
// order that works, whatever the order of the options:
//
//	Retry → Hedge → Circuit → Limited → Deadline → m
//
// Retry is outermost, so every attempt passes the circuit and the limiter
// again; an open circuit fails fast without spending rate budget; the
// limiter sees every attempt's answer, so each 429 halves its concurrency.
// A hedged second attempt passes the circuit and the limiter like any
// other. Deadline is innermost: it times the call itself, not the wait
// for a rate-limit slot.
func Wrap(m llm.Model, opts ...Option) llm.Model {
	var l layers
	for _, o := range opts {
		o(&l)
	}
	var lat *Latencies
	if l.deadline != nil || l.hedge != nil {
		p := DeadlinePolicy{Off: true}
		if l.deadline != nil {
			p = *l.deadline
		}
		d := NewDeadline(m, p, nil)
		lat, m = d.Latencies(), d
	}
	if l.limiter != nil {
		m = NewLimited(m, l.limiter, l.key, l.limits)
	}
	if l.circuit != nil {
		m = NewCircuit(m, *l.circuit)
	}
	if l.hedge != nil {
		m = NewHedge(m, *l.hedge, lat)
	}
	if l.retry != nil {
		m = NewRetry(m, *l.retry)
	}
	return m
}

// String describes the layers.
func (r *Retry) String() string {
	return fmt.Sprintf("retry(%d, %s)", r.p.MaxRetries, describe(r.model))
}

// String describes the layer.
func (c *Circuit) String() string { return "circuit(" + describe(c.model) + ")" }

// String describes the layer.
func (m *Limited) String() string {
	return "limited(" + m.key.String() + ", " + describe(m.model) + ")"
}

func describe(m llm.Model) string {
	if s, ok := m.(fmt.Stringer); ok {
		return s.String()
	}
	return fmt.Sprintf("%T", m)
}

// Secrets lists the credentials a model was built with (its API key, an
// agent's environment values), for redaction by whoever records what the
// model said. Models built by [New] implement it.
type Secrets interface {
	Secrets() []string
}

// redactReplies removes the model's credentials from its replies: a model
// or an agent that prints its key does not carry it into a trajectory, a
// journal entry or an optimizer's prompt. Errors are redacted where they
// are made (each backend's httpx.Redactor).
type redactReplies struct {
	next    llm.Model
	secrets []string
	red     *strings.Replacer
}

// withRedaction wraps m so that its replies never hold one of secrets
// (empty and short values are ignored, as they would blank ordinary
// words); with none left it returns m unwrapped.
func withRedaction(m llm.Model, secrets []string) llm.Model {
	var kept, pairs []string
	for _, s := range secrets {
		if len(strings.TrimSpace(s)) < minSecret || slices.Contains(kept, s) {
			continue
		}
		kept = append(kept, s)
	}
	if len(kept) == 0 {
		return m
	}
	// Longer secrets first, so that one holding another is replaced whole.
	slices.SortFunc(kept, func(a, b string) int { return len(b) - len(a) })
	for _, s := range kept {
		pairs = append(pairs, s, Redacted)
	}
	return &redactReplies{next: m, secrets: kept, red: strings.NewReplacer(pairs...)}
}

// minSecret is the shortest value treated as a secret.
const minSecret = 6

// Redacted replaces a credential in a reply.
const Redacted = "[REDACTED]"

func (r *redactReplies) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	resp, err := r.next.Chat(ctx, req)
	if resp == nil {
		return resp, err
	}
	out := *resp
	out.Content = r.red.Replace(out.Content)
	if len(out.ToolCalls) > 0 {
		out.ToolCalls = slices.Clone(out.ToolCalls)
		for i := range out.ToolCalls {
			out.ToolCalls[i].Arguments = r.red.Replace(out.ToolCalls[i].Arguments)
		}
	}
	return &out, err
}

// Secrets implements [Secrets].
func (r *redactReplies) Secrets() []string { return slices.Clone(r.secrets) }

func (r *redactReplies) String() string { return describe(r.next) }
