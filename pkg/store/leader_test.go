package store_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/skillfleet/skillfleet/pkg/store"
	"github.com/skillfleet/skillfleet/pkg/store/memstore"
)

// The leader tests run in a synctest bubble: the memstore reads the
// bubble's fake clock, so leases expire and renewals tick without waiting.

const (
	testTTL   = 15 * time.Second
	testRenew = 5 * time.Second
)

// flakyLease fails every call while down, as a Redis that went away.
type flakyLease struct {
	store.Lease
	down atomic.Bool
}

func (f *flakyLease) Acquire(ctx context.Context, run, owner string, ttl time.Duration) (int64, bool, error) {
	if f.down.Load() {
		return 0, false, errDown
	}
	return f.Lease.Acquire(ctx, run, owner, ttl)
}

func (f *flakyLease) Renew(ctx context.Context, run, owner string, token int64, ttl time.Duration) (bool, error) {
	if f.down.Load() {
		return false, errDown
	}
	return f.Lease.Renew(ctx, run, owner, token, ttl)
}

func (f *flakyLease) Release(ctx context.Context, run, owner string, token int64) error {
	if f.down.Load() {
		return errDown
	}
	return f.Lease.Release(ctx, run, owner, token)
}

type leaderBundle struct {
	leases *memstore.Leases
	flaky  *flakyLease
}

func leaderSetup() leaderBundle {
	l := memstore.New(memstore.Options{}).Leases()
	return leaderBundle{leases: l, flaky: &flakyLease{Lease: l}}
}

// start runs a leader in the bubble and returns it with a stop function
// that cancels it and returns Run's error.
func startLeader(t *testing.T, lease store.Lease, owner string, wait bool) (*store.Leader, func() error) {
	t.Helper()
	ld := store.NewLeader(lease, store.LeaderConfig{Run: "run", Owner: owner, TTL: testTTL, RenewEvery: testRenew, Wait: wait})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- ld.Run(ctx) }()
	return ld, func() error {
		cancel()
		return <-done
	}
}

func TestLeaderRefusesSecondCoordinator(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := leaderSetup()
		a, stopA := startLeader(t, b.leases, "coord-a", false)
		if err := a.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		if !a.Held() || a.Token() <= 0 {
			t.Fatalf("after Wait: Held() = %t, Token() = %d", a.Held(), a.Token())
		}
		second := store.NewLeader(b.leases, store.LeaderConfig{Run: "run", Owner: "coord-b", TTL: testTTL})
		err := second.Run(t.Context())
		var held *store.LeaseHeldError
		if !errors.As(err, &held) || held.Holder.Owner != "coord-a" || held.Holder.Token != a.Token() {
			t.Fatalf("second Run = %v, want a LeaseHeldError naming coord-a", err)
		}
		for _, want := range []string{`run "run"`, `"coord-a"`, "fencing token 1", "stop it or wait"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("message %q lacks %q", err, want)
			}
		}
		if second.Held() {
			t.Error("refused leader Held() = true")
		}
		if err := second.Wait(t.Context()); !errors.As(err, &held) {
			t.Errorf("refused leader Wait = %v, want the LeaseHeldError", err)
		}
		// Kept alive by renewals well past the TTL.
		time.Sleep(3 * testTTL)
		if !a.Held() {
			t.Fatal("leader lost its claim while renewing")
		}
		if err := stopA(); err != nil {
			t.Fatalf("Run after cancel = %v, want nil", err)
		}
		if a.Held() {
			t.Error("Held() after Run returned = true")
		}
		if _, ok, _ := b.leases.Holder(t.Context(), "run"); ok {
			t.Error("lease still held after the leader stopped; want it released")
		}
	})
}

func TestLeaderWaitsForRelease(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := leaderSetup()
		a, stopA := startLeader(t, b.leases, "coord-a", false)
		_ = a.Wait(t.Context())
		waiter, stopB := startLeader(t, b.leases, "coord-b", true)
		time.Sleep(2 * testTTL)
		synctest.Wait()
		if waiter.Held() {
			t.Fatal("waiting leader holds the lease while the first renews it")
		}
		_ = stopA()
		begin := time.Now()
		if err := waiter.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(begin); d > testRenew {
			t.Errorf("successor took %s after a release, want at most one poll (%s)", d, testRenew)
		}
		if waiter.Token() <= a.Token() {
			t.Errorf("successor token %d, want > %d", waiter.Token(), a.Token())
		}
		_ = stopB()
	})
}

func TestLeaderWaitsForExpiryOfDeadHolder(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := leaderSetup()
		// A holder that died without releasing.
		if _, ok, _ := b.leases.Acquire(t.Context(), "run", "dead", testTTL); !ok {
			t.Fatal("setup acquire failed")
		}
		begin := time.Now()
		waiter, stop := startLeader(t, b.leases, "coord-b", true)
		if err := waiter.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(begin); d < testTTL || d > testTTL+testRenew {
			t.Errorf("took over after %s, want between the TTL and one poll more", d)
		}
		_ = stop()
	})
}

func TestLeaderBlocksWhileStoreDownThenResumes(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := leaderSetup()
		ld, stop := startLeader(t, b.flaky, "coord-a", false)
		_ = ld.Wait(t.Context())
		b.flaky.down.Store(true)
		time.Sleep(testTTL - time.Second)
		if !ld.Held() {
			t.Fatal("Held() = false before the TTL since the last renewal passed")
		}
		time.Sleep(testRenew)
		if ld.Held() {
			t.Fatal("Held() = true after the TTL passed with the store down")
		}
		if err := ld.Fence(t.Context()); err == nil || errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("Fence with the store down = %v, want the store's error", err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), testRenew)
		if err := ld.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Wait with the store down = %v, want it to block", err)
		}
		cancel()
		// The lease expired in the store meanwhile; nobody else took it, so
		// the next renewal takes it back with the same token.
		b.flaky.down.Store(false)
		if err := ld.Wait(t.Context()); err != nil {
			t.Fatal(err)
		}
		if ok, _ := b.leases.Check(t.Context(), "run", ld.Token()); !ok {
			t.Error("store does not show the leader's token after it resumed")
		}
		select {
		case <-ld.Lost():
			t.Error("Lost() closed although nobody else took the lease")
		default:
		}
		if err := stop(); err != nil {
			t.Fatalf("Run = %v", err)
		}
	})
}

func TestLeaderLosesToAnotherOwner(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := leaderSetup()
		ld := store.NewLeader(b.flaky, store.LeaderConfig{Run: "run", Owner: "coord-a", TTL: testTTL, RenewEvery: testRenew})
		done := make(chan error, 1)
		go func() { done <- ld.Run(t.Context()) }()
		_ = ld.Wait(t.Context())
		b.flaky.down.Store(true)
		time.Sleep(testTTL + time.Second)
		tok, ok, _ := b.leases.Acquire(t.Context(), "run", "coord-b", time.Hour)
		if !ok {
			t.Fatal("coord-b could not take the expired lease")
		}
		b.flaky.down.Store(false)
		if err := <-done; !errors.Is(err, store.ErrLeaseLost) {
			t.Fatalf("Run = %v, want ErrLeaseLost", err)
		}
		select {
		case <-ld.Lost():
		default:
			t.Fatal("Lost() not closed")
		}
		if ld.Held() {
			t.Error("Held() = true after the loss")
		}
		if err := ld.Wait(t.Context()); !errors.Is(err, store.ErrLeaseLost) {
			t.Errorf("Wait after the loss = %v, want ErrLeaseLost", err)
		}
		if err := ld.Fence(t.Context()); err == nil {
			t.Error("Fence after the loss = nil")
		}
		if h, _, _ := b.leases.Holder(t.Context(), "run"); h.Owner != "coord-b" || h.Token != tok {
			t.Errorf("Holder = %+v; the loser must not disturb coord-b's lease", h)
		}
	})
}

func TestLeaderFence(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := leaderSetup()
		ld := store.NewLeader(b.leases, store.LeaderConfig{Run: "run", Owner: "coord-a", TTL: testTTL})
		if err := ld.Fence(t.Context()); !errors.Is(err, store.ErrNotLeader) {
			t.Fatalf("Fence before Run = %v, want ErrNotLeader", err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- ld.Run(ctx) }()
		_ = ld.Wait(t.Context())
		if err := ld.Fence(t.Context()); err != nil {
			t.Fatalf("Fence while held = %v", err)
		}
		if err := ld.Run(t.Context()); err == nil {
			t.Error("second Run = nil, want an error")
		}
		cancel()
		<-done
		if err := ld.Fence(t.Context()); !errors.Is(err, store.ErrNotLeader) {
			t.Fatalf("Fence after Run returned = %v, want ErrNotLeader", err)
		}
		if err := ld.Wait(t.Context()); !errors.Is(err, store.ErrNotLeader) {
			t.Fatalf("Wait after Run returned = %v, want ErrNotLeader", err)
		}
	})
}

func TestLeaderConfigRequired(t *testing.T) {
	t.Parallel()
	ld := store.NewLeader(memstore.New(memstore.Options{}).Leases(), store.LeaderConfig{Run: "run"})
	if err := ld.Run(t.Context()); err == nil {
		t.Fatal("Run without an owner = nil, want an error")
	}
}
