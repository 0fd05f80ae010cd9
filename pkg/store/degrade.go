package store

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// warnInterval is how often a degraded wrapper repeats its warning while
// the shared store stays unreachable.
const warnInterval = 30 * time.Second

// DegradingCache wraps a shared [Cache] so that a store failure reads as a
// miss and a failed Put is dropped, each with a (throttled) warning: a run
// goes on, paying for the calls the cache would have saved. Errors caused
// by the caller's own context ending are returned unchanged.
type DegradingCache struct {
	c     Cache
	log   *slog.Logger
	fails atomic.Int64
	warn  throttle
}

// Degrading wraps c; logger may be nil.
func Degrading(c Cache, logger *slog.Logger) *DegradingCache {
	return &DegradingCache{c: c, log: orDiscard(logger), warn: throttle{every: warnInterval}}
}

// Get returns c's value, or a miss when c fails.
func (d *DegradingCache) Get(ctx context.Context, key string) ([]byte, bool, error) {
	v, ok, err := d.c.Get(ctx, key)
	if err == nil {
		return v, ok, nil
	}
	if ctx.Err() != nil {
		return nil, false, err
	}
	d.failed(ctx, "get", err)
	return nil, false, nil
}

// Put stores the value in c, or drops it when c fails.
func (d *DegradingCache) Put(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	err := d.c.Put(ctx, key, value, ttl)
	if err == nil {
		return nil
	}
	if ctx.Err() != nil {
		return err
	}
	d.failed(ctx, "put", err)
	return nil
}

func (d *DegradingCache) failed(ctx context.Context, op string, err error) {
	d.fails.Add(1)
	if ok, skipped := d.warn.allow(time.Now()); ok {
		d.log.WarnContext(ctx, "shared cache unreachable, treating as miss", "op", op, "suppressed", skipped, "err", err)
	}
}

// Stats returns the wrapped cache's stats if it keeps any, with Errors
// counting the failures this wrapper absorbed.
func (d *DegradingCache) Stats() CacheStats {
	var s CacheStats
	if sc, ok := d.c.(interface{ Stats() CacheStats }); ok {
		s = sc.Stats()
	}
	s.Errors = max(s.Errors, d.fails.Load())
	return s
}

var _ Cache = (*DegradingCache)(nil)

// FallbackLimiter takes from a shared [Limiter] and, while that fails,
// from a local one with the limit divided among the processes that share
// it, so a fleet keeps roughly within its provider limits while Redis is
// down. It warns (throttled) while it falls back.
type FallbackLimiter struct {
	shared, local Limiter
	share         func() int64
	log           *slog.Logger
	warn          throttle
}

// NewFallbackLimiter returns a limiter over shared with local as the
// fallback. share reports how many processes split the limit (the live
// workers, say); nil or a result below 1 means 1. logger may be nil.
func NewFallbackLimiter(shared, local Limiter, share func() int64, logger *slog.Logger) *FallbackLimiter {
	return &FallbackLimiter{shared: shared, local: local, share: share, log: orDiscard(logger), warn: throttle{every: warnInterval}}
}

// Take asks the shared limiter, or the local one when the shared one fails.
func (f *FallbackLimiter) Take(ctx context.Context, key string, n, ratePerMin, burst int64) (time.Duration, error) {
	w, err := f.shared.Take(ctx, key, n, ratePerMin, burst)
	if err == nil || errors.Is(err, ErrExceedsBurst) || ctx.Err() != nil {
		return w, err
	}
	parts := int64(1)
	if f.share != nil {
		parts = max(1, f.share())
	}
	if burst <= 0 {
		burst = ratePerMin
	}
	localRate := max(1, ratePerMin/parts)
	localBurst := max(n, burst/parts)
	if ok, skipped := f.warn.allow(time.Now()); ok {
		f.log.WarnContext(ctx, "shared limiter unreachable, using a local share of the limit",
			"key", key, "rate_per_min", localRate, "burst", localBurst, "suppressed", skipped, "err", err)
	}
	return f.local.Take(ctx, key, n, localRate, localBurst)
}

var _ Limiter = (*FallbackLimiter)(nil)

// throttle lets one event through per interval and counts the rest.
type throttle struct {
	every time.Duration

	mu         sync.Mutex
	last       time.Time
	suppressed int64
}

func (t *throttle) allow(now time.Time) (ok bool, suppressed int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !t.last.IsZero() && now.Sub(t.last) < t.every {
		t.suppressed++
		return false, 0
	}
	t.last, suppressed, t.suppressed = now, t.suppressed, 0
	return true, suppressed
}

func orDiscard(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.New(slog.DiscardHandler)
	}
	return l
}
