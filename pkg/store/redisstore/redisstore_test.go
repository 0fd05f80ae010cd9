package redisstore_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"go.uber.org/goleak"

	"github.com/skillfleet/skillfleet/pkg/config"
	"github.com/skillfleet/skillfleet/pkg/store"
	"github.com/skillfleet/skillfleet/pkg/store/redisstore"
	"github.com/skillfleet/skillfleet/pkg/store/storetest"
)

func TestMain(m *testing.M) {
	redis.SetLogger(storetest.QuietRedisLogger{})
	goleak.VerifyTestMain(m)
}

func newStore(t *testing.T, o redisstore.Options) *redisstore.Store {
	t.Helper()
	s, err := redisstore.New(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	srv := storetest.RedisServer(t)
	var n atomic.Int64
	storetest.Run(t, func(t *testing.T) storetest.Stores {
		// One server, a fresh key prefix per subtest.
		s := newStore(t, redisstore.Options{Addr: srv.Addr(), Prefix: fmt.Sprintf("t%d:", n.Add(1))})
		return storetest.Stores{
			Cache: s.Cache(), Counters: s.Counters(), Registry: s.Registry(),
			Leases: s.Leases(), Limiter: s.Limiter(),
		}
	})
}

// TestKeysUnderPrefix checks that every key the store writes sits under its
// prefix and is one of the names in keys.go.
func TestKeysUnderPrefix(t *testing.T) {
	t.Parallel()
	srv := storetest.RedisServer(t)
	s := newStore(t, redisstore.Options{URL: srv.URL(), Prefix: "pfx:"})
	ctx := t.Context()
	mustOK(t, s.Cache().Put(ctx, store.CacheKey("a"), []byte("v"), 0))
	_, err := s.Counters().Incr(ctx, "tasks", 1)
	mustOK(t, err)
	mustOK(t, s.Registry().Heartbeat(ctx, store.WorkerInfo{ID: "w"}, time.Minute))
	_, _, err = s.Leases().Acquire(ctx, "run", "me", time.Minute)
	mustOK(t, err)
	_, err = s.Limiter().Take(ctx, "openai/gpt", 1, 60, 10)
	mustOK(t, err)

	keys := srv.Command(t, "KEYS", "*")
	want := map[string]bool{
		"pfx:" + store.KeyCache + store.CacheKey("a"): true,
		"pfx:" + store.KeyCounters:                    true,
		"pfx:" + store.KeyWorkers:                     true,
		"pfx:" + store.KeyWorkerInfo:                  true,
		"pfx:" + store.KeyLease + "run":               true,
		"pfx:" + store.KeyLeaseToken + "run":          true,
		"pfx:" + store.KeyLimit + "openai/gpt":        true,
	}
	for _, k := range keys {
		if !want[k] {
			t.Errorf("unexpected key %q", k)
		}
		delete(want, k)
	}
	for k := range want {
		t.Errorf("missing key %q", k)
	}
	// Cache entries always carry a TTL, so maxmemory-policy volatile-lru
	// can evict them; counters never expire.
	if ttl := srv.Command(t, "PTTL", "pfx:"+store.KeyCache+store.CacheKey("a")); ttl[0] == "-1" {
		t.Error("cache entry has no TTL")
	}
	if ttl := srv.Command(t, "PTTL", "pfx:"+store.KeyCounters); ttl[0] != "-1" {
		t.Errorf("counters PTTL = %s, want -1 (no expiry)", ttl[0])
	}
}

// TestRestart kills the real server mid-test: operations fail fast while
// it is down (a degrading cache reads misses), and work again once it is
// back, without any reconnect call.
func TestRestart(t *testing.T) {
	t.Parallel()
	srv := storetest.RedisServer(t, storetest.TCP())
	s := newStore(t, redisstore.Options{Addr: srv.Addr()})
	cache := store.Degrading(s.Cache(), nil)
	ctx := t.Context()
	key := store.RolloutKey{SkillHash: "s", ItemID: "i", Model: "m"}.Key()

	mustOK(t, cache.Put(ctx, key, []byte("paid result"), 0))
	if v, ok, err := cache.Get(ctx, key); err != nil || !ok || string(v) != "paid result" {
		t.Fatalf("Get before the restart = %q, %t, %v", v, ok, err)
	}
	tokA, ok, err := s.Leases().Acquire(ctx, "run", "a", time.Minute)
	if err != nil || !ok {
		t.Fatalf("Acquire = %d, %t, %v", tokA, ok, err)
	}

	srv.Kill()
	start := time.Now()
	if _, _, err := s.Cache().Get(ctx, key); err == nil {
		t.Fatal("raw Get with the server down: no error")
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("raw Get took %s to fail, want a fast error", d)
	}
	if v, ok, err := cache.Get(ctx, key); err != nil || ok || v != nil {
		t.Fatalf("degrading Get with the server down = %q, %t, %v; want a miss", v, ok, err)
	}
	mustOK(t, cache.Put(ctx, key, []byte("dropped"), 0))
	if _, err := s.Counters().Incr(ctx, "n", 1); err == nil {
		t.Fatal("Incr with the server down: no error")
	}
	if _, err := s.Leases().Renew(ctx, "run", "a", tokA, time.Minute); err == nil {
		t.Fatal("Renew with the server down: no error")
	}
	if st := cache.Stats(); st.Errors < 2 {
		t.Errorf("Stats().Errors = %d, want at least 2", st.Errors)
	}

	srv.Start()
	// The pool holds connections to the dead server; the store must get
	// past them on its own. A bounded poll: the new process may need a moment.
	deadline := time.Now().Add(5 * time.Second)
	for {
		_, err := s.Counters().Incr(ctx, "n", 1)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("store did not recover after the restart: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	// The restarted server kept nothing (no persistence): a miss, not an error.
	if v, ok, err := cache.Get(ctx, key); err != nil || ok {
		t.Fatalf("Get after the restart = %q, %t, %v; want a miss", v, ok, err)
	}
	mustOK(t, cache.Put(ctx, key, []byte("paid again"), 0))
	if v, ok, err := cache.Get(ctx, key); err != nil || !ok || string(v) != "paid again" {
		t.Fatalf("Get after Put after the restart = %q, %t, %v", v, ok, err)
	}

	// The holder keeps its lease across the data loss, and fencing tokens
	// still grow for whoever comes next.
	if ok, err := s.Leases().Renew(ctx, "run", "a", tokA, time.Minute); err != nil || !ok {
		t.Fatalf("holder's Renew after the restart = %t, %v; want true", ok, err)
	}
	if _, ok, _ := s.Leases().Acquire(ctx, "run", "b", time.Minute); ok {
		t.Fatal("Acquire(b) after the holder renewed = true")
	}
	mustOK(t, s.Leases().Release(ctx, "run", "a", tokA))
	tokB, ok, err := s.Leases().Acquire(ctx, "run", "b", time.Minute)
	if err != nil || !ok || tokB <= tokA {
		t.Fatalf("Acquire(b) after release = %d, %t, %v; want a token > %d", tokB, ok, err, tokA)
	}
}

// TestLeaderAcrossRestart: while Redis is down the leader stops claiming
// the lease once its TTL has passed, and claims it again once Redis is
// back, without losing it.
func TestLeaderAcrossRestart(t *testing.T) {
	t.Parallel()
	srv := storetest.RedisServer(t)
	s := newStore(t, redisstore.Options{Addr: srv.Addr()})
	ld := store.NewLeader(s.Leases(), store.LeaderConfig{Run: "run", Owner: "coord-a", TTL: 600 * time.Millisecond, RenewEvery: 150 * time.Millisecond})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- ld.Run(ctx) }()
	if err := ld.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	other := store.NewLeader(s.Leases(), store.LeaderConfig{Run: "run", Owner: "coord-b"})
	err := other.Run(t.Context())
	var held *store.LeaseHeldError
	if !errors.As(err, &held) || held.Holder.Owner != "coord-a" {
		t.Fatalf("second leader's Run = %v, want a LeaseHeldError naming coord-a", err)
	}
	if !strings.Contains(err.Error(), `"coord-a"`) {
		t.Errorf("refusal message %q does not name the holder", err)
	}

	srv.Kill()
	poll(t, 5*time.Second, "leader gives up the claim while Redis is down", func() bool { return !ld.Held() })
	srv.Start()
	poll(t, 5*time.Second, "leader holds the lease again", ld.Held)
	select {
	case <-ld.Lost():
		t.Fatal("lease reported lost across a restart nobody else used")
	default:
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run after cancel = %v, want nil", err)
	}
	if _, ok, err := s.Leases().Holder(t.Context(), "run"); err != nil || ok {
		t.Fatalf("Holder after the leader stopped = %t, %v; want the lease released", ok, err)
	}
}

func TestCredentials(t *testing.T) {
	t.Parallel()
	srv := storetest.RedisServer(t, storetest.Args(
		"--user", "default", "off",
		"--user", "fleet", "on", ">s3cret-pw", "~*", "&*", "+@all"))
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "password")
	mustOK(t, os.WriteFile(pwFile, []byte("s3cret-pw\n"), 0o600))
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	noEnv := env(nil)

	for _, c := range []struct {
		name   string
		o      redisstore.Options
		wantOK bool
	}{
		{"none", redisstore.Options{Addr: srv.Addr(), Getenv: noEnv}, false},
		{"fields", redisstore.Options{Addr: srv.Addr(), Username: "fleet", Password: config.NewSecret("s3cret-pw"), Getenv: noEnv}, true},
		{"file", redisstore.Options{Addr: srv.Addr(), Username: "fleet", PasswordFile: pwFile, Getenv: noEnv}, true},
		{"env", redisstore.Options{Addr: srv.Addr(), Getenv: env(map[string]string{
			redisstore.EnvUsername: "fleet", redisstore.EnvPassword: "s3cret-pw"})}, true},
		{"env file", redisstore.Options{Addr: srv.Addr(), Getenv: env(map[string]string{
			redisstore.EnvUsername: "fleet", redisstore.EnvPasswordFile: pwFile})}, true},
		{"url user, env password", redisstore.Options{URL: "unix://fleet@" + srv.Addr(), Getenv: env(map[string]string{
			redisstore.EnvPassword: "s3cret-pw"})}, true},
		{"wrong password", redisstore.Options{Addr: srv.Addr(), Username: "fleet", Password: config.NewSecret("nope"), Getenv: noEnv}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t, c.o)
			err := s.Ping(t.Context())
			if (err == nil) != c.wantOK {
				t.Fatalf("Ping = %v, want ok %t", err, c.wantOK)
			}
			if strings.Contains(s.String(), "s3cret") || (err != nil && strings.Contains(err.Error(), "s3cret")) {
				t.Fatalf("password printed: %q / %v", s.String(), err)
			}
		})
	}
}

func TestOptionErrorsHidePasswords(t *testing.T) {
	t.Parallel()
	for _, u := range []string{"redis://u:hunter2@host:notaport/0", "redis://u:hunter2@host/0\x7f", "ftp://u:hunter2@host"} {
		_, err := redisstore.New(redisstore.Options{URL: u})
		if err == nil {
			t.Errorf("New(%q): no error", u)
			continue
		}
		if strings.Contains(err.Error(), "hunter2") {
			t.Errorf("New(bad URL) error %q shows the password", err)
		}
	}
	if _, err := redisstore.New(redisstore.Options{}); err == nil {
		t.Error("New(no address): no error")
	}
	_, err := redisstore.New(redisstore.Options{Addr: "127.0.0.1:1", PasswordFile: "/nonexistent/pw"})
	if err == nil {
		t.Error("New(missing password file): no error")
	}
	s, err := redisstore.New(redisstore.Options{URL: "redis://u:hunter2@127.0.0.1:1/3"})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if strings.Contains(s.String(), "hunter2") || !strings.Contains(s.String(), "db 3") {
		t.Errorf("String() = %q", s.String())
	}
}

func mustOK(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// poll waits for cond across processes, up to limit.
func poll(t *testing.T, limit time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s", what, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestLimiterLevel: Level reads what Take left in a bucket, on a real
// redis-server, and changes nothing.
func TestLimiterLevel(t *testing.T) {
	t.Parallel()
	srv := storetest.RedisServer(t)
	s := newStore(t, redisstore.Options{Addr: srv.Addr(), Prefix: "lvl:"})
	ctx := t.Context()
	lim := s.Limiter()
	level := func(key string, rate, burst int64) float64 {
		t.Helper()
		v, err := lim.Level(ctx, key, rate, burst)
		if err != nil {
			t.Fatalf("Level(%q): %v", key, err)
		}
		return v
	}
	if got := level("unused", 60, 0); got != 60 {
		t.Errorf("Level(unused bucket, 60/min) = %v, want 60 (full)", got)
	}
	// 6 a minute refills one token every 10 s; the reads below run within
	// a few seconds of the takes, so the level moves by less than one.
	t0 := time.Now()
	for i := range 4 {
		if w, err := lim.Take(ctx, "b", 1, 6, 6); err != nil || w != 0 {
			t.Fatalf("Take %d = %v, %v; want granted", i, w, err)
		}
	}
	for i := range 3 {
		got := level("b", 6, 6)
		refill := time.Since(t0).Seconds() / 10
		if got < 2 || got > 2+refill+1e-6 {
			t.Errorf("read %d: Level after 4 of 6 taken = %v, want 2 (+%.3f refilled)", i, got, refill)
		}
	}
	// Take agrees with Level (unless a whole token refilled in between,
	// on a machine slow enough to take 10 s for the calls above).
	if w, err := lim.Take(ctx, "b", 3, 6, 6); err != nil || (w == 0 && time.Since(t0) < 9*time.Second) {
		t.Fatalf("Take(3) with about 2 left = %v, %v; want a wait", w, err)
	}
	if w, err := lim.Take(ctx, "b", 2, 6, 6); err != nil || w != 0 {
		t.Fatalf("Take(2) with about 2 left = %v, %v; want granted", w, err)
	}
	if got, refill := level("b", 6, 6), time.Since(t0).Seconds()/10; got > refill+1e-6 {
		t.Errorf("Level of an emptied bucket = %v, want 0 (+%.3f refilled)", got, refill)
	}
	// A larger tokens bucket, drawn by several takes.
	for _, n := range []int64{1000, 2500, 500} {
		if w, err := lim.Take(ctx, "tpm", n, 100000, 0); err != nil || w != 0 {
			t.Fatalf("Take(%d) = %v, %v", n, w, err)
		}
	}
	if got := level("tpm", 100000, 0); got < 96000 || got > 96000+100000*time.Since(t0).Minutes()+1e-6 {
		t.Errorf("Level after 4000 of 100000 taken = %v, want 96000 plus what refilled", got)
	}
	if _, err := lim.Level(ctx, "b", 0, 6); err == nil {
		t.Error("Level with no rate: no error")
	}
}
