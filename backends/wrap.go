package backends

import (
	"fmt"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// Option adds a resilience layer to [Wrap].
type Option func(*layers)

type layers struct {
	retry   *RetryPolicy
	circuit *CircuitPolicy
	limiter *Limiter
	key     LimitKey
	limits  Limits
}

// WithRetry adds a [Retry] layer.
func WithRetry(p RetryPolicy) Option { return func(l *layers) { l.retry = &p } }

// WithCircuit adds a [Circuit] layer.
func WithCircuit(p CircuitPolicy) Option { return func(l *layers) { l.circuit = &p } }

// WithLimiter adds a [Limited] layer drawing from lim under key.
func WithLimiter(lim *Limiter, key LimitKey, limits Limits) Option {
	return func(l *layers) { l.limiter, l.key, l.limits = lim, key, limits }
}

// Wrap composes the layers the options ask for around m, always in the one
// order that works, whatever the order of the options:
//
//	Retry → Circuit → Limited → m
//
// Retry is outermost, so every attempt passes the circuit and the limiter
// again; an open circuit fails fast without spending rate budget; the
// limiter sees every attempt's answer, so each 429 halves its concurrency.
func Wrap(m llm.Model, opts ...Option) llm.Model {
	var l layers
	for _, o := range opts {
		o(&l)
	}
	if l.limiter != nil {
		m = NewLimited(m, l.limiter, l.key, l.limits)
	}
	if l.circuit != nil {
		m = NewCircuit(m, *l.circuit)
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
