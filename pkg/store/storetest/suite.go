package storetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/skillfleet/skillfleet/pkg/store"
)

// StatsCache is a [store.Cache] that counts its traffic.
type StatsCache interface {
	store.Cache
	Stats() store.CacheStats
}

// Stores is one fresh set of implementations for [Run]. Each call of the
// constructor given to Run must return stores that share nothing with the
// stores of other calls (a new memstore, or a new key prefix on a shared
// Redis), because the suite's subtests run in parallel.
type Stores struct {
	Cache    StatsCache
	Counters store.Counters
	Registry store.Registry
	Leases   store.Lease
	Limiter  store.Limiter
	// Clock is the fake clock the stores read, if any: the suite advances
	// it instead of waiting. Nil means the stores keep real time (a Redis
	// server's), and the suite waits with bounded polls.
	Clock *Clock
}

// now reads the stores' clock.
func (s Stores) now() time.Time {
	if s.Clock != nil {
		return s.Clock.Now()
	}
	return time.Now()
}

// eventually lets d pass and then requires cond: on a fake clock it
// advances the clock and checks once; on real time it polls cond until a
// bounded deadline.
func (s Stores) eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	if s.Clock != nil {
		s.Clock.Advance(d)
		if !cond() {
			t.Fatalf("%s: not true after %s", what, d)
		}
		return
	}
	deadline := time.Now().Add(d + 5*time.Second)
	time.Sleep(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not true %s after the expected %s", what, 5*time.Second, d)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Run is the conformance suite of the store contracts; every
// implementation must pass it (go test -race).
func Run(t *testing.T, newStores func(t *testing.T) Stores) {
	t.Run("Cache", func(t *testing.T) { t.Parallel(); testCache(t, newStores) })
	t.Run("Counters", func(t *testing.T) { t.Parallel(); testCounters(t, newStores) })
	t.Run("Registry", func(t *testing.T) { t.Parallel(); testRegistry(t, newStores) })
	t.Run("Lease", func(t *testing.T) { t.Parallel(); testLease(t, newStores) })
	t.Run("Limiter", func(t *testing.T) { t.Parallel(); testLimiter(t, newStores) })
}

// must turns a (value, error) result into the value, failing the test on
// an error: must(c.Get(ctx, key))(t).
func must[T any](v T, err error) func(*testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

func testCache(t *testing.T, newStores func(*testing.T) Stores) {
	ttl := 200 * time.Millisecond

	t.Run("MissThenHit", func(t *testing.T) {
		t.Parallel()
		st := newStores(t)
		c := st.Cache
		key := store.CacheKey("skill", "item-1")
		if v, ok, err := c.Get(t.Context(), key); err != nil || ok || v != nil {
			t.Fatalf("Get(missing) = %q, %t, %v; want nil, false, nil", v, ok, err)
		}
		in := []byte("result\x00with binary \xff bytes")
		if err := c.Put(t.Context(), key, in, 0); err != nil {
			t.Fatal(err)
		}
		want := bytes.Clone(in)
		in[0] = 'X' // the caller may reuse its buffer
		got, ok, err := c.Get(t.Context(), key)
		if err != nil || !ok || !bytes.Equal(got, want) {
			t.Fatalf("Get = %q, %t, %v; want %q, true, nil", got, ok, err, want)
		}
		got[0] = 'Y' // and scribble on what it got
		if again, _, _ := c.Get(t.Context(), key); !bytes.Equal(again, want) {
			t.Fatalf("Get after caller modified a result = %q, want %q", again, want)
		}
		s := c.Stats()
		if s.Hits != 2 || s.Misses != 1 || s.Puts != 1 || s.PutBytes != int64(len(want)) || s.HitBytes != 2*int64(len(want)) {
			t.Fatalf("Stats() = %+v; want 2 hits, 1 miss, 1 put of %d bytes", s, len(want))
		}
	})

	t.Run("EmptyValue", func(t *testing.T) {
		t.Parallel()
		c := newStores(t).Cache
		if err := c.Put(t.Context(), "k", []byte{}, 0); err != nil {
			t.Fatal(err)
		}
		if v, ok, err := c.Get(t.Context(), "k"); err != nil || !ok || len(v) != 0 {
			t.Fatalf("Get(empty value) = %q, %t, %v; want \"\", true, nil", v, ok, err)
		}
	})

	t.Run("Overwrite", func(t *testing.T) {
		t.Parallel()
		c := newStores(t).Cache
		for _, v := range []string{"first", "second"} {
			if err := c.Put(t.Context(), "k", []byte(v), 0); err != nil {
				t.Fatal(err)
			}
		}
		if v, ok, _ := c.Get(t.Context(), "k"); !ok || string(v) != "second" {
			t.Fatalf("Get after two Puts = %q, %t; want \"second\", true", v, ok)
		}
	})

	t.Run("TTL", func(t *testing.T) {
		t.Parallel()
		st := newStores(t)
		c := st.Cache
		if err := c.Put(t.Context(), "short", []byte("v"), ttl); err != nil {
			t.Fatal(err)
		}
		if err := c.Put(t.Context(), "default", []byte("v"), 0); err != nil {
			t.Fatal(err)
		}
		if _, ok, _ := c.Get(t.Context(), "short"); !ok {
			t.Fatal("Get(short) before its TTL = miss, want hit")
		}
		st.eventually(t, ttl+10*time.Millisecond, "short-lived entry expired", func() bool {
			_, ok, err := c.Get(t.Context(), "short")
			return err == nil && !ok
		})
		if _, ok, _ := c.Get(t.Context(), "default"); !ok {
			t.Fatal("Get(default TTL) = miss, want hit")
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		t.Parallel()
		c := newStores(t).Cache
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 50 {
					own := fmt.Sprintf("g%d-%d", g, i)
					if err := c.Put(t.Context(), own, []byte(own), 0); err != nil {
						t.Error(err)
						return
					}
					if err := c.Put(t.Context(), "shared", []byte(own), 0); err != nil {
						t.Error(err)
						return
					}
					if v, ok, err := c.Get(t.Context(), own); err != nil || !ok || string(v) != own {
						t.Errorf("Get(%q) = %q, %t, %v", own, v, ok, err)
						return
					}
				}
			})
		}
		wg.Wait()
		if v, ok, _ := c.Get(t.Context(), "shared"); !ok || len(v) == 0 {
			t.Fatalf("Get(shared) = %q, %t; want some writer's value", v, ok)
		}
	})
}

func testCounters(t *testing.T, newStores func(*testing.T) Stores) {
	t.Run("IncrGetSnapshot", func(t *testing.T) {
		t.Parallel()
		c := newStores(t).Counters
		ctx := t.Context()
		if v := must(c.Get(ctx, "tasks.done"))(t); v != 0 {
			t.Fatalf("Get(missing) = %d, want 0", v)
		}
		if v := must(c.Incr(ctx, "tasks.done", 3))(t); v != 3 {
			t.Fatalf("Incr(3) = %d, want 3", v)
		}
		if v := must(c.Incr(ctx, "tasks.done", -1))(t); v != 2 {
			t.Fatalf("Incr(-1) = %d, want 2", v)
		}
		must(c.Incr(ctx, "tokens.input", 1000))(t)
		must(c.Incr(ctx, "tokens.output", 250))(t)
		if v := must(c.Get(ctx, "tasks.done"))(t); v != 2 {
			t.Fatalf("Get = %d, want 2", v)
		}
		got := must(c.Snapshot(ctx, "tokens."))(t)
		want := map[string]int64{"tokens.input": 1000, "tokens.output": 250}
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("Snapshot(tokens.) (-want +got):\n%s", d)
		}
		if all := must(c.Snapshot(ctx, ""))(t); len(all) != 3 {
			t.Fatalf("Snapshot(\"\") = %v, want 3 counters", all)
		}
	})

	t.Run("Concurrent", func(t *testing.T) {
		t.Parallel()
		c := newStores(t).Counters
		var wg sync.WaitGroup
		for range 8 {
			wg.Go(func() {
				for range 100 {
					if _, err := c.Incr(t.Context(), "n", 1); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if v := must(c.Get(t.Context(), "n"))(t); v != 800 {
			t.Fatalf("after 8x100 concurrent Incr(1), Get = %d, want 800", v)
		}
	})
}

func testRegistry(t *testing.T, newStores func(*testing.T) Stores) {
	ignoreSeen := cmpopts.IgnoreFields(store.WorkerInfo{}, "Seen")

	t.Run("HeartbeatListRemove", func(t *testing.T) {
		t.Parallel()
		st := newStores(t)
		r, ctx := st.Registry, t.Context()
		if l := must(r.List(ctx))(t); len(l) != 0 {
			t.Fatalf("List(empty) = %v", l)
		}
		b := store.WorkerInfo{ID: "w-b", Host: "node-2", Concurrency: 8}
		a := store.WorkerInfo{ID: "w-a", Host: "node-1", Concurrency: 24, InFlight: 2, Running: []string{"t1", "t2"}}
		before := st.now().Add(-time.Second)
		for _, w := range []store.WorkerInfo{b, a} {
			if err := r.Heartbeat(ctx, w, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		got := must(r.List(ctx))(t)
		if d := cmp.Diff([]store.WorkerInfo{a, b}, got, ignoreSeen, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("List (-want +got):\n%s", d)
		}
		for _, w := range got {
			if w.Seen.Before(before) {
				t.Errorf("worker %s Seen = %v, want about now (%v)", w.ID, w.Seen, st.now())
			}
		}
		a.InFlight, a.Running = 0, nil
		if err := r.Heartbeat(ctx, a, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := r.Remove(ctx, "w-b"); err != nil {
			t.Fatal(err)
		}
		got = must(r.List(ctx))(t)
		if d := cmp.Diff([]store.WorkerInfo{a}, got, ignoreSeen, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("List after a new heartbeat and Remove (-want +got):\n%s", d)
		}
	})

	t.Run("Expiry", func(t *testing.T) {
		t.Parallel()
		st := newStores(t)
		r, ctx := st.Registry, t.Context()
		ttl := 200 * time.Millisecond
		if err := r.Heartbeat(ctx, store.WorkerInfo{ID: "short"}, ttl); err != nil {
			t.Fatal(err)
		}
		if err := r.Heartbeat(ctx, store.WorkerInfo{ID: "long"}, time.Hour); err != nil {
			t.Fatal(err)
		}
		if l := must(r.List(ctx))(t); len(l) != 2 {
			t.Fatalf("List = %v, want 2 workers", l)
		}
		st.eventually(t, ttl+10*time.Millisecond, "silent worker dropped", func() bool {
			l, err := r.List(ctx)
			return err == nil && len(l) == 1 && l[0].ID == "long"
		})
	})
}

func testLease(t *testing.T, newStores func(*testing.T) Stores) {
	const run = "run-1"
	ttl := 300 * time.Millisecond

	t.Run("Exclusive", func(t *testing.T) {
		t.Parallel()
		l, ctx := newStores(t).Leases, t.Context()
		if _, ok := must2(l.Holder(ctx, run))(t); ok {
			t.Fatal("Holder(free lease) ok = true")
		}
		tokA, ok, err := l.Acquire(ctx, run, "a", time.Minute)
		if err != nil || !ok || tokA <= 0 {
			t.Fatalf("Acquire(a) = %d, %t, %v; want a positive token", tokA, ok, err)
		}
		if tok, ok, err := l.Acquire(ctx, run, "b", time.Minute); err != nil || ok || tok != 0 {
			t.Fatalf("Acquire(b) while a holds = %d, %t, %v; want 0, false, nil", tok, ok, err)
		}
		if _, ok, _ := l.Acquire(ctx, run, "a", time.Minute); ok {
			t.Fatal("Acquire(a) again while a holds = true, want false")
		}
		h, ok := must2(l.Holder(ctx, run))(t)
		if !ok || h.Owner != "a" || h.Token != tokA || h.Remaining <= 0 || h.Remaining > time.Minute {
			t.Fatalf("Holder = %+v, %t; want a with token %d and up to 1m left", h, ok, tokA)
		}
		if ok := must(l.Check(ctx, run, tokA))(t); !ok {
			t.Fatal("Check(holder's token) = false")
		}
		if ok := must(l.Check(ctx, run, tokA+1))(t); ok {
			t.Fatal("Check(other token) = true")
		}
		if tok, ok, _ := l.Acquire(ctx, "run-2", "b", time.Minute); !ok || tok <= 0 {
			t.Fatalf("Acquire(another run) = %d, %t; want a token", tok, ok)
		}
	})

	t.Run("ConcurrentAcquire", func(t *testing.T) {
		t.Parallel()
		l := newStores(t).Leases
		var winners atomic.Int32
		var wg sync.WaitGroup
		for i := range 16 {
			wg.Go(func() {
				_, ok, err := l.Acquire(t.Context(), run, fmt.Sprintf("owner-%d", i), time.Minute)
				if err != nil {
					t.Error(err)
				}
				if ok {
					winners.Add(1)
				}
			})
		}
		wg.Wait()
		if n := winners.Load(); n != 1 {
			t.Fatalf("16 concurrent Acquires: %d succeeded, want exactly 1", n)
		}
	})

	t.Run("RenewAndRelease", func(t *testing.T) {
		t.Parallel()
		l, ctx := newStores(t).Leases, t.Context()
		tokA, _, _ := l.Acquire(ctx, run, "a", time.Minute)
		for _, c := range []struct {
			owner string
			token int64
			want  bool
		}{
			{"b", tokA, false},     // not the holder
			{"a", tokA + 1, false}, // holder's name, wrong token
			{"a", tokA, true},
		} {
			if ok := must(l.Renew(ctx, run, c.owner, c.token, time.Minute))(t); ok != c.want {
				t.Errorf("Renew(%s, %d) = %t, want %t", c.owner, c.token, ok, c.want)
			}
		}
		if err := l.Release(ctx, run, "b", tokA); err != nil {
			t.Fatal(err)
		}
		if h, _ := must2(l.Holder(ctx, run))(t); h.Owner != "a" {
			t.Fatalf("after Release by a non-holder, Holder = %+v, want a", h)
		}
		if err := l.Release(ctx, run, "a", tokA); err != nil {
			t.Fatal(err)
		}
		tokB, ok, err := l.Acquire(ctx, run, "b", time.Minute)
		if err != nil || !ok || tokB <= tokA {
			t.Fatalf("Acquire(b) after a released = %d, %t, %v; want a token > %d", tokB, ok, err, tokA)
		}
		if ok := must(l.Renew(ctx, run, "a", tokA, time.Minute))(t); ok {
			t.Fatal("Renew by the previous holder = true, want false")
		}
		if ok := must(l.Check(ctx, run, tokA))(t); ok {
			t.Fatal("Check(previous holder's token) = true, want false (fencing)")
		}
	})

	t.Run("ExpiryHandsOver", func(t *testing.T) {
		t.Parallel()
		st := newStores(t)
		l, ctx := st.Leases, t.Context()
		tokA, _, _ := l.Acquire(ctx, run, "a", ttl)
		var tokB int64
		st.eventually(t, ttl+10*time.Millisecond, "b acquires after a's lease expired", func() bool {
			tok, ok, err := l.Acquire(ctx, run, "b", time.Minute)
			tokB = tok
			return err == nil && ok
		})
		if tokB <= tokA {
			t.Fatalf("token after expiry = %d, want > %d", tokB, tokA)
		}
		if ok := must(l.Renew(ctx, run, "a", tokA, ttl))(t); ok {
			t.Fatal("Renew by the expired holder after b acquired = true, want false")
		}
		if ok := must(l.Check(ctx, run, tokA))(t); ok {
			t.Fatal("Check(expired token) = true")
		}
	})

	t.Run("RenewRetakesVanishedLease", func(t *testing.T) {
		t.Parallel()
		st := newStores(t)
		l, ctx := st.Leases, t.Context()
		tokA, _, _ := l.Acquire(ctx, run, "a", ttl)
		st.eventually(t, ttl+10*time.Millisecond, "lease expired", func() bool {
			_, ok, err := l.Holder(ctx, run)
			return err == nil && !ok
		})
		if ok := must(l.Renew(ctx, run, "a", tokA, time.Minute))(t); !ok {
			t.Fatal("Renew of an expired lease nobody took since = false, want true")
		}
		if ok := must(l.Check(ctx, run, tokA))(t); !ok {
			t.Fatal("Check after the renewal retook the lease = false")
		}
		if _, ok, _ := l.Acquire(ctx, run, "b", time.Minute); ok {
			t.Fatal("Acquire(b) after a retook the lease = true")
		}
	})

	t.Run("NoRetakeAfterAnotherHolder", func(t *testing.T) {
		t.Parallel()
		st := newStores(t)
		l, ctx := st.Leases, t.Context()
		tokA, _, _ := l.Acquire(ctx, run, "a", ttl)
		var tokB int64
		st.eventually(t, ttl+10*time.Millisecond, "b acquires", func() bool {
			tok, ok, err := l.Acquire(ctx, run, "b", time.Minute)
			tokB = tok
			return err == nil && ok
		})
		if err := l.Release(ctx, run, "b", tokB); err != nil {
			t.Fatal(err)
		}
		if ok := must(l.Renew(ctx, run, "a", tokA, time.Minute))(t); ok {
			t.Fatal("Renew by a after b held and released the lease = true, want false")
		}
	})
}

// must2 is [must] for (value, ok, error) results.
func must2[T any](v T, ok bool, err error) func(*testing.T) (T, bool) {
	return func(t *testing.T) (T, bool) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v, ok
	}
}

func testLimiter(t *testing.T, newStores func(*testing.T) Stores) {
	t.Run("Burst", func(t *testing.T) {
		t.Parallel()
		lim, ctx := newStores(t).Limiter, t.Context()
		// 6 per minute: one token every 10s, so no refill during the test.
		for i := range 3 {
			if w := must(lim.Take(ctx, "k", 1, 6, 3))(t); w != 0 {
				t.Fatalf("Take #%d within the burst = wait %s, want 0", i+1, w)
			}
		}
		w := must(lim.Take(ctx, "k", 1, 6, 3))(t)
		if w <= 0 || w > 10*time.Second {
			t.Fatalf("Take past the burst = wait %s, want (0, 10s]", w)
		}
		if w := must(lim.Take(ctx, "other", 3, 6, 3))(t); w != 0 {
			t.Fatalf("Take on another key = wait %s, want 0 (keys are independent)", w)
		}
		if _, err := lim.Take(ctx, "k2", 4, 6, 3); !errors.Is(err, store.ErrExceedsBurst) {
			t.Fatalf("Take(n > burst) error = %v, want ErrExceedsBurst", err)
		}
		for range 10 {
			if w := must(lim.Take(ctx, "k", 100, 0, 0))(t); w != 0 {
				t.Fatalf("Take with no rate = wait %s, want 0", w)
			}
		}
		if w := must(lim.Take(ctx, "k3", 6, 6, 0))(t); w != 0 {
			t.Fatalf("Take(n = rate) with default burst = wait %s, want 0", w)
		}
	})

	t.Run("Refill", func(t *testing.T) {
		t.Parallel()
		st := newStores(t)
		lim, ctx := st.Limiter, t.Context()
		// 600 per minute: a token every 100ms.
		if w := must(lim.Take(ctx, "k", 2, 600, 2))(t); w != 0 {
			t.Fatalf("first Take = wait %s", w)
		}
		w := must(lim.Take(ctx, "k", 1, 600, 2))(t)
		if w <= 0 || w > 100*time.Millisecond {
			t.Fatalf("Take on an empty bucket = wait %s, want (0, 100ms]", w)
		}
		st.eventually(t, w, "a token refilled after the wait", func() bool {
			w, err := lim.Take(ctx, "k", 1, 600, 2)
			return err == nil && w == 0
		})
	})

	t.Run("NeverExceedsRate", func(t *testing.T) {
		t.Parallel()
		st := newStores(t)
		lim := st.Limiter
		const rate, burst = 6000, 5 // 100 per second
		var grants atomic.Int64
		take := func() time.Duration {
			w, err := lim.Take(t.Context(), "shared", 1, rate, burst)
			if err != nil {
				t.Error(err)
				return time.Second
			}
			if w == 0 {
				grants.Add(1)
			}
			return w
		}
		start := st.now()
		if st.Clock != nil {
			for range 50 {
				var wg sync.WaitGroup
				for range 4 {
					wg.Go(func() {
						for range 5 {
							take()
						}
					})
				}
				wg.Wait()
				st.Clock.Advance(10 * time.Millisecond)
			}
		} else {
			deadline := time.Now().Add(500 * time.Millisecond)
			var wg sync.WaitGroup
			for range 4 {
				wg.Go(func() {
					for time.Now().Before(deadline) {
						if w := take(); w > 0 {
							time.Sleep(min(w, 5*time.Millisecond))
						}
					}
				})
			}
			wg.Wait()
		}
		elapsed := st.now().Sub(start)
		limit := burst + int64(float64(rate)*elapsed.Minutes()) + 1
		got := grants.Load()
		if got > limit {
			t.Fatalf("%d grants in %s at %d/min with burst %d; the limit allows at most %d", got, elapsed, rate, burst, limit)
		}
		if got < burst {
			t.Fatalf("%d grants in %s; want at least the burst (%d)", got, elapsed, burst)
		}
		t.Logf("%d grants in %s (at most %d allowed)", got, elapsed, limit)
	})
}
