package dispatch_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/coordinator/dispatch"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// runJournal runs j's writer until the test ends (or closes j itself).
func runJournal(tb testing.TB, j *dispatch.Journal) {
	tb.Helper()
	done := make(chan error, 1)
	go func() { done <- j.Run(context.Background()) }()
	tb.Cleanup(func() {
		_ = j.Close()
		if err := <-done; err != nil {
			tb.Errorf("journal Run: %v", err)
		}
	})
}

// appendWait appends one result and waits for its callback.
func appendWait(t *testing.T, j *dispatch.Journal, id string) error {
	t.Helper()
	ch := make(chan error, 1)
	j.Append(&pb.Result{TaskId: id, Outcome: pb.Outcome_OUTCOME_OK}, func(err error) { ch <- err })
	select {
	case err := <-ch:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("append of %s: no callback in 10 s", id)
		return nil
	}
}

// TestJournalWritesOnlyWhileRunning: opening a journal starts no writer;
// an append made before Run waits for it and is written once Run starts;
// Run returns once the journal is closed, after writing what was queued;
// a second Run is refused; appends after the end fail at once; appends
// queued on a journal closed without running fail instead of hanging.
func TestJournalWritesOnlyWhileRunning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.journal")
	j, err := dispatch.OpenJournalIndex(path, true)
	if err != nil {
		t.Fatal(err)
	}
	early := make(chan error, 1)
	j.Append(&pb.Result{TaskId: "r/early"}, func(err error) { early <- err })
	select {
	case err := <-early:
		t.Fatalf("an append before Run was answered (%v): the journal writes without Run", err)
	case <-time.After(200 * time.Millisecond):
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- j.Run(ctx) }()
	if err := <-early; err != nil {
		t.Fatalf("the early append once Run started: %v", err)
	}
	if err := appendWait(t, j, "r/during"); err != nil {
		t.Fatal(err)
	}
	if err := j.Run(ctx); err == nil {
		t.Error("a second Run of a running journal was accepted")
	}
	cancel()
	if err := <-ran; err != nil {
		t.Fatalf("Run after its context ended: %v", err)
	}
	if err := appendWait(t, j, "r/late"); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("an append after Run ended = %v, want an error naming %s", err, path)
	}
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j2, got, err := dispatch.OpenJournal(path, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].GetTaskId() != "r/early" || got[1].GetTaskId() != "r/during" {
		t.Fatalf("journal holds %v, want r/early and r/during", got)
	}
	orphan := make(chan error, 1)
	j2.Append(&pb.Result{TaskId: "r/orphan"}, func(err error) { orphan <- err })
	if err := j2.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-orphan; err == nil {
		t.Error("an append queued on a journal closed without running succeeded")
	}
}
