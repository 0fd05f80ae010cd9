package dispatch_test

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/coordinator/dispatch"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// lostAcks publishes for real, calls after, then reports the publish's
// ack as lost.
type lostAcks struct {
	jetstream.JetStream
	after func(*nats.Msg)
}

func (l lostAcks) PublishMsgAsync(msg *nats.Msg, _ ...jetstream.PublishOpt) (jetstream.PubAckFuture, error) {
	if _, err := l.PublishMsg(context.Background(), msg); err != nil {
		return nil, err
	}
	l.after(msg)
	return lostAck{msg}, nil
}

type lostAck struct{ msg *nats.Msg }

func (lostAck) Ok() <-chan *jetstream.PubAck { return nil }
func (lostAck) Err() <-chan error {
	ch := make(chan error, 1)
	ch <- jetstream.ErrAsyncPublishTimeout
	return ch
}
func (a lostAck) Msg() *nats.Msg { return a.msg }

// TestAnsweredTaskIsNotRepublishedAfterALostAck: a task's publish ack is
// lost while a worker already took the message, ran it and reported;
// publishing it again is answered as a duplicate of a message no longer
// in the stream. The task is answered, so it must not go out again (a
// second, paid run of it).
func TestAnsweredTaskIsNotRepublishedAfterALostAck(t *testing.T) {
	ctx := context.Background()
	nc, js, stream := startQueue(t)
	var d *dispatch.Dispatcher
	worker := func(*nats.Msg) {
		info, err := stream.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if err := stream.DeleteMsg(ctx, info.State.LastSeq); err != nil {
			t.Fatal(err)
		}
		if s := record(d, &pb.Result{TaskId: "r/a", Outcome: pb.Outcome_OUTCOME_OK, WorkerId: "w"}); s != pb.ReportAck_STATUS_RECORDED {
			t.Fatalf("result acked %v", s)
		}
	}
	d = dispatch.New(dispatch.Options{NC: nc, JS: lostAcks{js, worker}, Stream: stream, RunPrefix: "r/"})
	futs, err := d.Submit(ctx, noopTask("r/a"))
	if err != nil {
		t.Fatal(err)
	}
	<-futs[0].Done()
	if r := futs[0].Result(); r.GetOutcome() != pb.Outcome_OUTCOME_OK || r.GetWorkerId() != "w" {
		t.Errorf("future resolved to %v from %q, want the worker's result", r.GetOutcome(), r.GetWorkerId())
	}
	info, err := stream.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Msgs != 0 {
		t.Errorf("the answered task was published again: the stream holds %d messages, want 0", info.State.Msgs)
	}
}
