package redisstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/skillfleet/skillfleet/pkg/store"
)

// Cache is the shared rollout cache: one string key per entry, with a TTL.
type Cache struct {
	s   *Store
	ttl time.Duration

	hits, misses, errs, puts, hitBytes, putBytes atomic.Int64
}

// Get returns the value under key.
func (c *Cache) Get(ctx context.Context, key string) ([]byte, bool, error) {
	v, err := c.s.rdb.Get(ctx, c.s.key(store.KeyCache, key)).Bytes()
	switch {
	case errors.Is(err, redis.Nil):
		c.misses.Add(1)
		return nil, false, nil
	case err != nil:
		c.errs.Add(1)
		return nil, false, fmt.Errorf("cache get: %w", err)
	}
	c.hits.Add(1)
	c.hitBytes.Add(int64(len(v)))
	return v, true, nil
}

// Put stores value under key for ttl (the store's default if ttl <= 0).
func (c *Cache) Put(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if ttl <= 0 {
		ttl = c.ttl
	}
	if err := c.s.rdb.Set(ctx, c.s.key(store.KeyCache, key), value, ttl).Err(); err != nil {
		c.errs.Add(1)
		return fmt.Errorf("cache put: %w", err)
	}
	c.puts.Add(1)
	c.putBytes.Add(int64(len(value)))
	return nil
}

// Stats returns this process's cache traffic (Bytes, Entries and Evictions
// are the server's business and stay zero).
func (c *Cache) Stats() store.CacheStats {
	return store.CacheStats{
		Hits: c.hits.Load(), Misses: c.misses.Load(), Errors: c.errs.Load(),
		Puts: c.puts.Load(), HitBytes: c.hitBytes.Load(), PutBytes: c.putBytes.Load(),
	}
}

// Counters are fields of one hash.
type Counters struct{ s *Store }

// Incr adds delta to name and returns the new total.
func (c *Counters) Incr(ctx context.Context, name string, delta int64) (int64, error) {
	v, err := c.s.rdb.HIncrBy(ctx, c.s.key(store.KeyCounters), name, delta).Result()
	if err != nil {
		return 0, fmt.Errorf("counter incr: %w", err)
	}
	return v, nil
}

// Get returns name's total.
func (c *Counters) Get(ctx context.Context, name string) (int64, error) {
	v, err := c.s.rdb.HGet(ctx, c.s.key(store.KeyCounters), name).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("counter get: %w", err)
	}
	return v, nil
}

// Snapshot returns the counters whose names start with prefix.
func (c *Counters) Snapshot(ctx context.Context, prefix string) (map[string]int64, error) {
	all, err := c.s.rdb.HGetAll(ctx, c.s.key(store.KeyCounters)).Result()
	if err != nil {
		return nil, fmt.Errorf("counter snapshot: %w", err)
	}
	out := map[string]int64{}
	for k, v := range all {
		if !strings.HasPrefix(k, prefix) {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("counter %q: %w", k, err)
		}
		out[k] = n
	}
	return out, nil
}

// Registry keeps a sorted set of worker ids by expiry and a hash of their
// last heartbeats.
type Registry struct{ s *Store }

// Heartbeat records w as alive for ttl (server clock).
func (r *Registry) Heartbeat(ctx context.Context, w store.WorkerInfo, ttl time.Duration) error {
	w.Seen = time.Time{}
	b, err := json.Marshal(w)
	if err != nil {
		return err
	}
	err = heartbeatScript.Run(ctx, r.s.rdb,
		[]string{r.s.key(store.KeyWorkers), r.s.key(store.KeyWorkerInfo)},
		w.ID, max(1, ttl.Milliseconds()), b).Err()
	if err != nil {
		return fmt.Errorf("registry heartbeat: %w", err)
	}
	return nil
}

// List returns the live workers sorted by id, dropping expired ones.
func (r *Registry) List(ctx context.Context) ([]store.WorkerInfo, error) {
	vals, err := listWorkersScript.Run(ctx, r.s.rdb,
		[]string{r.s.key(store.KeyWorkers), r.s.key(store.KeyWorkerInfo)}).StringSlice()
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, fmt.Errorf("registry list: %w", err)
	}
	out := make([]store.WorkerInfo, 0, len(vals))
	for _, v := range vals {
		seen, js, ok := strings.Cut(v, " ")
		if !ok {
			continue
		}
		var w store.WorkerInfo
		if err := json.Unmarshal([]byte(js), &w); err != nil {
			return nil, fmt.Errorf("registry entry: %w", err)
		}
		if ms, err := strconv.ParseInt(seen, 10, 64); err == nil {
			w.Seen = time.UnixMilli(ms)
		}
		out = append(out, w)
	}
	slices.SortFunc(out, func(a, b store.WorkerInfo) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Remove forgets a worker.
func (r *Registry) Remove(ctx context.Context, id string) error {
	_, err := r.s.rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.ZRem(ctx, r.s.key(store.KeyWorkers), id)
		p.HDel(ctx, r.s.key(store.KeyWorkerInfo), id)
		return nil
	})
	if err != nil {
		return fmt.Errorf("registry remove: %w", err)
	}
	return nil
}

// Leases keep "<token>:<owner>" under a per-run key with the lease's TTL
// and a per-run INCR counter for the fencing tokens.
type Leases struct{ s *Store }

func (l *Leases) keys(run string) []string {
	return []string{l.s.key(store.KeyLease, run), l.s.key(store.KeyLeaseToken, run)}
}

func leaseValue(token int64, owner string) string { return strconv.FormatInt(token, 10) + ":" + owner }

func ms(d time.Duration) int64 { return max(1, d.Milliseconds()) }

// Acquire takes the lease if nobody holds it (SET NX PX, token from INCR).
func (l *Leases) Acquire(ctx context.Context, run, owner string, ttl time.Duration) (int64, bool, error) {
	tok, err := acquireScript.Run(ctx, l.s.rdb, l.keys(run), owner, ms(ttl)).Int64()
	if err != nil {
		return 0, false, fmt.Errorf("lease acquire: %w", err)
	}
	return tok, tok > 0, nil
}

// Renew extends the holder's lease, or retakes a vanished one if no later
// token was issued.
func (l *Leases) Renew(ctx context.Context, run, owner string, token int64, ttl time.Duration) (bool, error) {
	ok, err := renewScript.Run(ctx, l.s.rdb, l.keys(run), owner, ms(ttl), token).Int64()
	if err != nil {
		return false, fmt.Errorf("lease renew: %w", err)
	}
	return ok == 1, nil
}

// Release gives the lease up if owner and token hold it.
func (l *Leases) Release(ctx context.Context, run, owner string, token int64) error {
	if err := releaseScript.Run(ctx, l.s.rdb, l.keys(run)[:1], leaseValue(token, owner)).Err(); err != nil {
		return fmt.Errorf("lease release: %w", err)
	}
	return nil
}

// Check reports whether token is the current holder's.
func (l *Leases) Check(ctx context.Context, run string, token int64) (bool, error) {
	v, err := l.s.rdb.Get(ctx, l.s.key(store.KeyLease, run)).Result()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("lease check: %w", err)
	}
	tok, _, _ := strings.Cut(v, ":")
	return tok == strconv.FormatInt(token, 10), nil
}

// Holder describes the current holder.
func (l *Leases) Holder(ctx context.Context, run string) (store.LeaseHolder, bool, error) {
	k := l.s.key(store.KeyLease, run)
	var get *redis.StringCmd
	var pttl *redis.DurationCmd
	_, err := l.s.rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		get, pttl = p.Get(ctx, k), p.PTTL(ctx, k)
		return nil
	})
	if errors.Is(err, redis.Nil) {
		return store.LeaseHolder{}, false, nil
	}
	if err != nil {
		return store.LeaseHolder{}, false, fmt.Errorf("lease holder: %w", err)
	}
	tok, owner, _ := strings.Cut(get.Val(), ":")
	n, err := strconv.ParseInt(tok, 10, 64)
	if err != nil {
		return store.LeaseHolder{}, false, fmt.Errorf("lease holder: malformed value: %w", err)
	}
	return store.LeaseHolder{Owner: owner, Token: n, Remaining: max(0, pttl.Val())}, true, nil
}

// Limiter is a GCRA limiter evaluated on the server.
type Limiter struct{ s *Store }

// Take grants n tokens from bucket key or says how long to wait.
func (l *Limiter) Take(ctx context.Context, key string, n, ratePerMin, burst int64) (time.Duration, error) {
	burst, limited, err := store.LimiterArgs(n, ratePerMin, burst)
	if err != nil || !limited {
		return 0, err
	}
	us, err := limitScript.Run(ctx, l.s.rdb, []string{l.s.key(store.KeyLimit, key)}, n, ratePerMin, burst).Int64()
	if err != nil {
		return 0, fmt.Errorf("limiter take: %w", err)
	}
	return time.Duration(us) * time.Microsecond, nil
}

// Level reads bucket key's level without taking from it: how many tokens
// a Take could be granted now, between 0 and burst (ratePerMin and burst
// as in Take; a bucket nobody has drawn from, or that has refilled and
// expired, is full). It uses the server's clock, as Take does.
func (l *Limiter) Level(ctx context.Context, key string, ratePerMin, burst int64) (float64, error) {
	if ratePerMin <= 0 {
		return 0, fmt.Errorf("limiter level %s: rate %d per minute: want a limited bucket", key, ratePerMin)
	}
	if burst <= 0 {
		burst = ratePerMin
	}
	v, err := levelScript.Run(ctx, l.s.rdb, []string{l.s.key(store.KeyLimit, key)}).Int64Slice()
	if err != nil {
		return 0, fmt.Errorf("limiter level: %w", err)
	}
	if len(v) != 2 {
		return 0, fmt.Errorf("limiter level: the script returned %d values, want 2", len(v))
	}
	now, tat := v[0], v[1]
	// The bucket owes (tat - now) of refill time; full it tolerates tau.
	interval := 60e6 / float64(ratePerMin)
	tau := interval * float64(burst)
	debt := max(0, float64(tat-now))
	return min(float64(burst), max(0, (tau-debt)/interval)), nil
}
