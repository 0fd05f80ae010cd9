package dispatch_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/coordinator/dispatch"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

func noopTask(id string) *pb.Task {
	return &pb.Task{Id: id, Stage: "gate", Kind: &pb.Task_Noop{Noop: &pb.NoopTask{}}}
}

// startQueue starts an embedded NATS server with the task stream.
func startQueue(t *testing.T) (*nats.Conn, jetstream.JetStream, jetstream.Stream) {
	t.Helper()
	srv := queuetest.Start(t)
	nc, err := srv.Connect("test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stream, err := queue.EnsureStream(context.Background(), js, queue.StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return nc, js, stream
}

func record(d *dispatch.Dispatcher, res *pb.Result) pb.ReportAck_Status {
	ch := make(chan pb.ReportAck_Status, 1)
	d.Record(res, func(s pb.ReportAck_Status, _ error) { ch <- s })
	return <-ch
}

// TestCancelledWorkIsStillPaidFor: the calls of a cancelled task a worker
// finished anyway, and of a task run twice, reach the accounting hooks;
// a cancelled task submitted again is published again (JetStream's
// de-duplication must not swallow it).
func TestCancelledWorkIsStillPaidFor(t *testing.T) {
	ctx := context.Background()
	nc, js, stream := startQueue(t)
	d := dispatch.New(dispatch.Options{NC: nc, JS: js, Stream: stream, RunPrefix: "r/"})
	var spent []string
	d.OnDuplicateSpend(func(res *pb.Result, stage string) { spent = append(spent, res.GetTaskId()+"@"+stage) })
	used := &pb.Usage{Calls: 1, InputTokens: 10}

	futs, err := d.Submit(ctx, noopTask("r/a"), noopTask("r/b"))
	if err != nil {
		t.Fatal(err)
	}
	var late []string
	d.CancelWith(ctx, func(res *pb.Result) { late = append(late, res.GetTaskId()) }, "r/a", "r/b")
	for _, f := range futs {
		<-f.Done()
		if f.Result().GetOutcome() != pb.Outcome_OUTCOME_CANCELLED {
			t.Errorf("future %s = %v, want CANCELLED", f.ID(), f.Result().GetOutcome())
		}
	}

	// A worker had r/a in flight and reports it after the cancel.
	if s := record(d, &pb.Result{TaskId: "r/a", Outcome: pb.Outcome_OUTCOME_OK, Usage: used}); s != pb.ReportAck_STATUS_RECORDED {
		t.Fatalf("late result acked %v, want RECORDED", s)
	}
	if len(late) != 1 || late[0] != "r/a" {
		t.Errorf("late hook saw %v, want [r/a]", late)
	}

	// r/b was deleted from the stream; submitted again it must be queued again.
	info, _ := stream.Info(ctx)
	before := info.State.Msgs
	futs, err = d.Submit(ctx, noopTask("r/b"))
	if err != nil {
		t.Fatal(err)
	}
	info, _ = stream.Info(ctx)
	if info.State.Msgs != before+1 {
		t.Errorf("re-submitting a cancelled task left %d messages in the stream, want %d", info.State.Msgs, before+1)
	}
	if s := record(d, &pb.Result{TaskId: "r/b", Outcome: pb.Outcome_OUTCOME_OK, Usage: used}); s != pb.ReportAck_STATUS_RECORDED {
		t.Fatalf("result acked %v, want RECORDED", s)
	}
	<-futs[0].Done()
	if len(late) != 1 {
		t.Errorf("late hook fired for a re-submitted task: %v", late)
	}

	// The original r/b delivery also ran: a duplicate that made a call.
	if s := record(d, &pb.Result{TaskId: "r/b", Outcome: pb.Outcome_OUTCOME_OK, Usage: used}); s != pb.ReportAck_STATUS_DUPLICATE {
		t.Fatalf("second result acked %v, want DUPLICATE", s)
	}
	record(d, &pb.Result{TaskId: "r/b", Outcome: pb.Outcome_OUTCOME_OK}) // no calls: nothing spent
	if len(spent) != 1 || spent[0] != "r/b@gate" {
		t.Errorf("duplicate spend hook saw %v, want [r/b@gate]", spent)
	}
}

// TestCancelledAttemptIsNeverATaskResult: the report of an attempt its
// worker stopped on a cancel (outcome CANCELLED, with the calls it made)
// is spend, not the task's result. The cancel's late hook accounts it and
// nothing is journaled; a task submitted again after the cancel is
// published and waits for a real result, an old attempt's report telling
// it RETRY; and a journal that holds such a report (written before this
// rule) does not answer the task in a resumed run. Recorded as results,
// they made a cell resumed after a self-fence decide differently from the
// cell run alone.
func TestCancelledAttemptIsNeverATaskResult(t *testing.T) {
	ctx := context.Background()
	nc, js, stream := startQueue(t)
	path := filepath.Join(t.TempDir(), "results.journal")
	j, err := dispatch.OpenJournalIndex(path, true)
	if err != nil {
		t.Fatal(err)
	}
	runJournal(t, j)
	d := dispatch.New(dispatch.Options{NC: nc, JS: js, Stream: stream, RunPrefix: "r/", Journal: j})
	var spent []string
	d.OnDuplicateSpend(func(res *pb.Result, stage string) { spent = append(spent, res.GetTaskId()) })
	stopped := &pb.Result{TaskId: "r/a", Outcome: pb.Outcome_OUTCOME_CANCELLED, Error: "cancelled by coordinator",
		Usage: &pb.Usage{Calls: 1, InputTokens: 10}}

	futs, err := d.Submit(ctx, noopTask("r/a"))
	if err != nil {
		t.Fatal(err)
	}
	var late []string
	d.CancelWith(ctx, func(res *pb.Result) { late = append(late, res.GetTaskId()) }, "r/a")
	<-futs[0].Done()
	if s := record(d, stopped); s != pb.ReportAck_STATUS_RECORDED {
		t.Fatalf("the stopped attempt's report acked %v, want RECORDED", s)
	}
	if len(late) != 1 {
		t.Errorf("late hook saw %v, want the stopped attempt once", late)
	}
	if n := d.Recorded(); n != 0 {
		t.Errorf("%d results recorded after a stopped attempt's report, want 0", n)
	}

	// Asked for again, the task is published again and waits for its result.
	info, _ := stream.Info(ctx)
	before := info.State.Msgs
	futs, err = d.Submit(ctx, noopTask("r/a"))
	if err != nil {
		t.Fatal(err)
	}
	if info, _ = stream.Info(ctx); info.State.Msgs != before+1 {
		t.Errorf("the task submitted again left %d messages in the stream, want %d", info.State.Msgs, before+1)
	}
	// Another attempt of the cancelled submission reports late: spend,
	// and the waiting submission is not answered by it.
	if s := record(d, stopped); s != pb.ReportAck_STATUS_RETRY {
		t.Errorf("a stopped attempt's report while the task is pending acked %v, want RETRY", s)
	}
	if len(spent) != 1 || spent[0] != "r/a" {
		t.Errorf("spend hook saw %v, want [r/a]", spent)
	}
	select {
	case <-futs[0].Done():
		t.Fatalf("the task submitted again resolved with %v from a stopped attempt", futs[0].Result().GetOutcome())
	default:
	}
	if s := record(d, &pb.Result{TaskId: "r/a", Outcome: pb.Outcome_OUTCOME_OK, WorkerId: "w1"}); s != pb.ReportAck_STATUS_RECORDED {
		t.Fatalf("the result acked %v, want RECORDED", s)
	}
	<-futs[0].Done()
	if r := futs[0].Result(); r.GetOutcome() != pb.Outcome_OUTCOME_OK || r.GetWorkerId() != "w1" {
		t.Errorf("the task resolved with %v from %q, want OK from w1", r.GetOutcome(), r.GetWorkerId())
	}
	if len(late) != 1 {
		t.Errorf("late hook saw %v after the task's own result, want one report", late)
	}

	// A journal of an older build holding a stopped attempt's report: a
	// resumed run asks for that task again and reuses the real results.
	old := filepath.Join(t.TempDir(), "old.journal")
	oj, err := dispatch.OpenJournalIndex(old, true)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- oj.Run(ctx) }()
	for _, res := range []*pb.Result{
		{TaskId: "r/c", Outcome: pb.Outcome_OUTCOME_CANCELLED, Usage: &pb.Usage{Calls: 1}},
		{TaskId: "r/d", Outcome: pb.Outcome_OUTCOME_OK, WorkerId: "w1"},
	} {
		ch := make(chan error, 1)
		oj.Append(res, func(err error) { ch <- err })
		if err := <-ch; err != nil {
			t.Fatal(err)
		}
	}
	if err := oj.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	oj, err = dispatch.OpenJournalIndex(old, true)
	if err != nil {
		t.Fatal(err)
	}
	runJournal(t, oj)
	resumed := dispatch.New(dispatch.Options{NC: nc, JS: js, Stream: stream, RunPrefix: "r/", Journal: oj})
	futs, err = resumed.Submit(ctx, noopTask("r/c"), noopTask("r/d"))
	if err != nil {
		t.Fatal(err)
	}
	<-futs[1].Done()
	if r := futs[1].Result(); r.GetOutcome() != pb.Outcome_OUTCOME_OK {
		t.Errorf("the journaled result of r/d: %v, want OK", r.GetOutcome())
	}
	select {
	case <-futs[0].Done():
		t.Fatalf("r/c was answered from the journal with %v, a stopped attempt's report", futs[0].Result().GetOutcome())
	default:
	}
	if s := record(resumed, &pb.Result{TaskId: "r/c", Outcome: pb.Outcome_OUTCOME_OK, WorkerId: "w1"}); s != pb.ReportAck_STATUS_RECORDED {
		t.Fatalf("r/c's result acked %v, want RECORDED", s)
	}
	<-futs[0].Done()
	if r := futs[0].Result(); r.GetOutcome() != pb.Outcome_OUTCOME_OK {
		t.Errorf("r/c resolved with %v, want OK", r.GetOutcome())
	}
}

// TestCancelNamesTheTasksAWorkerMayRun: CancelWith names the cancelled
// tasks that were published (a worker may have taken one and will report
// it), not one still held for the bulk window, nor one not live.
func TestCancelNamesTheTasksAWorkerMayRun(t *testing.T) {
	ctx := context.Background()
	nc, js, stream := startQueue(t)
	d := dispatch.New(dispatch.Options{NC: nc, JS: js, Stream: stream, RunPrefix: "r/", BulkWindow: func() int { return 1 }})
	bulk := &pb.Task{Id: "r/held", Stage: "test_best", Kind: &pb.Task_Rollout{Rollout: &pb.RolloutTask{}}}
	if _, err := d.Submit(ctx, noopTask("r/published"), bulk); err != nil {
		t.Fatal(err)
	}
	if d.Held() != 1 {
		t.Fatalf("%d tasks held for the bulk window, want the bulk one (no pump runs)", d.Held())
	}
	sent := d.CancelWith(ctx, nil, "r/published", "r/held", "r/unknown")
	if len(sent) != 1 || sent[0] != "r/published" {
		t.Errorf("CancelWith named %v as possibly running, want [r/published]", sent)
	}
	if again := d.CancelWith(ctx, nil, "r/published"); again != nil {
		t.Errorf("cancelling again named %v, want none", again)
	}
}
