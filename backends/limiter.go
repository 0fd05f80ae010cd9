package backends

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// LimitKey names the budget a call draws from: one per backend, endpoint
// and model, the unit providers rate-limit by.
type LimitKey struct {
	Backend  string
	Endpoint string
	Model    string
}

// String is the bucket key prefix: backend|endpoint|model.
func (k LimitKey) String() string { return k.Backend + "|" + k.Endpoint + "|" + k.Model }

// Limits are the budgets of one key. Zero fields are unlimited (or take
// the defaults noted).
type Limits struct {
	// RequestsPerMin and TokensPerMin are the provider's limits (0 = none).
	// A minute's worth may be spent at once (the bucket's burst).
	RequestsPerMin int64
	TokensPerMin   int64
	// MaxConcurrency caps calls in flight (0 = no cap, adaptive concurrency
	// off). The cap adapts (AIMD): it halves on every rate-limited or
	// overloaded answer, down to MinConcurrency (default 1), and grows by
	// one after IncreaseEvery successes in a row (default 10), up to
	// MaxConcurrency.
	MaxConcurrency int
	MinConcurrency int
	IncreaseEvery  int
	// DefaultOutputTokens is the output estimate for a request with no
	// MaxTokens (default 1024).
	DefaultOutputTokens int64
}

func (l Limits) withDefaults() Limits {
	l.MinConcurrency = max(cmpOr(l.MinConcurrency, 1), 1)
	if l.MaxConcurrency > 0 {
		l.MinConcurrency = min(l.MinConcurrency, l.MaxConcurrency)
	}
	l.IncreaseEvery = max(cmpOr(l.IncreaseEvery, 10), 1)
	l.DefaultOutputTokens = cmpOr(l.DefaultOutputTokens, 1024)
	return l
}

// Buckets is the token-bucket store a [Limiter] draws rate budgets from.
// Its method is pkg/store.Limiter's, so the Redis store shares limits
// across a fleet: Take asks for n tokens from bucket key, refilled at
// ratePerMin with room for burst, and returns 0 when granted or how long
// to wait before asking again (taking nothing).
type Buckets interface {
	Take(ctx context.Context, key string, n, ratePerMin, burst int64) (wait time.Duration, err error)
}

// ErrExceedsBurst reports a Take for more tokens than a bucket holds.
var ErrExceedsBurst = errors.New("request exceeds the bucket's burst")

// LocalBuckets is the in-process [Buckets], one golang.org/x/time/rate
// limiter per key. It is safe for concurrent use.
type LocalBuckets struct {
	now func() time.Time

	mu   sync.Mutex
	lims map[string]*rate.Limiter
}

// NewLocalBuckets returns empty buckets on clock now (nil = time.Now).
func NewLocalBuckets(now func() time.Time) *LocalBuckets {
	if now == nil {
		now = time.Now
	}
	return &LocalBuckets{now: now, lims: map[string]*rate.Limiter{}}
}

// Take implements [Buckets].
func (b *LocalBuckets) Take(_ context.Context, key string, n, ratePerMin, burst int64) (time.Duration, error) {
	if ratePerMin <= 0 || n <= 0 {
		return 0, nil
	}
	if burst <= 0 {
		burst = ratePerMin
	}
	if n > burst {
		return 0, fmt.Errorf("take %d from %s (burst %d): %w", n, key, burst, ErrExceedsBurst)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	lim := b.lims[key]
	every := rate.Limit(float64(ratePerMin) / 60)
	if lim == nil {
		lim = rate.NewLimiter(every, int(burst))
		b.lims[key] = lim
	} else if lim.Limit() != every || lim.Burst() != int(burst) {
		lim.SetLimitAt(now, every)
		lim.SetBurstAt(now, int(burst))
	}
	r := lim.ReserveN(now, int(n))
	if !r.OK() {
		return 0, fmt.Errorf("take %d from %s: %w", n, key, ErrExceedsBurst)
	}
	if d := r.DelayFrom(now); d > 0 {
		r.CancelAt(now)
		return d, nil
	}
	return 0, nil
}

// Limiter admits model calls within per-key budgets: requests and tokens
// per minute from [Buckets] (shared across processes when the buckets
// are), and an adaptive in-flight cap kept in this process. Token
// reservations use an estimate (input text plus the reply's max tokens);
// the difference from the reply's real usage is carried into the key's
// next reservation, so the budget converges on real spend. A Buckets error
// admits the call (the provider's own 429 stays the authority). It is safe
// for concurrent use.
type Limiter struct {
	buckets Buckets
	sleep   func(ctx context.Context, d time.Duration) error

	mu   sync.Mutex
	keys map[LimitKey]*keyState
}

// keyState is one key's in-process state, guarded by Limiter.mu.
type keyState struct {
	lim       Limits  // as last asked for (for Status)
	limit     float64 // current in-flight cap (AIMD)
	inflight  int
	successes int
	waiters   []*waiter
	carry     int64 // tokens owed (+) or credited (-) to the next reservation
}

type waiter struct {
	ch      chan struct{}
	granted bool
}

// NewLimiter returns a Limiter over buckets (nil = NewLocalBuckets(nil))
// that waits with sleep (nil = SleepContext).
func NewLimiter(buckets Buckets, sleep func(ctx context.Context, d time.Duration) error) *Limiter {
	if buckets == nil {
		buckets = NewLocalBuckets(nil)
	}
	if sleep == nil {
		sleep = SleepContext
	}
	return &Limiter{buckets: buckets, sleep: sleep, keys: map[LimitKey]*keyState{}}
}

// Permit is an admitted call. Call Done exactly once when it ends.
type Permit struct {
	l    *Limiter
	key  LimitKey
	lim  Limits
	est  int64
	slot bool
	mu   sync.Mutex
	done bool
}

// Acquire waits until a call estimated at est tokens may start under lim,
// or ctx ends (a KindCancelled or KindTimeout *llm.Error).
func (l *Limiter) Acquire(ctx context.Context, key LimitKey, lim Limits, est int64) (*Permit, error) {
	lim = lim.withDefaults()
	p := &Permit{l: l, key: key, lim: lim, est: est}
	l.mu.Lock()
	l.state(key, lim).lim = lim
	l.mu.Unlock()
	if lim.MaxConcurrency > 0 {
		if err := l.acquireSlot(ctx, key, lim); err != nil {
			return nil, err
		}
		p.slot = true
	}
	if err := l.take(ctx, key.String()+"|rpm", 1, lim.RequestsPerMin); err != nil {
		p.release()
		return nil, err
	}
	if lim.TokensPerMin > 0 {
		n := l.settle(key, est, lim.TokensPerMin)
		if err := l.take(ctx, key.String()+"|tpm", n, lim.TokensPerMin); err != nil {
			p.release()
			return nil, err
		}
	}
	return p, nil
}

// settle folds the key's carried correction into a reservation of est
// tokens and returns what to take now (within [0, burst]).
func (l *Limiter) settle(key LimitKey, est, burst int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	ks := l.state(key, Limits{})
	n := est + ks.carry
	switch {
	case n < 0:
		ks.carry, n = n, 0
	case n > burst:
		ks.carry, n = n-burst, burst
	default:
		ks.carry = 0
	}
	return n
}

func (l *Limiter) take(ctx context.Context, key string, n, perMin int64) error {
	if perMin <= 0 || n <= 0 {
		return nil
	}
	for {
		wait, err := l.buckets.Take(ctx, key, min(n, perMin), perMin, perMin)
		if err != nil {
			if ctx.Err() != nil {
				return ctxError(ctx, "waiting for the rate limiter")
			}
			return nil // fail open: the provider still enforces its limits
		}
		if wait <= 0 {
			return nil
		}
		if err := l.sleep(ctx, wait); err != nil {
			return ctxError(ctx, "waiting for the rate limiter")
		}
	}
}

// state returns key's state, creating it at lim's cap. Callers hold l.mu.
func (l *Limiter) state(key LimitKey, lim Limits) *keyState {
	ks := l.keys[key]
	if ks == nil {
		ks = &keyState{limit: float64(lim.MaxConcurrency)}
		l.keys[key] = ks
	}
	return ks
}

func (l *Limiter) acquireSlot(ctx context.Context, key LimitKey, lim Limits) error {
	l.mu.Lock()
	ks := l.state(key, lim)
	if ks.limit <= 0 {
		ks.limit = float64(lim.MaxConcurrency)
	}
	if ks.inflight < int(ks.limit) && len(ks.waiters) == 0 {
		ks.inflight++
		l.mu.Unlock()
		return nil
	}
	w := &waiter{ch: make(chan struct{})}
	ks.waiters = append(ks.waiters, w)
	l.mu.Unlock()
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
		l.mu.Lock()
		defer l.mu.Unlock()
		if w.granted { // granted as ctx ended: hand the slot on
			ks.inflight--
			l.wake(ks)
		} else {
			for i, x := range ks.waiters {
				if x == w {
					ks.waiters = append(ks.waiters[:i], ks.waiters[i+1:]...)
					break
				}
			}
		}
		return ctxError(ctx, "waiting for a concurrency slot")
	}
}

// wake grants slots to waiters in arrival order while the cap allows.
// Callers hold l.mu.
func (l *Limiter) wake(ks *keyState) {
	for len(ks.waiters) > 0 && ks.inflight < int(ks.limit) {
		w := ks.waiters[0]
		ks.waiters = ks.waiters[1:]
		w.granted = true
		ks.inflight++
		close(w.ch)
	}
}

// BucketLevels is implemented by [Buckets] that can tell how full a
// bucket is without taking from it.
type BucketLevels interface {
	// Level is the tokens bucket key holds now (a bucket not used yet is
	// full: burst).
	Level(key string, ratePerMin, burst int64) float64
}

// Level implements [BucketLevels].
func (b *LocalBuckets) Level(key string, ratePerMin, burst int64) float64 {
	if burst <= 0 {
		burst = ratePerMin
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	lim := b.lims[key]
	if lim == nil {
		return float64(burst)
	}
	return lim.TokensAt(b.now())
}

// KeyStatus is one key's limits and what is left of them now.
type KeyStatus struct {
	Key    LimitKey
	Limits Limits
	// RequestsLeft and TokensLeft are the rate buckets' levels, when
	// LevelsKnown (the buckets can tell: this process's, not Redis's).
	RequestsLeft, TokensLeft float64
	LevelsKnown              bool
	// Cap is the adaptive in-flight cap now (MaxConcurrency > 0), InFlight
	// the calls running, Waiting those waiting for a slot.
	Cap, InFlight, Waiting int
}

// Status lists the keys this limiter has admitted calls for, by key.
func (l *Limiter) Status() []KeyStatus {
	l.mu.Lock()
	out := make([]KeyStatus, 0, len(l.keys))
	for k, ks := range l.keys {
		out = append(out, KeyStatus{Key: k, Limits: ks.lim, Cap: int(ks.limit), InFlight: ks.inflight, Waiting: len(ks.waiters)})
	}
	l.mu.Unlock()
	lv, known := l.buckets.(BucketLevels)
	for i := range out {
		s := &out[i]
		if known {
			s.LevelsKnown = true
			if s.Limits.RequestsPerMin > 0 {
				s.RequestsLeft = lv.Level(s.Key.String()+"|rpm", s.Limits.RequestsPerMin, s.Limits.RequestsPerMin)
			}
			if s.Limits.TokensPerMin > 0 {
				s.TokensLeft = lv.Level(s.Key.String()+"|tpm", s.Limits.TokensPerMin, s.Limits.TokensPerMin)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key.String() < out[j].Key.String() })
	return out
}

// Concurrency reports key's current in-flight cap and calls in flight.
func (l *Limiter) Concurrency(key LimitKey) (limit, inflight int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if ks := l.keys[key]; ks != nil {
		return int(ks.limit), ks.inflight
	}
	return 0, 0
}

// Done ends the call: it frees the concurrency slot, adapts the cap
// (halved on a rate-limited or overloaded answer, grown after a run of
// successes) and records the difference between the estimate and the
// tokens the call really used.
func (p *Permit) Done(resp *llm.Response, err error) {
	used := p.est
	switch {
	case err == nil && resp != nil && resp.Usage.InputTokens+resp.Usage.OutputTokens > 0:
		used = resp.Usage.InputTokens + resp.Usage.OutputTokens // else unknown: keep the estimate
	case err != nil:
		if b := llm.BilledUsage(err); b != (llm.Usage{}) {
			used = b.InputTokens + b.OutputTokens
		} else if k := llm.KindOf(err); k == llm.KindRateLimited || k == llm.KindAuth || k == llm.KindInvalidRequest || k == llm.KindCancelled {
			used = 0 // refused before any generation
		}
	}
	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		return
	}
	p.done = true
	p.mu.Unlock()
	l := p.l
	l.mu.Lock()
	defer l.mu.Unlock()
	ks := l.state(p.key, p.lim)
	if p.lim.TokensPerMin > 0 {
		ks.carry += used - p.est
	}
	if !p.slot {
		return
	}
	ks.inflight--
	switch {
	case congested(err):
		ks.limit = max(float64(p.lim.MinConcurrency), float64(int(ks.limit)/2))
		ks.successes = 0
	case err == nil:
		ks.successes++
		if ks.successes >= p.lim.IncreaseEvery {
			ks.limit = min(float64(p.lim.MaxConcurrency), ks.limit+1)
			ks.successes = 0
		}
	}
	l.wake(ks)
}

// release frees a permit that never made a call.
func (p *Permit) release() {
	if !p.slot {
		return
	}
	p.slot = false
	l := p.l
	l.mu.Lock()
	defer l.mu.Unlock()
	ks := l.state(p.key, p.lim)
	ks.inflight--
	l.wake(ks)
}

// congested reports an answer that asks the caller to slow down: a rate
// limit, or an overloaded server (503, Anthropic's 529).
func congested(err error) bool {
	if err == nil {
		return false
	}
	var le *llm.Error
	if !errors.As(err, &le) {
		return false
	}
	return le.Kind == llm.KindRateLimited || le.Status == http.StatusServiceUnavailable || le.Status == 529
}

func ctxError(ctx context.Context, what string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &llm.Error{Kind: llm.KindTimeout, Msg: "deadline passed " + what, Err: context.DeadlineExceeded}
	}
	return &llm.Error{Kind: llm.KindCancelled, Msg: "cancelled " + what, Err: context.Canceled}
}

// EstimateTokens is the token estimate of a request's input: its text
// (llm.EstimateTokens), tool schemas, a few tokens per message, and a flat
// 1000 per image.
func EstimateTokens(req *llm.Request) int64 {
	var n int64
	for _, m := range req.Messages {
		n += 4 + llm.EstimateTokens(m.Text())
		for _, p := range m.Parts {
			if p.Type == "image" {
				n += 1000
			}
		}
		for _, tc := range m.ToolCalls {
			n += llm.EstimateTokens(tc.Name) + llm.EstimateTokens(tc.Arguments)
		}
	}
	for _, t := range req.Tools {
		n += llm.EstimateTokens(t.Name) + llm.EstimateTokens(t.Description) + llm.EstimateTokens(string(t.Parameters))
	}
	return n
}

// Limited is a model whose calls pass a [Limiter] under one key.
type Limited struct {
	model llm.Model
	l     *Limiter
	key   LimitKey
	lim   Limits
}

var _ llm.Model = (*Limited)(nil)

// NewLimited wraps m.
func NewLimited(m llm.Model, l *Limiter, key LimitKey, lim Limits) *Limited {
	return &Limited{model: m, l: l, key: key, lim: lim.withDefaults()}
}

// Chat implements llm.Model.
func (m *Limited) Chat(ctx context.Context, req *llm.Request) (resp *llm.Response, err error) {
	out := int64(req.MaxTokens)
	if out <= 0 {
		out = m.lim.DefaultOutputTokens
	}
	p, err := m.l.Acquire(ctx, m.key, m.lim, EstimateTokens(req)+out)
	if err != nil {
		return nil, err
	}
	defer func() { p.Done(resp, err) }()
	return m.model.Chat(ctx, req)
}
