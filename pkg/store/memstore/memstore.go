// Package memstore implements every pkg/store contract inside one process:
// the store of the all-in-one mode (`skillfleet train` without --redis) and
// of unit tests. Nothing is shared with other processes and nothing
// survives a restart. All types are safe for concurrent use.
package memstore

import (
	"cmp"
	"container/list"
	"context"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/skillfleet/skillfleet/pkg/store"
)

// DefaultCacheMaxBytes bounds the cache unless [Options.CacheMaxBytes] says otherwise.
const DefaultCacheMaxBytes = 256 << 20

// entryOverhead is what one cache entry costs beyond its key and value
// (list element, map slot, headers), counted against the memory bound.
const entryOverhead = 96

// Options configures a [Store]. The zero value is ready to use.
type Options struct {
	// CacheMaxBytes bounds the cache's keys and values (plus a fixed
	// per-entry overhead); the least recently used entries are evicted
	// first. Default [DefaultCacheMaxBytes]; negative means no bound.
	CacheMaxBytes int64
	// CacheTTL is the TTL of a Put given none (default [store.DefaultCacheTTL]).
	CacheTTL time.Duration
	// Now is the clock every TTL, lease and limiter reads (default
	// time.Now); tests pass a fake one.
	Now func() time.Time
}

// Store holds one in-process implementation of each contract.
type Store struct {
	cache    *Cache
	counters *Counters
	registry *Registry
	leases   *Leases
	limiter  *Limiter
}

// New returns an empty store.
func New(o Options) *Store {
	now := o.Now
	if now == nil {
		now = time.Now
	}
	maxBytes := cmp.Or(o.CacheMaxBytes, DefaultCacheMaxBytes)
	if maxBytes < 0 {
		maxBytes = math.MaxInt64
	}
	return &Store{
		cache: &Cache{
			now:      now,
			maxBytes: maxBytes,
			ttl:      cmp.Or(o.CacheTTL, store.DefaultCacheTTL),
			items:    map[string]*list.Element{},
			lru:      list.New(),
		},
		counters: &Counters{m: map[string]int64{}},
		registry: &Registry{now: now, m: map[string]registered{}},
		leases:   &Leases{now: now, m: map[string]lease{}, tokens: map[string]int64{}},
		limiter:  &Limiter{now: now, tat: map[string]time.Time{}},
	}
}

// Cache returns the rollout cache.
func (s *Store) Cache() *Cache { return s.cache }

// Counters returns the counters.
func (s *Store) Counters() *Counters { return s.counters }

// Registry returns the worker registry.
func (s *Store) Registry() *Registry { return s.registry }

// Leases returns the run leases.
func (s *Store) Leases() *Leases { return s.leases }

// Limiter returns the rate limiter.
func (s *Store) Limiter() *Limiter { return s.limiter }

var (
	_ store.Cache    = (*Cache)(nil)
	_ store.Counters = (*Counters)(nil)
	_ store.Registry = (*Registry)(nil)
	_ store.Lease    = (*Leases)(nil)
	_ store.Limiter  = (*Limiter)(nil)
)

// Cache is an LRU cache bounded by bytes, with a TTL per entry.
type Cache struct {
	now      func() time.Time
	maxBytes int64
	ttl      time.Duration

	mu    sync.Mutex
	items map[string]*list.Element // of *cacheEntry
	lru   *list.List               // front = most recently used
	bytes int64
	stats store.CacheStats
}

type cacheEntry struct {
	key     string
	value   []byte
	expires time.Time
}

func (e *cacheEntry) size() int64 { return int64(len(e.key)+len(e.value)) + entryOverhead }

// Get returns a copy of the value under key.
func (c *Cache) Get(_ context.Context, key string) ([]byte, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[key]
	if ok {
		e := el.Value.(*cacheEntry)
		if c.now().Before(e.expires) {
			c.lru.MoveToFront(el)
			c.stats.Hits++
			c.stats.HitBytes += int64(len(e.value))
			return slices.Clone(e.value), true, nil
		}
		c.removeLocked(el)
	}
	c.stats.Misses++
	return nil, false, nil
}

// Put stores a copy of value. A value larger than the whole bound is not stored.
func (c *Cache) Put(_ context.Context, key string, value []byte, ttl time.Duration) error {
	if ttl <= 0 {
		ttl = c.ttl
	}
	e := &cacheEntry{key: key, value: slices.Clone(value), expires: c.now().Add(ttl)}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats.Puts++
	c.stats.PutBytes += int64(len(value))
	if el, ok := c.items[key]; ok {
		c.removeLocked(el)
	}
	if e.size() > c.maxBytes {
		return nil
	}
	c.items[key] = c.lru.PushFront(e)
	c.bytes += e.size()
	for c.bytes > c.maxBytes {
		c.removeLocked(c.lru.Back())
		c.stats.Evictions++
	}
	return nil
}

func (c *Cache) removeLocked(el *list.Element) {
	e := c.lru.Remove(el).(*cacheEntry)
	delete(c.items, e.key)
	c.bytes -= e.size()
}

// Stats returns the cache's counters, including what it holds now.
func (c *Cache) Stats() store.CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Bytes, s.Entries = c.bytes, int64(len(c.items))
	return s
}

// Counters are in-process int64 totals.
type Counters struct {
	mu sync.Mutex
	m  map[string]int64
}

// Incr adds delta to name and returns the new total.
func (c *Counters) Incr(_ context.Context, name string, delta int64) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m[name] += delta
	return c.m[name], nil
}

// Get returns name's total.
func (c *Counters) Get(_ context.Context, name string) (int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.m[name], nil
}

// Snapshot returns the counters whose names start with prefix.
func (c *Counters) Snapshot(_ context.Context, prefix string) (map[string]int64, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int64{}
	for k, v := range c.m {
		if strings.HasPrefix(k, prefix) {
			out[k] = v
		}
	}
	return out, nil
}

// Registry tracks live workers in process.
type Registry struct {
	now func() time.Time

	mu sync.Mutex
	m  map[string]registered
}

type registered struct {
	info    store.WorkerInfo
	expires time.Time
}

// Heartbeat records w as alive for ttl.
func (r *Registry) Heartbeat(_ context.Context, w store.WorkerInfo, ttl time.Duration) error {
	now := r.now()
	w.Running = slices.Clone(w.Running)
	w.Seen = now
	r.mu.Lock()
	defer r.mu.Unlock()
	r.m[w.ID] = registered{info: w, expires: now.Add(ttl)}
	return nil
}

// List returns the live workers sorted by id, forgetting expired ones.
func (r *Registry) List(context.Context) ([]store.WorkerInfo, error) {
	now := r.now()
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]store.WorkerInfo, 0, len(r.m))
	for id, w := range r.m {
		if !now.Before(w.expires) {
			delete(r.m, id)
			continue
		}
		w.info.Running = slices.Clone(w.info.Running)
		out = append(out, w.info)
	}
	slices.SortFunc(out, func(a, b store.WorkerInfo) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}

// Remove forgets a worker.
func (r *Registry) Remove(_ context.Context, id string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.m, id)
	return nil
}

// Leases are in-process run leases with fencing tokens.
type Leases struct {
	now func() time.Time

	mu     sync.Mutex
	m      map[string]lease // run -> current lease (may have expired)
	tokens map[string]int64 // run -> last token issued
}

type lease struct {
	owner   string
	token   int64
	expires time.Time
}

// currentLocked returns the live lease of run.
func (l *Leases) currentLocked(run string) (lease, bool) {
	ls, ok := l.m[run]
	if ok && !l.now().Before(ls.expires) {
		delete(l.m, run)
		ok = false
	}
	return ls, ok
}

// Acquire takes the lease if nobody holds it.
func (l *Leases) Acquire(_ context.Context, run, owner string, ttl time.Duration) (int64, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if _, held := l.currentLocked(run); held {
		return 0, false, nil
	}
	l.tokens[run]++
	tok := l.tokens[run]
	l.m[run] = lease{owner: owner, token: tok, expires: l.now().Add(ttl)}
	return tok, true, nil
}

// Renew extends the holder's lease, or retakes a vanished one if no later
// token was issued.
func (l *Leases) Renew(_ context.Context, run, owner string, token int64, ttl time.Duration) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur, held := l.currentLocked(run)
	switch {
	case held && (cur.owner != owner || cur.token != token):
		return false, nil
	case !held && l.tokens[run] > token:
		return false, nil
	}
	l.tokens[run] = max(l.tokens[run], token)
	l.m[run] = lease{owner: owner, token: token, expires: l.now().Add(ttl)}
	return true, nil
}

// Release gives the lease up if owner and token hold it.
func (l *Leases) Release(_ context.Context, run, owner string, token int64) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if cur, held := l.currentLocked(run); held && cur.owner == owner && cur.token == token {
		delete(l.m, run)
	}
	return nil
}

// Check reports whether token is the current holder's.
func (l *Leases) Check(_ context.Context, run string, token int64) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur, held := l.currentLocked(run)
	return held && cur.token == token, nil
}

// Holder describes the current holder.
func (l *Leases) Holder(_ context.Context, run string) (store.LeaseHolder, bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	cur, held := l.currentLocked(run)
	if !held {
		return store.LeaseHolder{}, false, nil
	}
	return store.LeaseHolder{Owner: cur.owner, Token: cur.token, Remaining: cur.expires.Sub(l.now())}, true, nil
}

// sweepEvery is how many Takes pass between sweeps of full buckets.
const sweepEvery = 4096

// Limiter is an in-process GCRA limiter.
type Limiter struct {
	now func() time.Time

	mu    sync.Mutex
	tat   map[string]time.Time // theoretical arrival time per key
	takes int
}

// Take grants n tokens from bucket key or says how long to wait.
func (l *Limiter) Take(_ context.Context, key string, n, ratePerMin, burst int64) (time.Duration, error) {
	burst, limited, err := store.LimiterArgs(n, ratePerMin, burst)
	if err != nil || !limited {
		return 0, err
	}
	// One token every interval; a full bucket tolerates burst intervals of
	// debt. Rounding goes towards the safe side: increments up, tolerance down.
	interval := float64(time.Minute) / float64(ratePerMin)
	inc := time.Duration(math.Ceil(interval * float64(n)))
	tau := time.Duration(math.Floor(interval * float64(burst)))
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	l.takes++
	if l.takes%sweepEvery == 0 {
		for k, t := range l.tat {
			if !t.After(now) {
				delete(l.tat, k)
			}
		}
	}
	tat := l.tat[key]
	if tat.Before(now) {
		tat = now
	}
	next := tat.Add(inc)
	if allowAt := next.Add(-tau); allowAt.After(now) {
		return allowAt.Sub(now), nil
	}
	l.tat[key] = next
	return 0, nil
}
