package coordinator_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/fleettest"
	"github.com/skillfleet/skillfleet/pkg/queue"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/worker"
)

// TestTaskOfANewerWireVersionIsReportedNotRun runs a real worker of this
// build beside tasks of its own wire version and one of the next major
// version: the worker serves the first, never runs the other (its handler
// would give a result), and the run is told, naming the task and both
// versions, once its deliveries ran out; nothing is lost or invented.
func TestTaskOfANewerWireVersionIsReportedNotRun(t *testing.T) {
	t.Parallel()
	ns := fleettest.NATS(t)
	hub := fleettest.StartHub(t, ns, coordinator.HubOptions{
		RunDir: t.TempDir(), RunID: "run1",
		Consumer: queue.ConsumerOptions{AckWait: 2 * time.Second, MaxDeliver: 2},
	})
	ran := make(chan string, 16)
	fleettest.StartWorker(t, ns, hub.Addr(), worker.Config{Concurrency: 2, MaxDeliver: 2, Heartbeat: 500 * time.Millisecond},
		worker.HandlerFunc(func(_ context.Context, task *pb.Task) *pb.Result {
			ran <- task.GetId()
			return &pb.Result{Outcome: pb.Outcome_OUTCOME_OK}
		}))
	newer := pb.WireVersion + 1
	tasks := []*pb.Task{
		{Id: "run1/noop/current", RunId: "run1", Kind: &pb.Task_Noop{Noop: &pb.NoopTask{}}},
		{Id: "run1/noop/newer", RunId: "run1", WireVersion: newer, Kind: &pb.Task_Noop{Noop: &pb.NoopTask{}}},
	}
	futs, err := hub.D.Submit(t.Context(), tasks...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
	defer cancel()
	res, err := futs[0].Wait(ctx)
	if err != nil || res.GetOutcome() != pb.Outcome_OUTCOME_OK || res.GetWireVersion() != pb.WireVersion {
		t.Fatalf("task of the current wire version: %v, %v; want OK from a worker of wire version %d", res, err, pb.WireVersion)
	}
	res, err = futs[1].Wait(ctx)
	if err != nil {
		t.Fatalf("task of wire version %d: %v (never reported)", newer, err)
	}
	if res.GetOutcome() != pb.Outcome_OUTCOME_UNSUPPORTED {
		t.Fatalf("task of wire version %d: outcome %v, want OUTCOME_UNSUPPORTED", newer, res.GetOutcome())
	}
	for _, want := range []string{"run1/noop/newer", "wire version " + itoa(newer), "speaks wire version " + itoa(pb.WireVersion)} {
		if !strings.Contains(res.GetError(), want) {
			t.Errorf("the run was told %q, want it to name %q", res.GetError(), want)
		}
	}
	close(ran)
	for id := range ran {
		if id != "run1/noop/current" {
			t.Errorf("the worker ran %s, a task it cannot read", id)
		}
	}
}

// TestRefusalLeavesTheTaskForAWorkerThatCan: a worker's report that it
// cannot serve a task is answered RETRY and resolves nothing; the task is
// then served by a worker that can.
func TestRefusalLeavesTheTaskForAWorkerThatCan(t *testing.T) {
	t.Parallel()
	b := setup(t, t.TempDir(), nil)
	futs, err := b.hub.D.Submit(t.Context(), noopTasks(1, "r")...)
	if err != nil {
		t.Fatal(err)
	}
	st := make(chan pb.ReportAck_Status, 1)
	b.hub.D.Record(&pb.Result{TaskId: futs[0].ID(), WorkerId: "old-worker", Outcome: pb.Outcome_OUTCOME_UNSUPPORTED,
		Error: "task is of a kind this worker does not know"}, func(s pb.ReportAck_Status, _ error) { st <- s })
	if s := <-st; s != pb.ReportAck_STATUS_RETRY {
		t.Fatalf("refusal answered %v, want STATUS_RETRY", s)
	}
	select {
	case <-futs[0].Done():
		t.Fatalf("a refusal resolved the task: %v", futs[0].Result())
	default:
	}
	startWorker(t, b.ns, b.hub.Addr(), 2, noop)
	waitAll(t, futs)
}

func itoa(v uint32) string { return strconv.FormatUint(uint64(v), 10) }
