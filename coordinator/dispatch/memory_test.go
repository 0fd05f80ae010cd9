package dispatch_test

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/coordinator/dispatch"
	"github.com/skillfleet/skillfleet/pkg/catalogue"
	"github.com/skillfleet/skillfleet/pkg/prompts"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// trajectory is a deterministic trajectory of n bytes for result i.
func trajectory(i, n int) []byte {
	return bytes.Repeat([]byte{byte('a' + i%26)}, n)
}

// recordMany records n rollout results of size bytes each through d and
// waits until all are durable.
func recordMany(t testing.TB, d *dispatch.Dispatcher, prefix string, n, size int) {
	t.Helper()
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		d.Record(&pb.Result{TaskId: fmt.Sprintf("%s%05d", prefix, i), Outcome: pb.Outcome_OUTCOME_OK,
			Body: &pb.Result_Rollout{Rollout: &pb.RolloutResult{Hard: float64(i % 2), Trajectory: trajectory(i, size)}}},
			func(s pb.ReportAck_Status, err error) {
				if s != pb.ReportAck_STATUS_RECORDED {
					t.Errorf("result %d acked %v (%v)", i, s, err)
				}
				wg.Done()
			})
	}
	wg.Wait()
}

// liveHeap is the heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// TestRecordedResultsStayOnDisk: a dispatcher that recorded 400 results
// of 50 KB (20 MB of trajectories) holds a small fraction of that in
// memory, before and after a resume, and still gives every result back:
// whole by Lookup, and without its trajectory as the future of a task
// submitted again.
func TestRecordedResultsStayOnDisk(t *testing.T) {
	const n, size = 400, 50 << 10
	const bound = 2 << 20 // what the dispatcher may keep in memory for all of them
	path := filepath.Join(t.TempDir(), "results.journal")
	j, err := dispatch.OpenJournalIndex(path, true)
	if err != nil {
		t.Fatal(err)
	}
	runJournal(t, j)
	base := liveHeap()
	d := dispatch.New(dispatch.Options{Journal: j, RunPrefix: "r/"})
	recordMany(t, d, "r/t", n, size)
	held := int64(liveHeap()) - int64(base)
	t.Logf("live heap after recording %d results of %d bytes: %d bytes (%.1f per result)", n, size, held, float64(held)/n)
	if held > bound {
		t.Errorf("live heap grew by %d bytes for %d results of %d bytes; want at most %d", held, n, size, bound)
	}
	check := func(d *dispatch.Dispatcher) {
		t.Helper()
		for _, i := range []int{0, 199, n - 1} {
			id := fmt.Sprintf("r/t%05d", i)
			res, ok := d.Lookup(id)
			if !ok || !bytes.Equal(res.GetRollout().GetTrajectory(), trajectory(i, size)) || res.GetRollout().GetHard() != float64(i%2) {
				t.Fatalf("Lookup(%s) = %v, %v: not the recorded result", id, ok, res.GetRollout().GetHard())
			}
			futs, err := d.Submit(context.Background(), &pb.Task{Id: id, Kind: &pb.Task_Noop{Noop: &pb.NoopTask{}}})
			if err != nil {
				t.Fatal(err)
			}
			<-futs[0].Done()
			if got := futs[0].Result(); got.GetTaskId() != id || got.GetRollout().GetHard() != float64(i%2) || len(got.GetRollout().GetTrajectory()) != 0 {
				t.Fatalf("Submit(%s) resolved to %s (hard %v, %d trajectory bytes); want the recorded result without its trajectory",
					id, got.GetTaskId(), got.GetRollout().GetHard(), len(got.GetRollout().GetTrajectory()))
			}
		}
		if d.Recorded() != n {
			t.Errorf("Recorded() = %d, want %d", d.Recorded(), n)
		}
		if s := record(d, &pb.Result{TaskId: "r/t00001", Outcome: pb.Outcome_OUTCOME_OK}); s != pb.ReportAck_STATUS_DUPLICATE {
			t.Errorf("a result recorded before acked %v, want DUPLICATE", s)
		}
	}
	check(d)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}

	// A resume: the journal is read back without holding its results.
	base = liveHeap()
	j, err = dispatch.OpenJournalIndex(path, true)
	if err != nil {
		t.Fatal(err)
	}
	runJournal(t, j)
	defer func() { _ = j.Close() }()
	d = dispatch.New(dispatch.Options{Journal: j, RunPrefix: "r/"})
	held = int64(liveHeap()) - int64(base)
	t.Logf("live heap after resuming %d results: %d bytes", n, held)
	if held > bound {
		t.Errorf("live heap grew by %d bytes on resuming %d results of %d bytes; want at most %d", held, n, size, bound)
	}
	check(d)
	runtime.KeepAlive(d)
}

// BenchmarkHeapPerRun reports the live heap a dispatcher holds per
// recorded result of 50 KB (heap-B/result) once 1,000 are recorded.
func BenchmarkHeapPerRun(b *testing.B) {
	const n, size = 1000, 50 << 10
	for i := 0; b.Loop(); i++ {
		j, err := dispatch.OpenJournalIndex(filepath.Join(b.TempDir(), fmt.Sprintf("j%d", i)), true)
		if err != nil {
			b.Fatal(err)
		}
		runJournal(b, j)
		base := liveHeap()
		d := dispatch.New(dispatch.Options{Journal: j})
		recordMany(b, d, "t/", n, size)
		b.ReportMetric(float64(int64(liveHeap())-int64(base))/n, "heap-B/result")
		runtime.KeepAlive(d)
		_ = j.Close()
	}
}

// TestPendingTasksKeepNoSecondCopy: tasks waiting for their results cost
// the dispatcher little beyond the tasks themselves (which their
// submitter holds): 40 pending tasks of 256 KB payload add far less
// than their 10 MB to the live heap.
func TestPendingTasksKeepNoSecondCopy(t *testing.T) {
	ctx := context.Background()
	srv := queuetest.Start(t)
	nc, err := srv.Connect("test")
	if err != nil {
		t.Fatal(err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := queue.EnsureStream(ctx, js, queue.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	d := dispatch.New(dispatch.Options{NC: nc, JS: js, Stream: stream, RunPrefix: "r/", Addr: "127.0.0.1:7070"})
	const n, size = 40, 256 << 10
	tasks := make([]*pb.Task, n)
	for i := range tasks {
		task, err := catalogue.PromptTask(&pb.OptimizerTask{Prompt: prompts.AnalystFailure, Payload: trajectory(i, size)})
		if err != nil {
			t.Fatal(err)
		}
		task.Id, task.Stage = fmt.Sprintf("r/o%02d", i), "reflect"
		tasks[i] = task
	}
	base := liveHeap()
	if _, err := d.Submit(ctx, tasks...); err != nil {
		t.Fatal(err)
	}
	// The server (in this process) and the connection keep copies of the
	// messages of their own: they go before the heap is measured.
	nc.Close()
	srv.Shutdown()
	held := int64(liveHeap()) - int64(base)
	t.Logf("live heap with %d pending tasks of %d bytes: %d bytes more", n, size, held)
	if limit := int64(n * size / 10); held > limit {
		t.Errorf("%d pending tasks of %d bytes grew the live heap by %d bytes; want at most %d", n, size, held, limit)
	}
	if d.Pending() != n {
		t.Errorf("Pending() = %d, want %d", d.Pending(), n)
	}
	runtime.KeepAlive(tasks)
}

// TestWaveFuturesHoldNoTrajectories: a wave of 400 rollouts whose results
// carry 50 KB trajectories (20 MB) resolves futures that, all held at
// once as the trainer holds a wave, keep a small fraction of that in
// memory; each future has the result's scores, and Lookup gives the
// trajectory back byte for byte.
func TestWaveFuturesHoldNoTrajectories(t *testing.T) {
	const n, size = 400, 50 << 10
	const bound = 2 << 20
	ctx := context.Background()
	srv := queuetest.Start(t)
	nc, err := srv.Connect("test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := queue.EnsureStream(ctx, js, queue.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	j, err := dispatch.OpenJournalIndex(filepath.Join(t.TempDir(), "results.journal"), true)
	if err != nil {
		t.Fatal(err)
	}
	runJournal(t, j)
	d := dispatch.New(dispatch.Options{NC: nc, JS: js, Stream: stream, Journal: j, RunPrefix: "r/"})
	tasks := make([]*pb.Task, n)
	for i := range tasks {
		tasks[i] = &pb.Task{Id: fmt.Sprintf("r/t%05d", i), Kind: &pb.Task_Noop{Noop: &pb.NoopTask{}}}
	}
	futs, err := d.Submit(ctx, tasks...)
	if err != nil {
		t.Fatal(err)
	}
	base := liveHeap()
	recordMany(t, d, "r/t", n, size)
	for _, f := range futs {
		<-f.Done()
	}
	held := int64(liveHeap()) - int64(base)
	t.Logf("live heap with %d resolved futures of %d-byte trajectories held: %d bytes (%.0f per future)", n, size, held, float64(held)/n)
	if held > bound {
		t.Errorf("%d resolved futures grew the live heap by %d bytes; want at most %d (the trajectories stay in the journal)", n, held, bound)
	}
	for _, i := range []int{0, 7, n - 1} {
		res := futs[i].Result()
		if res.GetTaskId() != tasks[i].GetId() || res.GetRollout().GetHard() != float64(i%2) {
			t.Fatalf("future %d resolved to %s hard %v", i, res.GetTaskId(), res.GetRollout().GetHard())
		}
		full, ok := d.Lookup(res.GetTaskId())
		if !ok || !bytes.Equal(full.GetRollout().GetTrajectory(), trajectory(i, size)) {
			t.Fatalf("Lookup(%s) did not give the trajectory back", res.GetTaskId())
		}
	}
	runtime.KeepAlive(futs)
}
