package campaign

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// flakyEnds is the campaign's NATS store, except that the first failEnds
// writes of a cell's end fail as a bucket without a leader does.
type flakyEnds struct {
	Store
	failEnds atomic.Int32
	failed   atomic.Int32
}

var errNoLeader = errors.New("nats: JetStream system temporarily unavailable")

func (f *flakyEnds) Put(ctx context.Context, st CellStatus, rev uint64) (uint64, error) {
	if st.State == StateDone && f.failEnds.Add(-1) >= 0 {
		f.failed.Add(1)
		return 0, errNoLeader
	}
	return f.Store.Put(ctx, st, rev)
}

// syncWriter is an Out the test reads while the campaign writes.
type syncWriter struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestCellEndSurvivesTransientStoreErrors: the write that ends a cell
// fails a few times (the bucket is electing a leader); it is retried, the
// cell ends done once, run once, and is not reported as handed over.
func TestCellEndSurvivesTransientStoreErrors(t *testing.T) {
	emb := embeddedNATS(t)
	spec := writeSpec(t, specOf(2, 2, ""))
	nc, err := emb.Connect("member")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := NewKVStore(t.Context(), js, spec.Name, 1)
	if err != nil {
		t.Fatal(err)
	}
	store := &flakyEnds{Store: kv}
	store.failEnds.Store(5)
	runs := newFakeRuns(2, 10*time.Millisecond)
	var out syncWriter
	dir := t.TempDir()
	c, err := New(Config{Spec: spec, Dir: dir, Store: store, Member: "a", LeaseTTL: 3 * time.Second, Out: &out}, Deps{Run: runs.run})
	if err != nil {
		t.Fatal(err)
	}
	f, err := c.Run(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if store.failed.Load() != 5 {
		t.Fatalf("%d end writes failed, want 5: the test did not inject its faults", store.failed.Load())
	}
	if got := f.Counts()[StateDone]; got != 2 {
		t.Errorf("%d of 2 cells done: %+v", got, f.Cells)
	}
	for d, n := range runs.started {
		if n != 1 {
			t.Errorf("%s ran %d times, want once", d, n)
		}
	}
	if strings.Contains(out.String(), "handed over") {
		t.Errorf("a transient store error was reported as a hand-over:\n%s", out.String())
	}
}

// TestMemberThatCannotRenewStopsItsCells: a member cut off from NATS
// while it runs a cell stops the cell itself (and says so) before its
// lease lapses, so the member that takes the cell over never runs it
// while the first still does.
func TestMemberThatCannotRenewStopsItsCells(t *testing.T) {
	emb := embeddedNATS(t)
	spec := writeSpec(t, specOf(1, 1, ""))
	dir := t.TempDir()
	const ttl = 3 * time.Second
	runsA := newFakeRuns(100000, 20*time.Millisecond)
	var outA syncWriter
	a := startMemberTTL(t, emb, spec, dir, "a", runsA, ttl, &outA)
	deadline := time.Now().Add(30 * time.Second)
	for runsA.active.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if runsA.active.Load() == 0 {
		t.Fatal("the cell never started on a")
	}
	runsB := newFakeRuns(2, 10*time.Millisecond)
	var outB syncWriter
	b := startMemberTTL(t, emb, spec, dir, "b", runsB, ttl, &outB)
	cut := time.Now()
	a.nc.Close()
	// a stops its run before its lease lapses for the others.
	var stoppedA time.Duration
	for time.Since(cut) < 3*ttl {
		if runsA.active.Load() == 0 {
			stoppedA = time.Since(cut)
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	if stoppedA == 0 {
		t.Fatalf("a still runs its cell %s after it was cut off (lease TTL %s)", 3*ttl, ttl)
	}
	runsB.mu.Lock()
	startedB := runsB.started[filepath.Join(dir, "cells", "c0")]
	runsB.mu.Unlock()
	if startedB != 0 || runsB.active.Load() != 0 {
		t.Errorf("b ran the cell before a had stopped it")
	}
	if !strings.Contains(outA.String(), "self-fencing") {
		t.Errorf("a did not say it stopped its cell:\n%s", outA.String())
	}
	wait(t, b)
	if b.err != nil || b.f.Counts()[StateDone] != 1 {
		t.Fatalf("b: %v, %+v", b.err, b.f)
	}
	a.cancel()
	wait(t, a)
	t.Logf("a stopped its cell %s after it was cut off (lease TTL %s, margin %s)", stoppedA.Round(time.Millisecond), ttl, fenceMargin(ttl))
}

// failingBeats is the campaign's NATS store, except that beats fail while
// failing is set (the member cannot renew its leases, as when it is
// starved of CPU or the bucket elects a leader), and every cell end
// written is kept in order.
type failingBeats struct {
	Store
	failing atomic.Bool
	mu      sync.Mutex
	ends    []string
}

func (f *failingBeats) Beat(ctx context.Context, b Beat) error {
	if f.failing.Load() {
		return errNoLeader
	}
	return f.Store.Beat(ctx, b)
}

func (f *failingBeats) Put(ctx context.Context, st CellStatus, rev uint64) (uint64, error) {
	if st.Ended != nil {
		f.mu.Lock()
		f.ends = append(f.ends, st.State)
		f.mu.Unlock()
	}
	return f.Store.Put(ctx, st, rev)
}

// TestFencedCellIsQueuedNotStopped: a member that cannot renew its lease
// stops its cell (self-fencing) while the store still takes writes; the
// run returns context.Canceled. The cell's end is recorded as queued, for
// a member to take it over, not as stopped (which waits for the campaign
// to be run again): once the beats come back the cell runs again here and
// the campaign ends with it done.
func TestFencedCellIsQueuedNotStopped(t *testing.T) {
	emb := embeddedNATS(t)
	spec := writeSpec(t, specOf(1, 1, ""))
	nc, err := emb.Connect("member")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := NewKVStore(t.Context(), js, spec.Name, 1)
	if err != nil {
		t.Fatal(err)
	}
	store := &failingBeats{Store: kv}
	store.failing.Store(true)
	const ttl = 3 * time.Second
	runs := newFakeRuns(150, 20*time.Millisecond) // 3 s a run: fenced 2 s in
	var out syncWriter
	c, err := New(Config{Spec: spec, Dir: t.TempDir(), Store: store, Member: "a", LeaseTTL: ttl, Out: &out}, Deps{Run: runs.run})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		deadline := time.Now().Add(time.Minute)
		for !strings.Contains(out.String(), "self-fencing") && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		store.failing.Store(false)
	}()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	f, err := c.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "self-fencing") {
		t.Fatalf("the member never fenced its cell:\n%s", out.String())
	}
	store.mu.Lock()
	ends := slices.Clone(store.ends)
	store.mu.Unlock()
	if len(ends) != 2 || ends[0] != StateQueued || ends[1] != StateDone {
		t.Errorf("cell ends recorded %v, want [%s %s] (fenced, then run again)\n%s", ends, StateQueued, StateDone, out.String())
	}
	if got := f.Counts()[StateDone]; got != 1 {
		t.Errorf("%d of 1 cell done: %+v", got, f.Cells)
	}
}
