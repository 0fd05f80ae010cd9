package memstore_test

import (
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/skillfleet/skillfleet/pkg/store/memstore"
	"github.com/skillfleet/skillfleet/pkg/store/storetest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) storetest.Stores {
		clock := storetest.NewClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
		s := memstore.New(memstore.Options{Now: clock.Now})
		return storetest.Stores{
			Cache: s.Cache(), Counters: s.Counters(), Registry: s.Registry(),
			Leases: s.Leases(), Limiter: s.Limiter(), Clock: clock,
		}
	})
}

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	// Room for three entries of 4-byte keys and 100-byte values.
	const entry = 4 + 100 + 96
	c := memstore.New(memstore.Options{CacheMaxBytes: 3 * entry}).Cache()
	ctx := t.Context()
	val := make([]byte, 100)
	for i := range 3 {
		if err := c.Put(ctx, fmt.Sprintf("key%d", i), val, 0); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok, _ := c.Get(ctx, "key0"); !ok { // key0 is now the most recent
		t.Fatal("Get(key0) = miss before any eviction")
	}
	if err := c.Put(ctx, "key3", val, 0); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]bool{"key0": true, "key1": false, "key2": true, "key3": true} {
		if _, ok, _ := c.Get(ctx, key); ok != want {
			t.Errorf("Get(%s) hit = %t, want %t", key, ok, want)
		}
	}
	s := c.Stats()
	if s.Evictions != 1 || s.Entries != 3 || s.Bytes != 3*entry {
		t.Errorf("Stats() = %+v; want 1 eviction, 3 entries, %d bytes", s, 3*entry)
	}
	// A value larger than the whole bound is not stored and evicts nothing.
	if err := c.Put(ctx, "huge", make([]byte, 4*entry), 0); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := c.Get(ctx, "huge"); ok {
		t.Error("Get(huge) = hit, want the oversized value dropped")
	}
	if s := c.Stats(); s.Entries != 3 {
		t.Errorf("entries after an oversized Put = %d, want 3", s.Entries)
	}
	// Overwriting replaces the old size.
	if err := c.Put(ctx, "key3", []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	if s := c.Stats(); s.Bytes != 2*entry+4+1+96 {
		t.Errorf("bytes after shrinking key3 = %d, want %d", s.Bytes, 2*entry+4+1+96)
	}
}

// TestLimiterExactRate checks the GCRA arithmetic exactly on a fake clock:
// a full bucket, then one grant per interval and never more.
func TestLimiterExactRate(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		lim := memstore.New(memstore.Options{}).Limiter()
		ctx := t.Context()
		const rate, burst = 120, 4 // a token every 500ms
		grants := 0
		start := time.Now()
		for time.Since(start) < 10*time.Second {
			w, err := lim.Take(ctx, "k", 1, rate, burst)
			if err != nil {
				t.Fatal(err)
			}
			if w == 0 {
				grants++
				continue
			}
			if w > 500*time.Millisecond {
				t.Fatalf("wait %s, want at most one interval (500ms)", w)
			}
			time.Sleep(w)
		}
		// burst at t=0, then one every 500ms for 10s (the grant at 10s
		// itself falls outside the loop).
		if want := burst + 20 - 1; grants != want {
			t.Fatalf("grants in 10s = %d, want %d", grants, want)
		}
	})
}

func TestLimiterLargeTakes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		lim := memstore.New(memstore.Options{}).Limiter()
		ctx := t.Context()
		// 60000 tokens per minute (1000/s), bucket of 60000: a 50000-token
		// request passes, the next one waits for 40000 tokens to refill.
		if w, _ := lim.Take(ctx, "tpm", 50000, 60000, 0); w != 0 {
			t.Fatalf("first Take = wait %s, want 0", w)
		}
		w, _ := lim.Take(ctx, "tpm", 50000, 60000, 0)
		if want := 40 * time.Second; w != want {
			t.Fatalf("second Take = wait %s, want %s", w, want)
		}
		time.Sleep(w)
		if w, _ := lim.Take(ctx, "tpm", 50000, 60000, 0); w != 0 {
			t.Fatalf("Take after the wait = %s, want 0", w)
		}
	})
}
