package backends

import (
	"fmt"

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
