package dispatch_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/coordinator/dispatch"
	"github.com/skillfleet/skillfleet/internal/testfs"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// TestJournalFullDiskFailsCleanly fills a 64 KiB tmpfs with results. The
// append that does not fit fails with "no space left"; every later one
// fails at once (no retry loop); the dispatcher reports the failure once
// through OnFatal and refuses new tasks; the file keeps exactly the
// acknowledged results, so a resume after the disk grows reads them all
// and appends again.
func TestJournalFullDiskFailsCleanly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	mnt := testfs.Tmpfs(t, "64k")
	path := filepath.Join(mnt, "results.journal")
	j, _, err := dispatch.OpenJournal(path, false)
	if err != nil {
		t.Fatal(err)
	}
	runJournal(t, j)
	var fatals atomic.Int32
	var fatalErr atomic.Value
	d := dispatch.New(dispatch.Options{Journal: j, OnFatal: func(err error) { fatals.Add(1); fatalErr.Store(err) }})
	record := func(i int) (pb.ReportAck_Status, error) {
		type ack struct {
			st  pb.ReportAck_Status
			err error
		}
		ch := make(chan ack, 1)
		d.Record(&pb.Result{TaskId: fmt.Sprintf("r/%04d", i), Outcome: pb.Outcome_OUTCOME_OK, Error: strings.Repeat("x", 2000)},
			func(st pb.ReportAck_Status, err error) { ch <- ack{st, err} })
		select {
		case a := <-ch:
			return a.st, a.err
		case <-time.After(10 * time.Second):
			t.Fatalf("result %d: no answer in 10 s (the journal stalls)", i)
			return 0, nil
		}
	}
	acked := 0
	var failErr error
	for i := range 200 {
		st, err := record(i)
		if err != nil {
			failErr = err
			break
		}
		if st != pb.ReportAck_STATUS_RECORDED {
			t.Fatalf("result %d: status %v", i, st)
		}
		acked++
	}
	if failErr == nil || !strings.Contains(failErr.Error(), "no space left") || !strings.Contains(failErr.Error(), path) {
		t.Fatalf("after %d results the append error is %v, want no space left naming %s", acked, failErr, path)
	}
	for i := range 3 {
		if _, err := record(1000 + i); err == nil {
			t.Fatal("an append after the failure succeeded")
		}
	}
	if fatals.Load() != 1 || d.Err() == nil || !errors.Is(fatalErr.Load().(error), syscall.ENOSPC) {
		t.Errorf("OnFatal called %d times with %v, Err %v; want once with ENOSPC", fatals.Load(), fatalErr.Load(), d.Err())
	}
	if _, err := d.Submit(t.Context(), &pb.Task{Id: "r/new", Kind: &pb.Task_Noop{Noop: &pb.NoopTask{}}}); err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Errorf("Submit after the journal failed = %v, want the journal's error", err)
	}
	_ = j.Close()

	testfs.Resize(t, mnt, "4m")
	j, got, err := dispatch.OpenJournal(path, false)
	if err != nil {
		t.Fatal(err)
	}
	runJournal(t, j)
	defer func() { _ = j.Close() }()
	if len(got) != acked {
		t.Fatalf("reopened journal holds %d results, want the %d acknowledged", len(got), acked)
	}
	for i, r := range got {
		if r.GetTaskId() != fmt.Sprintf("r/%04d", i) {
			t.Fatalf("result %d is %s", i, r.GetTaskId())
		}
	}
	done := make(chan error, 1)
	j.Append(&pb.Result{TaskId: "r/after"}, func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Errorf("append once space is back = %v", err)
	}
}
