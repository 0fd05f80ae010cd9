package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"
)

// ErrNotLeader reports that a [Leader] does not hold its lease: it has not
// acquired it yet or it has stopped.
var ErrNotLeader = errors.New("not the leader")

// LeaderConfig configures a [Leader].
type LeaderConfig struct {
	// Run is the run id whose lease is kept. Required.
	Run string
	// Owner names this process in the lease and in messages other
	// coordinators print (host, pid, pod name). It must differ between
	// processes. Required.
	Owner string
	// TTL is how long the lease outlives its last renewal (default 15s):
	// the longest a successor waits after this process dies.
	TTL time.Duration
	// RenewEvery is the renewal period (default TTL/3), also the poll period
	// while waiting for another owner's lease and the timeout of each call
	// to the store.
	RenewEvery time.Duration
	// Wait makes Run wait for a lease another owner holds; without it Run
	// returns a *[LeaseHeldError] at once.
	Wait bool
	// Logger receives lease events (nil: none).
	Logger *slog.Logger
}

func (c LeaderConfig) withDefaults() LeaderConfig {
	c.TTL = cmp.Or(c.TTL, 15*time.Second)
	c.RenewEvery = cmp.Or(c.RenewEvery, c.TTL/3)
	return c
}

// Leader acquires a run's [Lease] and keeps it renewed, so that a
// coordinator decides only while it holds the lease. Create one with
// [NewLeader] and call [Leader.Run] in its own goroutine; the other methods
// are safe to call concurrently with it.
//
// While the store is unreachable the lease cannot be confirmed: [Leader.Held]
// turns false once the last successful renewal is older than the TTL, and
// true again when a renewal succeeds. If another owner has taken the lease
// meanwhile, the loss is final: [Leader.Lost] is closed and Run returns
// [ErrLeaseLost].
type Leader struct {
	lease    Lease
	cfg      LeaderConfig
	log      *slog.Logger
	acquired chan struct{}
	lost     chan struct{}
	warn     throttle

	mu         sync.Mutex
	started    bool
	token      int64
	validUntil time.Time // a renewal sent before this instant succeeded
	suspended  bool      // validUntil passed while the store was unreachable
	isLost     bool
	done       bool
	err        error         // what Run returned, once done
	changed    chan struct{} // closed and replaced on every state change
}

// NewLeader returns a Leader for cfg.Run over l.
func NewLeader(l Lease, cfg LeaderConfig) *Leader {
	return &Leader{
		lease:    l,
		cfg:      cfg.withDefaults(),
		log:      orDiscard(cfg.Logger),
		acquired: make(chan struct{}),
		lost:     make(chan struct{}),
		warn:     throttle{every: warnInterval},
		changed:  make(chan struct{}),
	}
}

// Run acquires the lease (waiting for it if [LeaderConfig.Wait] is set,
// else failing with a *[LeaseHeldError] when another owner holds it) and
// renews it until ctx ends, then releases it so a successor can start at
// once. It returns nil when ctx ends, and [ErrLeaseLost] (wrapped) when
// another owner took the lease. Call it once.
func (l *Leader) Run(ctx context.Context) error {
	l.mu.Lock()
	if l.started {
		l.mu.Unlock()
		return errors.New("leader: Run called twice")
	}
	l.started = true
	l.mu.Unlock()
	err := l.run(ctx)
	l.mu.Lock()
	l.done, l.err = true, err
	l.notifyLocked()
	l.mu.Unlock()
	return err
}

func (l *Leader) run(ctx context.Context) error {
	if l.cfg.Run == "" || l.cfg.Owner == "" {
		return errors.New("leader: run and owner are required")
	}
	if err := l.acquire(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	t := time.NewTicker(l.cfg.RenewEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			l.release(ctx)
			return nil
		case <-l.lost:
			return fmt.Errorf("run %q: %w", l.cfg.Run, ErrLeaseLost)
		case <-t.C:
		}
		if err := l.renew(ctx); errors.Is(err, ErrLeaseLost) {
			return err
		}
	}
}

func (l *Leader) acquire(ctx context.Context) error {
	var lastHolder string
	for {
		sent := time.Now()
		octx, cancel := context.WithTimeout(ctx, l.cfg.RenewEvery)
		tok, ok, err := l.lease.Acquire(octx, l.cfg.Run, l.cfg.Owner, l.cfg.TTL)
		cancel()
		switch {
		case err != nil:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if ok, skipped := l.warn.allow(time.Now()); ok {
				l.log.WarnContext(ctx, "lease store unreachable, retrying", "run_id", l.cfg.Run, "suppressed", skipped, "err", err)
			}
		case ok:
			l.mu.Lock()
			l.token, l.validUntil = tok, sent.Add(l.cfg.TTL)
			l.notifyLocked()
			l.mu.Unlock()
			close(l.acquired)
			l.log.InfoContext(ctx, "lease acquired", "run_id", l.cfg.Run, "owner", l.cfg.Owner, "token", tok)
			return nil
		default:
			octx, cancel := context.WithTimeout(ctx, l.cfg.RenewEvery)
			h, _, _ := l.lease.Holder(octx, l.cfg.Run)
			cancel()
			held := &LeaseHeldError{Run: l.cfg.Run, Holder: h}
			if !l.cfg.Wait {
				return held
			}
			if h.Owner != lastHolder {
				lastHolder = h.Owner
				l.log.WarnContext(ctx, "run is led by another coordinator, waiting for its lease",
					"run_id", l.cfg.Run, "holder", h.Owner, "token", h.Token, "remaining", h.Remaining)
			}
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(l.cfg.RenewEvery):
		}
	}
}

// renew extends the lease once; it returns ErrLeaseLost when the lease is
// gone for good and the store's error when it could not tell.
func (l *Leader) renew(ctx context.Context) error {
	l.mu.Lock()
	tok, lost := l.token, l.isLost
	l.mu.Unlock()
	if lost {
		return fmt.Errorf("run %q: %w", l.cfg.Run, ErrLeaseLost)
	}
	sent := time.Now()
	octx, cancel := context.WithTimeout(ctx, l.cfg.RenewEvery)
	ok, err := l.lease.Renew(octx, l.cfg.Run, l.cfg.Owner, tok, l.cfg.TTL)
	cancel()
	if err != nil {
		l.mu.Lock()
		first := !l.suspended && !time.Now().Before(l.validUntil)
		if first {
			l.suspended = true
			l.notifyLocked()
		}
		l.mu.Unlock()
		if first {
			l.log.ErrorContext(ctx, "lease not renewed within its ttl, decisions blocked until it is", "run_id", l.cfg.Run, "err", err)
		} else if ok, skipped := l.warn.allow(time.Now()); ok {
			l.log.WarnContext(ctx, "lease renewal failed, retrying", "run_id", l.cfg.Run, "suppressed", skipped, "err", err)
		}
		return err
	}
	if !ok {
		l.mu.Lock()
		if !l.isLost {
			l.isLost = true
			close(l.lost)
			l.notifyLocked()
		}
		l.mu.Unlock()
		l.log.ErrorContext(ctx, "lease lost to another coordinator, stopping decisions", "run_id", l.cfg.Run, "token", tok)
		return fmt.Errorf("run %q: %w", l.cfg.Run, ErrLeaseLost)
	}
	l.mu.Lock()
	if v := sent.Add(l.cfg.TTL); v.After(l.validUntil) {
		l.validUntil = v
	}
	resumed := l.suspended
	l.suspended = false
	l.notifyLocked()
	l.mu.Unlock()
	if resumed {
		l.log.InfoContext(ctx, "lease renewed again, decisions resume", "run_id", l.cfg.Run, "token", tok)
	}
	return nil
}

func (l *Leader) release(ctx context.Context) {
	l.mu.Lock()
	tok, lost := l.token, l.isLost
	l.validUntil = time.Time{}
	l.notifyLocked()
	l.mu.Unlock()
	if lost {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), l.cfg.RenewEvery)
	defer cancel()
	if err := l.lease.Release(rctx, l.cfg.Run, l.cfg.Owner, tok); err != nil {
		l.log.WarnContext(ctx, "lease not released, a successor waits for it to expire", "run_id", l.cfg.Run, "err", err)
	}
}

func (l *Leader) notifyLocked() {
	close(l.changed)
	l.changed = make(chan struct{})
}

func (l *Leader) heldLocked(now time.Time) bool {
	return l.token != 0 && !l.isLost && !l.done && now.Before(l.validUntil)
}

// Held reports whether this process holds the lease now: acquired, not
// lost, and renewed within the TTL. A coordinator decides only while Held.
func (l *Leader) Held() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.heldLocked(time.Now())
}

// Token returns the fencing token of the lease (0 before it is acquired).
func (l *Leader) Token() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.token
}

// Acquired is closed when the lease is first acquired.
func (l *Leader) Acquired() <-chan struct{} { return l.acquired }

// Lost is closed when another owner has taken the lease; this process must
// stop deciding for good.
func (l *Leader) Lost() <-chan struct{} { return l.lost }

// Wait blocks until the lease is held and returns nil, or returns why it
// never will be: [ErrLeaseLost], what Run returned (a *[LeaseHeldError],
// say), [ErrNotLeader] after Run stopped, or ctx's error.
func (l *Leader) Wait(ctx context.Context) error {
	for {
		l.mu.Lock()
		switch {
		case l.heldLocked(time.Now()):
			l.mu.Unlock()
			return nil
		case l.isLost:
			l.mu.Unlock()
			return fmt.Errorf("run %q: %w", l.cfg.Run, ErrLeaseLost)
		case l.done:
			err := l.err
			l.mu.Unlock()
			if err == nil {
				err = ErrNotLeader
			}
			return err
		}
		ch := l.changed
		l.mu.Unlock()
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-ch:
		}
	}
}

// Fence renews the lease now and returns nil if this process still holds
// it. Call it before recording a decision: [ErrLeaseLost] means stop for
// good, [ErrNotLeader] that the lease was never acquired or Run stopped,
// any other error that the store could not confirm the lease (block and
// retry).
func (l *Leader) Fence(ctx context.Context) error {
	l.mu.Lock()
	tok, done := l.token, l.done
	l.mu.Unlock()
	if tok == 0 || done {
		return ErrNotLeader
	}
	return l.renew(ctx)
}
