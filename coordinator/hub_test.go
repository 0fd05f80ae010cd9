package coordinator_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/coordinator/dispatch"
	"github.com/skillfleet/skillfleet/internal/fleettest"
	"github.com/skillfleet/skillfleet/pkg/queue"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/worker"
)

type bundle struct {
	hub  *fleettest.Hub
	ns   *queue.Embedded
	seen sync.Map // task id -> *atomic.Int32 (OnResult calls)
	// results counts OnResult calls; each call also sends on (or finds
	// full) recorded, which waitResults waits on.
	results  atomic.Int32
	recorded chan struct{}
}

func setup(t testing.TB, runDir string, ns *queue.Embedded) *bundle {
	t.Helper()
	if ns == nil {
		ns = fleettest.NATS(t)
	}
	b := &bundle{ns: ns, recorded: make(chan struct{}, 1)}
	b.hub = fleettest.StartHub(t, ns, coordinator.HubOptions{
		RunDir: runDir, RunID: "run1",
		Consumer: queue.ConsumerOptions{AckWait: 2 * time.Second, MaxDeliver: 5},
		OnResult: func(r *pb.Result) {
			v, _ := b.seen.LoadOrStore(r.GetTaskId(), new(atomic.Int32))
			v.(*atomic.Int32).Add(1)
			b.results.Add(1)
			select {
			case b.recorded <- struct{}{}:
			default:
			}
		},
	})
	return b
}

// waitResults waits until the hub has recorded n results (OnResult calls).
func (b *bundle) waitResults(t testing.TB, n int32) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for b.results.Load() < n {
		select {
		case <-b.recorded:
		case <-timeout:
			t.Fatalf("hub recorded %d results in 30 s, want %d", b.results.Load(), n)
		}
	}
}

// waitDrained waits until the task stream holds no message: every task
// was acked or terminated.
func (b *bundle) waitDrained(t testing.TB) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		info, err := b.hub.Stream.Info(t.Context())
		if err == nil && info.State.Msgs == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task stream still holds messages after 30 s (info %+v, err %v)", info, err)
		}
		time.Sleep(20 * time.Millisecond) // bounded poll: the server's state, no event to wait on
	}
}

func (b *bundle) stop() { b.hub.Stop() }

func startWorker(t testing.TB, ns *queue.Embedded, addr string, conc int, h worker.Handler) {
	t.Helper()
	fleettest.StartWorker(t, ns, addr, worker.Config{Concurrency: conc, Heartbeat: 500 * time.Millisecond, DrainTimeout: 2 * time.Second}, h)
}

var noop = worker.HandlerFunc(func(ctx context.Context, t *pb.Task) *pb.Result {
	return &pb.Result{Outcome: pb.Outcome_OUTCOME_OK}
})

func noopTasks(n int, prefix string) []*pb.Task {
	ts := make([]*pb.Task, n)
	for i := range ts {
		ts[i] = &pb.Task{Id: fmt.Sprintf("run1/%s/%05d", prefix, i), RunId: "run1", Kind: &pb.Task_Noop{Noop: &pb.NoopTask{}}}
	}
	return ts
}

func waitAll(t testing.TB, futs []*dispatch.Future) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, f := range futs {
		r, err := f.Wait(ctx)
		if err != nil {
			t.Fatalf("task %s: %v (pending %d)", f.ID(), err, 0)
		}
		if r.GetOutcome() != pb.Outcome_OUTCOME_OK {
			t.Fatalf("task %s outcome %v: %s", f.ID(), r.GetOutcome(), r.GetError())
		}
	}
}

func TestHubRunsTasksExactlyOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, t.TempDir(), nil)
	for range 3 {
		startWorker(t, b.ns, b.hub.Addr(), 8, noop)
	}
	futs, err := b.hub.D.Submit(t.Context(), noopTasks(500, "a")...)
	if err != nil {
		t.Fatal(err)
	}
	waitAll(t, futs)
	n := 0
	b.seen.Range(func(k, v any) bool {
		n++
		if c := v.(*atomic.Int32).Load(); c != 1 {
			t.Errorf("task %s recorded %d times, want 1", k, c)
		}
		return true
	})
	if n != 500 {
		t.Errorf("recorded %d tasks, want 500", n)
	}
}

func TestDuplicateReportsAreDroppedAndRedeliveryCountsOnce(t *testing.T) {
	t.Parallel()
	b := setup(t, t.TempDir(), nil)
	// A worker that reports every task, then "loses" the ack on the first
	// delivery by sleeping past AckWait with no heartbeat is hard to stage;
	// instead record each result twice directly, as a redelivered task would.
	futs, err := b.hub.D.Submit(t.Context(), noopTasks(50, "d")...)
	if err != nil {
		t.Fatal(err)
	}
	var statuses sync.Map
	var wg sync.WaitGroup
	for i := range 50 {
		for range 2 {
			wg.Add(1)
			res := &pb.Result{TaskId: fmt.Sprintf("run1/d/%05d", i), Outcome: pb.Outcome_OUTCOME_OK}
			b.hub.D.Record(res, func(st pb.ReportAck_Status, err error) {
				v, _ := statuses.LoadOrStore(st, new(atomic.Int32))
				v.(*atomic.Int32).Add(1)
				wg.Done()
			})
		}
	}
	wg.Wait()
	waitAll(t, futs)
	rec, _ := statuses.Load(pb.ReportAck_STATUS_RECORDED)
	if got := rec.(*atomic.Int32).Load(); got != 50 {
		t.Errorf("RECORDED acks = %d, want 50", got)
	}
	// A late duplicate after the fact is acked as DUPLICATE.
	ch := make(chan pb.ReportAck_Status, 1)
	b.hub.D.Record(&pb.Result{TaskId: "run1/d/00007", Outcome: pb.Outcome_OUTCOME_OK}, func(st pb.ReportAck_Status, _ error) { ch <- st })
	if st := <-ch; st != pb.ReportAck_STATUS_DUPLICATE {
		t.Errorf("late duplicate status = %v, want DUPLICATE", st)
	}
	// Then a real worker drains the queue; every task it reports is a
	// duplicate, recorded no second time.
	var ran atomic.Int32
	startWorker(t, b.ns, b.hub.Addr(), 8, worker.HandlerFunc(func(ctx context.Context, task *pb.Task) *pb.Result {
		ran.Add(1)
		return &pb.Result{Outcome: pb.Outcome_OUTCOME_OK}
	}))
	b.waitDrained(t)
	if ran.Load() < 50 {
		t.Errorf("the worker ran %d of the 50 queued tasks", ran.Load())
	}
	n := 0
	b.seen.Range(func(_, v any) bool {
		n++
		if c := v.(*atomic.Int32).Load(); c != 1 {
			t.Errorf("recorded %d times", c)
		}
		return true
	})
	if n != 50 {
		t.Errorf("recorded %d tasks, want 50", n)
	}
}

func TestCoordinatorRestartDeduplicatesAndReusesResults(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	ns := fleettest.NATS(t)
	b := setup(t, dir, ns)
	var handled atomic.Int32
	gate := make(chan struct{})
	slow := worker.HandlerFunc(func(ctx context.Context, task *pb.Task) *pb.Result {
		handled.Add(1)
		if handled.Load() > 100 {
			select {
			case <-gate:
			case <-ctx.Done():
				return &pb.Result{Outcome: pb.Outcome_OUTCOME_CANCELLED}
			}
		}
		return &pb.Result{Outcome: pb.Outcome_OUTCOME_OK}
	})
	tasks := noopTasks(300, "r")
	if _, err := b.hub.D.Submit(t.Context(), tasks...); err != nil {
		t.Fatal(err)
	}
	// This worker is stopped with tasks in flight and its coordinator gone:
	// they cannot be reported, so it gives up on them soon (a short drain)
	// and they are redelivered to the next worker.
	stopW := fleettest.StartWorker(t, ns, b.hub.Addr(), worker.Config{Concurrency: 4, Heartbeat: 500 * time.Millisecond, DrainTimeout: 100 * time.Millisecond}, slow)
	b.waitResults(t, 100)
	b.stop() // coordinator "crashes" mid-batch
	close(gate)
	stopW()
	recordedBefore := map[string]bool{}
	b.seen.Range(func(k, _ any) bool { recordedBefore[k.(string)] = true; return true })
	if len(recordedBefore) < 100 {
		t.Fatalf("only %d results before restart", len(recordedBefore))
	}

	// Restart on the same run dir: the journal brings back the results and
	// re-publishing the same tasks does not duplicate queued ones.
	b2 := setup(t, dir, ns)
	info, err := b2.hub.Stream.Info(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	queuedBefore := info.State.Msgs
	futs, err := b2.hub.D.Submit(t.Context(), tasks...)
	if err != nil {
		t.Fatal(err)
	}
	info, _ = b2.hub.Stream.Info(t.Context())
	if info.State.Msgs != queuedBefore {
		t.Errorf("stream has %d messages after re-publish, want %d (de-duplicated)", info.State.Msgs, queuedBefore)
	}
	var h2 atomic.Int32
	count := worker.HandlerFunc(func(ctx context.Context, task *pb.Task) *pb.Result {
		h2.Add(1)
		if recordedBefore[task.GetId()] {
			t.Errorf("task %s recomputed after restart", task.GetId())
		}
		return &pb.Result{Outcome: pb.Outcome_OUTCOME_OK}
	})
	startWorker(t, ns, b2.hub.Addr(), 8, count)
	waitAll(t, futs)
	total := len(recordedBefore)
	b2.seen.Range(func(k, _ any) bool {
		if recordedBefore[k.(string)] {
			t.Errorf("task %s recorded again after restart", k)
		}
		total++
		return true
	})
	if total != 300 {
		t.Errorf("recorded %d distinct tasks over both runs, want 300", total)
	}
}

func TestGarbledTaskIsTerminated(t *testing.T) {
	t.Parallel()
	b := setup(t, t.TempDir(), nil)
	nc, _ := nats.Connect(b.ns.URL())
	defer nc.Close()
	if _, err := b.hub.JS.Publish(t.Context(), queue.TaskSubject(queue.ClassCritical, queue.KindRollout, "garbage"), []byte("\xff\xfe not a protobuf")); err != nil {
		t.Fatal(err)
	}
	startWorker(t, b.ns, b.hub.Addr(), 2, noop)
	futs, err := b.hub.D.Submit(t.Context(), noopTasks(10, "g")...)
	if err != nil {
		t.Fatal(err)
	}
	waitAll(t, futs)
	b.waitDrained(t) // the garbled message was terminated, not left queued
}

func BenchmarkNoopTasksEndToEnd(b *testing.B) {
	bb := setup(b, b.TempDir(), nil)
	startWorker(b, bb.ns, bb.hub.Addr(), 64, noop)
	const batch = 2000
	b.ResetTimer()
	n := 0
	for b.Loop() {
		futs, err := bb.hub.D.Submit(context.Background(), noopTasks(batch, fmt.Sprintf("b%d", n))...)
		if err != nil {
			b.Fatal(err)
		}
		waitAll(b, futs)
		n++
	}
	b.ReportMetric(float64(batch*n)/b.Elapsed().Seconds(), "tasks/s")
}
