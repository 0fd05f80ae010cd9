package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Cache is a content-addressed cache of opaque values (a serialized task
// result). Keys come from [CacheKey]: equal keys mean equal inputs, so a
// value never needs invalidating, only expiring.
type Cache interface {
	// Get returns the value stored under key; ok is false on a miss.
	Get(ctx context.Context, key string) (value []byte, ok bool, err error)
	// Put stores value under key for ttl; ttl <= 0 means the
	// implementation's default TTL. Put replaces an existing value.
	Put(ctx context.Context, key string, value []byte, ttl time.Duration) error
}

// DefaultCacheTTL is how long a cached value lives when Put is given no TTL.
// Rollout results stay valid as long as their inputs exist; the TTL only
// bounds what an abandoned benchmark or model leaves behind.
const DefaultCacheTTL = 7 * 24 * time.Hour

// CacheStats counts a cache's traffic as seen by this process.
type CacheStats struct {
	Hits, Misses int64
	// Errors counts operations that failed (the store was unreachable).
	Errors int64
	Puts   int64
	// HitBytes is the size of the values Get returned; PutBytes the size
	// of the values Put stored.
	HitBytes, PutBytes int64
	// Bytes and Entries are what the cache holds now, and Evictions how
	// many entries the memory bound pushed out; only an in-process cache
	// knows these (a Redis cache reports zero).
	Bytes, Entries, Evictions int64
}

// Counters are named int64 totals shared by every process (tasks, tokens).
// A missing counter reads as zero.
type Counters interface {
	// Incr adds delta to the counter and returns its new value.
	Incr(ctx context.Context, name string, delta int64) (int64, error)
	// Get returns the counter's value.
	Get(ctx context.Context, name string) (int64, error)
	// Snapshot returns every counter whose name starts with prefix.
	Snapshot(ctx context.Context, prefix string) (map[string]int64, error)
}

// WorkerInfo is what a worker announces with each heartbeat.
type WorkerInfo struct {
	ID          string `json:"id"`
	Host        string `json:"host,omitempty"`
	Concurrency int    `json:"concurrency"`
	InFlight    int    `json:"in_flight"`
	// Running holds the ids of the tasks the worker is executing.
	Running []string `json:"running,omitempty"`
	// Seen is when the store received the heartbeat (store clock); the
	// store sets it and ignores the caller's value.
	Seen time.Time `json:"seen"`
}

// Registry tracks which workers are alive: a worker is listed until the ttl
// of its last heartbeat runs out.
type Registry interface {
	// Heartbeat records w as alive for ttl, replacing its previous record.
	Heartbeat(ctx context.Context, w WorkerInfo, ttl time.Duration) error
	// List returns the live workers sorted by id.
	List(ctx context.Context) ([]WorkerInfo, error)
	// Remove forgets a worker at once (a clean shutdown).
	Remove(ctx context.Context, id string) error
}

// Lease is a per-run leader lease with fencing tokens. At most one owner
// holds a run's lease at a time; every successful Acquire gets a token
// greater than any earlier one for that run, so work stamped with an old
// token can be recognised and refused ([Lease.Check]).
type Lease interface {
	// Acquire takes the lease for ttl if nobody holds it; ok is false, with
	// a zero token, when someone does (even the same owner).
	Acquire(ctx context.Context, run, owner string, ttl time.Duration) (token int64, ok bool, err error)
	// Renew extends the holder's lease to ttl from now. It returns false if
	// owner and token do not hold the lease. If the lease has vanished
	// (expired, or the store lost its data) and no later token was issued,
	// Renew takes it again with the same token: nobody else can have
	// decided in between.
	Renew(ctx context.Context, run, owner string, token int64, ttl time.Duration) (bool, error)
	// Release gives the lease up if owner and token hold it; otherwise it
	// does nothing.
	Release(ctx context.Context, run, owner string, token int64) error
	// Check reports whether token is the current holder's token.
	Check(ctx context.Context, run string, token int64) (bool, error)
	// Holder describes the current holder; ok is false if nobody holds the lease.
	Holder(ctx context.Context, run string) (h LeaseHolder, ok bool, err error)
}

// LeaseHolder describes who holds a lease.
type LeaseHolder struct {
	Owner string
	Token int64
	// Remaining is the time left before the lease expires unless renewed.
	Remaining time.Duration
}

// Limiter is a shared rate limiter (GCRA: a token bucket that holds burst
// tokens and refills ratePerMin per minute). Implementations keep one
// bucket per key.
type Limiter interface {
	// Take asks for n tokens from the bucket key. It returns 0 when they
	// were granted, or else how long to wait before asking again; nothing
	// is taken then. ratePerMin <= 0 means no limit; burst <= 0 means
	// burst = ratePerMin. n larger than burst can never be granted and
	// fails with [ErrExceedsBurst]; n <= 0 takes nothing.
	Take(ctx context.Context, key string, n, ratePerMin, burst int64) (wait time.Duration, err error)
}

// ErrExceedsBurst reports a Take for more tokens than the bucket can hold.
var ErrExceedsBurst = errors.New("request exceeds the limiter burst")

// ErrLeaseLost reports that another owner holds, or has held, a lease this
// process had: it must stop deciding.
var ErrLeaseLost = errors.New("lease lost")

// LeaseHeldError reports that another owner holds the lease of a run.
type LeaseHeldError struct {
	Run    string
	Holder LeaseHolder
}

// Error names the run and, when known, the holder and how long its lease
// has left, so the message tells an operator what to stop or wait for.
func (e *LeaseHeldError) Error() string {
	if e.Holder.Owner == "" {
		return fmt.Sprintf("run %q is led by another coordinator; stop it or wait for its lease to expire", e.Run)
	}
	return fmt.Sprintf("run %q is led by coordinator %q (fencing token %d, lease expires in %s unless renewed); stop it or wait for its lease to expire",
		e.Run, e.Holder.Owner, e.Holder.Token, e.Holder.Remaining.Round(time.Millisecond))
}

// LimiterArgs normalises Take's arguments as every implementation must:
// limited is false when ratePerMin <= 0 or n <= 0 (grant at once), burst
// defaults to ratePerMin, and n > burst is [ErrExceedsBurst].
func LimiterArgs(n, ratePerMin, burst int64) (effectiveBurst int64, limited bool, err error) {
	if ratePerMin <= 0 || n <= 0 {
		return burst, false, nil
	}
	if burst <= 0 {
		burst = ratePerMin
	}
	if n > burst {
		return burst, false, fmt.Errorf("take %d with burst %d: %w", n, burst, ErrExceedsBurst)
	}
	return burst, true, nil
}
