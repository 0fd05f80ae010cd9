package backends

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// ErrCircuitOpen is the cause of a call refused by an open [Circuit].
var ErrCircuitOpen = errors.New("circuit open")

// CircuitPolicy configures [Circuit]. Zero fields take the defaults noted.
type CircuitPolicy struct {
	// Threshold is how many consecutive infrastructure failures (server,
	// transport, timeout) open the circuit (default 10: with many calls in
	// flight, a short blip can fail several in a row).
	Threshold int
	// Cooldown is how long an open circuit refuses calls before it lets
	// one probe through (default 20s).
	Cooldown time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
}

func (p CircuitPolicy) withDefaults() CircuitPolicy {
	p.Threshold = cmpOr(p.Threshold, 10)
	p.Cooldown = cmpOr(p.Cooldown, 20*time.Second)
	if p.Now == nil {
		p.Now = time.Now
	}
	return p
}

// CircuitState is the state of a [Circuit].
type CircuitState int

// Circuit states.
const (
	CircuitClosed CircuitState = iota
	CircuitOpen
	CircuitHalfOpen
)

func (s CircuitState) String() string {
	switch s {
	case CircuitClosed:
		return "closed"
	case CircuitOpen:
		return "open"
	case CircuitHalfOpen:
		return "half_open"
	}
	return fmt.Sprintf("state(%d)", int(s))
}

// Circuit turns a persistent outage into fast typed failures: after
// Threshold consecutive infrastructure failures it opens and refuses calls
// at once for Cooldown, with an *llm.Error of KindServer whose Err is
// [ErrCircuitOpen] and whose RetryAfter is the cool-down left (so [Retry]
// stops and the worker re-queues the task for later); then it lets one
// probe call through (half-open) and closes on its success or reopens on
// its failure. Rate limits, auth, invalid requests and replies, and
// cancellations are not infrastructure failures: they say the server is
// up. It is safe for concurrent use.
type Circuit struct {
	model llm.Model
	p     CircuitPolicy

	mu       sync.Mutex
	state    CircuitState
	failures int
	openedAt time.Time
	probing  bool
	last     string
}

var _ llm.Model = (*Circuit)(nil)

// NewCircuit wraps m.
func NewCircuit(m llm.Model, p CircuitPolicy) *Circuit {
	return &Circuit{model: m, p: p.withDefaults()}
}

// State reports the circuit's state now (an open circuit past its
// cool-down reports half-open).
func (c *Circuit) State() CircuitState {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == CircuitOpen && c.p.Now().Sub(c.openedAt) >= c.p.Cooldown {
		return CircuitHalfOpen
	}
	return c.state
}

// Chat implements llm.Model.
func (c *Circuit) Chat(ctx context.Context, req *llm.Request) (resp *llm.Response, err error) {
	probe, err := c.admit()
	if err != nil {
		return nil, err
	}
	defer func() { c.record(err, probe) }()
	return c.model.Chat(ctx, req)
}

func (c *Circuit) admit() (probe bool, err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.state == CircuitClosed {
		return false, nil
	}
	now := c.p.Now()
	left := c.p.Cooldown - now.Sub(c.openedAt)
	if left <= 0 {
		c.state = CircuitHalfOpen
		if !c.probing {
			c.probing = true
			return true, nil
		}
		left = min(c.p.Cooldown, time.Second) // a probe is out: ask again soon
	}
	return false, &llm.Error{Kind: llm.KindServer, RetryAfter: left, Err: ErrCircuitOpen,
		Msg: fmt.Sprintf("%d consecutive failures, last: %s", c.failures, c.last)}
}

func (c *Circuit) record(err error, probe bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if probe {
		c.probing = false
	}
	switch kind := llm.KindOf(err); {
	case err == nil || (kind != llm.KindCancelled && !infraFailure(kind)):
		c.state, c.failures, c.last = CircuitClosed, 0, ""
	case kind == llm.KindCancelled:
		// says nothing about the server
	default:
		c.failures++
		c.last = err.Error()
		if probe || (c.state == CircuitClosed && c.failures >= c.p.Threshold) {
			c.state, c.openedAt = CircuitOpen, c.p.Now()
		}
	}
}

func infraFailure(k llm.ErrorKind) bool {
	return k == llm.KindServer || k == llm.KindTransport || k == llm.KindTimeout
}
