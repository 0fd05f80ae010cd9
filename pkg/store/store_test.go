package store_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/skillfleet/skillfleet/pkg/store"
	"github.com/skillfleet/skillfleet/pkg/store/memstore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCacheKey(t *testing.T) {
	t.Parallel()
	// Pinned: a change here orphans every cached result in every
	// deployment, so it must be deliberate (bump the domain in cachekey.go).
	const want = "7c32c4559c233c9ec558a32ff0c07a7f0e57e768037a8762c2e6137341055fb1"
	if got := store.CacheKey("skill", "item"); got != want {
		t.Fatalf("CacheKey(skill, item) = %s, want %s", got, want)
	}
	distinct := map[string][]string{}
	for _, parts := range [][]string{
		{}, {""}, {"", ""}, {"ab", "c"}, {"a", "bc"}, {"abc"}, {"a\x00", "bc"}, {"a", "\x00bc"},
	} {
		k := store.CacheKey(parts...)
		if prev, dup := distinct[k]; dup {
			t.Errorf("CacheKey(%q) == CacheKey(%q)", parts, prev)
		}
		distinct[k] = parts
	}
}

func TestRolloutKey(t *testing.T) {
	t.Parallel()
	base := store.RolloutKey{SkillHash: "sk", ItemID: "it", BenchConfigHash: "bc", Model: "gpt", Sampling: "t=0.7", Sample: 0}
	if got, want := base.Key(), store.CacheKey("sk", "it", "bc", "gpt", "t=0.7", "0"); got != want {
		t.Fatalf("Key() = %s, want CacheKey of the fields in order (%s)", got, want)
	}
	for name, change := range map[string]func(*store.RolloutKey){
		"skill":    func(k *store.RolloutKey) { k.SkillHash = "sk2" },
		"item":     func(k *store.RolloutKey) { k.ItemID = "it2" },
		"bench":    func(k *store.RolloutKey) { k.BenchConfigHash = "bc2" },
		"model":    func(k *store.RolloutKey) { k.Model = "gpt2" },
		"sampling": func(k *store.RolloutKey) { k.Sampling = "t=0" },
		"sample":   func(k *store.RolloutKey) { k.Sample = 1 },
	} {
		k := base
		change(&k)
		if k.Key() == base.Key() {
			t.Errorf("changing the %s leaves the key unchanged", name)
		}
	}
}

// brokenCache fails every call, as a store does while Redis is down.
type brokenCache struct{}

var errDown = errors.New("dial tcp: connection refused")

func (brokenCache) Get(context.Context, string) ([]byte, bool, error) { return nil, false, errDown }
func (brokenCache) Put(context.Context, string, []byte, time.Duration) error {
	return errDown
}

func TestDegradingCache(t *testing.T) {
	t.Parallel()
	var logs bytes.Buffer
	d := store.Degrading(brokenCache{}, slog.New(slog.NewTextHandler(&logs, nil)))
	ctx := t.Context()
	for range 3 {
		if v, ok, err := d.Get(ctx, "k"); v != nil || ok || err != nil {
			t.Fatalf("Get on a broken cache = %q, %t, %v; want a miss", v, ok, err)
		}
		if err := d.Put(ctx, "k", []byte("v"), 0); err != nil {
			t.Fatalf("Put on a broken cache = %v, want nil", err)
		}
	}
	if s := d.Stats(); s.Errors != 6 {
		t.Errorf("Stats().Errors = %d, want 6", s.Errors)
	}
	if n := strings.Count(logs.String(), "shared cache unreachable"); n != 1 {
		t.Errorf("logged %d warnings for 6 failures within the interval, want 1:\n%s", n, logs.String())
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, _, err := d.Get(cctx, "k"); err == nil {
		t.Error("Get with a cancelled context: nil error, want the cancellation passed through")
	}

	// A working cache passes straight through, stats included.
	mem := memstore.New(memstore.Options{}).Cache()
	d = store.Degrading(mem, nil)
	if err := d.Put(ctx, "k", []byte("v"), 0); err != nil {
		t.Fatal(err)
	}
	if v, ok, err := d.Get(ctx, "k"); err != nil || !ok || string(v) != "v" {
		t.Fatalf("Get = %q, %t, %v", v, ok, err)
	}
	if s := d.Stats(); s.Hits != 1 || s.Puts != 1 {
		t.Errorf("Stats() = %+v, want the wrapped cache's", s)
	}
}

type brokenLimiter struct{}

func (brokenLimiter) Take(_ context.Context, _ string, n, rate, burst int64) (time.Duration, error) {
	if _, _, err := store.LimiterArgs(n, rate, burst); err != nil {
		return 0, err
	}
	return 0, errDown
}

func TestFallbackLimiter(t *testing.T) {
	t.Parallel()
	local := memstore.New(memstore.Options{Now: func() time.Time { return time.Unix(0, 0) }}).Limiter()
	f := store.NewFallbackLimiter(brokenLimiter{}, local, func() int64 { return 4 }, nil)
	ctx := t.Context()
	// 400/min with burst 40 over 4 processes: a local burst of 10.
	grants := 0
	for range 20 {
		w, err := f.Take(ctx, "k", 1, 400, 40)
		if err != nil {
			t.Fatal(err)
		}
		if w == 0 {
			grants++
		}
	}
	if grants != 10 {
		t.Errorf("grants from the local fallback = %d, want 10 (a quarter of the burst)", grants)
	}
	if _, err := f.Take(ctx, "k", 41, 400, 40); !errors.Is(err, store.ErrExceedsBurst) {
		t.Errorf("Take(n > burst) = %v, want ErrExceedsBurst", err)
	}
	// A working shared limiter is used as is.
	shared := memstore.New(memstore.Options{}).Limiter()
	f = store.NewFallbackLimiter(shared, local, nil, nil)
	if w, err := f.Take(ctx, "k", 40, 400, 40); err != nil || w != 0 {
		t.Errorf("Take on a working shared limiter = %s, %v; want the full burst", w, err)
	}
}

func TestLimiterArgs(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		n, rate, burst int64
		wantBurst      int64
		wantLimited    bool
		wantErr        error
	}{
		{1, 60, 10, 10, true, nil},
		{1, 60, 0, 60, true, nil},
		{61, 60, 0, 60, false, store.ErrExceedsBurst},
		{5, 0, 0, 0, false, nil},
		{0, 60, 10, 10, false, nil},
	} {
		b, limited, err := store.LimiterArgs(c.n, c.rate, c.burst)
		if b != c.wantBurst || limited != c.wantLimited || !errors.Is(err, c.wantErr) {
			t.Errorf("LimiterArgs(%d, %d, %d) = %d, %t, %v; want %d, %t, %v",
				c.n, c.rate, c.burst, b, limited, err, c.wantBurst, c.wantLimited, c.wantErr)
		}
	}
}
