package backends

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// RetryPolicy configures [Retry]. Zero fields take the defaults noted.
type RetryPolicy struct {
	// MaxRetries bounds the retries after the first attempt (0 = none;
	// New uses DefaultMaxRetries unless the spec says otherwise).
	MaxRetries int
	// Base and Cap bound the back-off: attempt n waits a uniformly random
	// time in [0, min(Cap, Base·2^(n-1))] (full jitter). Defaults 500ms, 30s.
	Base, Cap time.Duration
	// MaxRetryAfter is the longest Retry-After honoured in place: a server
	// asking for a longer wait ends the retries at once, so the caller can
	// reschedule the work instead of holding a worker slot (default 2m).
	MaxRetryAfter time.Duration
	// Sleep waits between attempts (default: a timer that ends early, with
	// an error, when ctx does). Tests pass a fake or run under synctest.
	Sleep func(ctx context.Context, d time.Duration) error
	// Jitter returns a uniformly random duration in [0, d] (default
	// math/rand/v2).
	Jitter func(d time.Duration) time.Duration
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	p.MaxRetries = max(p.MaxRetries, 0)
	p.Base = cmpOr(p.Base, 500*time.Millisecond)
	p.Cap = cmpOr(p.Cap, 30*time.Second)
	p.MaxRetryAfter = cmpOr(p.MaxRetryAfter, 2*time.Minute)
	if p.Sleep == nil {
		p.Sleep = SleepContext
	}
	if p.Jitter == nil {
		p.Jitter = func(d time.Duration) time.Duration { return time.Duration(rand.Int64N(int64(d) + 1)) }
	}
	return p
}

// Backoff returns the un-jittered ceiling of the wait before retry n
// (n >= 1): min(Cap, Base·2^(n-1)).
func (p RetryPolicy) Backoff(n int) time.Duration {
	p = p.withDefaults()
	if n < 1 {
		n = 1
	}
	d := p.Base
	for i := 1; i < n && d < p.Cap; i++ {
		d *= 2
	}
	return min(d, p.Cap)
}

// Retry retries retryable failures (rate limits, timeouts, 5xx, transport
// errors) with full-jitter exponential back-off, never sooner than a
// server's Retry-After. Non-retryable failures (auth, invalid request,
// invalid reply, cancellation) and fast failures of an open [Circuit]
// return at once. It is safe for concurrent use.
//
// A reply's Attempts, RateLimited and FailedUsage count every attempt. On
// final failure the error is a [*RetryError] that wraps the last attempt's
// typed error unchanged (llm.KindOf and errors.As see through it) and
// carries the same counts.
type Retry struct {
	model llm.Model
	p     RetryPolicy
}

var _ llm.Model = (*Retry)(nil)

// NewRetry wraps m.
func NewRetry(m llm.Model, p RetryPolicy) *Retry { return &Retry{model: m, p: p.withDefaults()} }

// RetryError is the final failure of a retried call.
type RetryError struct {
	// Attempts is how many calls were made.
	Attempts int
	// RateLimited counts 429 answers among them.
	RateLimited int
	// FailedUsage sums the usage billed for the failed attempts.
	FailedUsage llm.Usage
	// Causes counts every failed attempt by cause (the llm Cause
	// constants): it sums to Attempts.
	Causes map[string]int
	// Err is the last attempt's error.
	Err error
}

func (e *RetryError) Error() string {
	if e.Attempts <= 1 {
		return e.Err.Error()
	}
	return fmt.Sprintf("%v (after %d attempts)", e.Err, e.Attempts)
}

func (e *RetryError) Unwrap() error { return e.Err }

// Chat implements llm.Model.
//
// Each failed attempt is logged at info level through the logger
// llm.WithLogger put in ctx (cause, HTTP status, attempt, stage, model;
// never prompt text or keys). A ctx marked with llm.WithStop starts no
// further attempt once its stop signal is done.
func (r *Retry) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	var (
		attempts, limited int
		failed            llm.Usage
		causes            map[string]int
	)
	log := llm.LoggerFrom(ctx)
	for n := 1; ; n++ {
		resp, err := r.model.Chat(withAttempt(ctx, n), req)
		if err == nil {
			attempts += max(resp.Attempts, 1)
			resp.Attempts = attempts
			resp.RateLimited += limited
			resp.FailedUsage.Add(failed)
			llm.AddCauses(&resp.FailedCauses, causes)
			return resp, nil
		}
		var inner *RetryError
		if errors.As(err, &inner) { // a nested retry layer already counted
			attempts += inner.Attempts
			limited += inner.RateLimited
			failed.Add(inner.FailedUsage)
			llm.AddCauses(&causes, inner.Causes)
		} else {
			attempts++
			if llm.KindOf(err) == llm.KindRateLimited {
				limited++
			}
			failed.Add(llm.BilledUsage(err))
			llm.AddCauses(&causes, map[string]int{llm.CauseOf(err): 1})
		}
		fail := func(e error) error {
			return &RetryError{Attempts: attempts, RateLimited: limited, FailedUsage: failed, Causes: causes, Err: e}
		}
		kind := llm.KindOf(err)
		retry := kind.Retryable() && !errors.Is(err, ErrCircuitOpen) && n <= r.p.MaxRetries && ctx.Err() == nil && !llm.Stopped(ctx)
		if kind != llm.KindCancelled {
			log.Info("model call failed", "cause", llm.CauseOf(err), "status", llm.StatusOf(err), "attempt", n,
				"stage", req.Stage, "model", req.Model, "will_retry", retry)
		}
		if !retry {
			return nil, fail(err)
		}
		d := r.p.Jitter(r.p.Backoff(n))
		var le *llm.Error
		if errors.As(err, &le) && le.RetryAfter > 0 {
			if le.RetryAfter > r.p.MaxRetryAfter {
				return nil, fail(err)
			}
			d = max(d, le.RetryAfter)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < d {
			return nil, fail(err) // the caller's deadline comes first
		}
		sctx, stop := stopAware(ctx)
		serr := r.p.Sleep(sctx, d)
		stop()
		if serr != nil || llm.Stopped(ctx) {
			return nil, fail(interrupted(sctx, err))
		}
	}
}

// stopAware returns a context that also ends when ctx's llm.WithStop
// signal does.
func stopAware(ctx context.Context) (context.Context, context.CancelFunc) {
	done := llm.StopDone(ctx)
	if done == nil {
		return ctx, func() {}
	}
	c, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-done:
			cancel()
		case <-c.Done():
		}
	}()
	return c, cancel
}

type attemptKey struct{}

// withAttempt marks ctx with the attempt number n (1 = the first).
func withAttempt(ctx context.Context, n int) context.Context {
	return context.WithValue(ctx, attemptKey{}, n)
}

// attemptOf is the attempt number [Retry] put in ctx (1 when none).
func attemptOf(ctx context.Context) int {
	if n, ok := ctx.Value(attemptKey{}).(int); ok && n > 0 {
		return n
	}
	return 1
}

// interrupted is the error for a back-off cut short by ctx: the context's
// kind, naming the failure that was being retried.
func interrupted(ctx context.Context, last error) error {
	kind, cause := llm.KindCancelled, context.Canceled
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		kind, cause = llm.KindTimeout, context.DeadlineExceeded
	}
	return &llm.Error{Kind: kind, Msg: "gave up backing off after: " + last.Error(), Err: cause}
}

// SleepContext waits d, or until ctx ends (returning ctx's error).
func SleepContext(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func cmpOr[T comparable](a, b T) T {
	var zero T
	if a != zero {
		return a
	}
	return b
}
