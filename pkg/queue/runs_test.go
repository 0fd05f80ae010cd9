package queue

import (
	"testing"
	"time"
)

// TestRunTableAgesOnlyWhileCurrent: while the run directory cannot be
// read (a NATS cluster electing a leader), a run's entry does not age, so
// the run is not taken for abandoned; once the directory answers again it
// ages from where it stopped.
func TestRunTableAgesOnlyWhileCurrent(t *testing.T) {
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rt := NewRunTable()
	rt.now = func() time.Time { return clock }
	proc := &ProcessInfo{Process: "p1", Addr: "127.0.0.1:1", Weight: 1, Runs: []ProcessRun{{RunID: "r1", Weight: 1}}}
	rt.entries[ProcessKey("p1")] = dirEntry{proc: proc, listed: map[string]ProcessRun{RunToken("r1"): proc.Runs[0]}, seen: clock}
	rt.byRun[RunToken("r1")] = ProcessKey("p1")
	live := func() bool { _, _, l := rt.Lookup("r1"); return l }

	clock = clock.Add(StaleAfter / 2)
	rt.mu.Lock()
	rt.setCurrentLocked(false)
	rt.mu.Unlock()
	clock = clock.Add(3 * StaleAfter)
	if !live() || len(rt.Live()) != 1 {
		t.Fatalf("run stale after %s while the directory was unreadable", 3*StaleAfter)
	}
	rt.mu.Lock()
	rt.setCurrentLocked(true)
	rt.mu.Unlock()
	clock = clock.Add(StaleAfter/2 - time.Second)
	if !live() {
		t.Fatal("run stale before it went StaleAfter unrefreshed while the directory was current")
	}
	clock = clock.Add(2 * time.Second)
	if live() || len(rt.Live()) != 0 {
		t.Fatal("run still live after StaleAfter unrefreshed while the directory was current")
	}
}
