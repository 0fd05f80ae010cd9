package dispatch_test

import (
	"context"
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
