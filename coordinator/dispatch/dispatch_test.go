package dispatch_test

import (
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"github.com/skillfleet/skillfleet/coordinator/dispatch"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

func TestJournalSurvivesReopenAndTornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "results.journal")
	j, _, err := dispatch.OpenJournal(path, false)
	if err != nil {
		t.Fatal(err)
	}
	runJournal(t, j)
	var wg sync.WaitGroup
	for i := range 100 {
		wg.Add(1)
		j.Append(&pb.Result{TaskId: fmt.Sprintf("r/%03d", i), Outcome: pb.Outcome_OUTCOME_OK}, func(err error) {
			if err != nil {
				t.Error(err)
			}
			wg.Done()
		})
	}
	wg.Wait()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	j2, got, err := dispatch.OpenJournal(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = j2.Close() }()
	if len(got) != 100 {
		t.Fatalf("reopened journal has %d results, want 100", len(got))
	}
}

func TestRecordIsEffectivelyOnce(t *testing.T) {
	d := dispatch.New(dispatch.Options{RunPrefix: "r/"})
	statuses := map[pb.ReportAck_Status]int{}
	var mu sync.Mutex
	for range 3 {
		d.Record(&pb.Result{TaskId: "r/1", Outcome: pb.Outcome_OUTCOME_OK}, func(s pb.ReportAck_Status, _ error) {
			mu.Lock()
			statuses[s]++
			mu.Unlock()
		})
	}
	d.Record(&pb.Result{TaskId: "other/1"}, func(s pb.ReportAck_Status, _ error) { statuses[s]++ })
	want := map[pb.ReportAck_Status]int{pb.ReportAck_STATUS_RECORDED: 1, pb.ReportAck_STATUS_DUPLICATE: 2, pb.ReportAck_STATUS_UNKNOWN: 1}
	for k, v := range want {
		if statuses[k] != v {
			t.Errorf("%v acks = %d, want %d", k, statuses[k], v)
		}
	}
}

// BenchmarkRecord is the coordinator's per-result cost: recording a result
// in the journal (group-committed, without fsync) and resolving its future.
func BenchmarkRecord(b *testing.B) {
	j, _, err := dispatch.OpenJournal(filepath.Join(b.TempDir(), "j"), true)
	if err != nil {
		b.Fatal(err)
	}
	runJournal(b, j)
	defer func() { _ = j.Close() }()
	d := dispatch.New(dispatch.Options{Journal: j})
	traj := make([]byte, 2048)
	var wg sync.WaitGroup
	i := 0
	for b.Loop() {
		wg.Add(1)
		d.Record(&pb.Result{TaskId: fmt.Sprintf("t/%d", i), Outcome: pb.Outcome_OUTCOME_OK,
			Body: &pb.Result_Rollout{Rollout: &pb.RolloutResult{Trajectory: traj}}}, func(pb.ReportAck_Status, error) { wg.Done() })
		i++
	}
	wg.Wait()
}
