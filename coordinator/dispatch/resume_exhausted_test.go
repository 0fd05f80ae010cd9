package dispatch_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/coordinator/dispatch"
	"github.com/skillfleet/skillfleet/pkg/queue"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// TestResumedRunRepublishesAnExhaustedMessage: a task's message ran out of
// deliveries while no process of its run listened (the member that owned
// the run was killed, so nobody handled the advisory), and stays in the
// stream, past the consumer's ack floor, where it is never delivered
// again. The process that resumes the run submits the task again under
// the same message id, within the stream's de-duplication window: the
// stream answers with the old message's sequence, and the task must go
// out again under a fresh id instead of waiting forever.
func TestResumedRunRepublishesAnExhaustedMessage(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := startExhaustedRun(ctx, t)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	// Another task of the fleet is answered and acknowledged: the
	// consumer's ack floor moves past the exhausted message.
	r.moveFloorPast(ctx, t)
	if _, err := r.stream.GetMsg(ctx, r.seq); err != nil {
		t.Fatalf("the exhausted message left the stream (%v): this test's premise no longer holds", err)
	}
	wg.Go(func() { r.fleet.run(ctx, t, r.js) })

	// The process that resumes the run.
	second := dispatch.New(dispatch.Options{NC: r.nc, JS: r.js, Stream: r.stream, RunPrefix: "r/"})
	wg.Go(func() { _ = second.Run(ctx) })
	futs, err := second.Submit(ctx, noopTask("r/t"))
	if err != nil {
		t.Fatal(err)
	}
	r.wantSentAgain(ctx, t, second, futs[0], "resume")
}

func isNotFound(err error) bool { return err == jetstream.ErrMsgNotFound }

// exhaustedRun is a run whose first process published task r/t and
// died: the stalled fleet was handed the task's message, which ran out of
// deliveries while no process of the run listened for the advisory.
type exhaustedRun struct {
	nc     *nats.Conn
	js     jetstream.JetStream
	stream jetstream.Stream
	// cons is the critical class's consumer; first the dead process's
	// dispatcher (it never ran); seq the exhausted message.
	cons  jetstream.Consumer
	fleet *stalledFleet
	first *dispatch.Dispatcher
	seq   uint64
}

func startExhaustedRun(ctx context.Context, t *testing.T) exhaustedRun {
	t.Helper()
	nc, js, stream := startQueue(t)
	if err := queue.EnsureConsumers(ctx, js, queue.ConsumerOptions{AckWait: 200 * time.Millisecond, MaxDeliver: 1}); err != nil {
		t.Fatal(err)
	}
	exhausted := exhaustions(t, nc)
	fleet := newStalledFleet()
	fctx, stopFleet := context.WithCancel(ctx)
	var fwg sync.WaitGroup
	fwg.Go(func() { fleet.run(fctx, t, js) })
	defer func() { stopFleet(); fwg.Wait() }()
	first := dispatch.New(dispatch.Options{NC: nc, JS: js, Stream: stream, RunPrefix: "r/"})
	if _, err := first.Submit(ctx, noopTask("r/t")); err != nil {
		t.Fatal(err)
	}
	cons, err := js.Consumer(ctx, queue.StreamName, queue.ConsumerCritical)
	if err != nil {
		t.Fatal(err)
	}
	seq := waitExhausted(t, exhausted, fleet)
	return exhaustedRun{nc: nc, js: js, stream: stream, cons: cons, fleet: fleet, first: first, seq: seq}
}

// moveFloorPast has another task answered and acknowledged, which moves
// the consumer's ack floor past the exhausted message.
func (r exhaustedRun) moveFloorPast(ctx context.Context, t *testing.T) {
	t.Helper()
	if _, err := r.first.Submit(ctx, noopTask("r/other")); err != nil {
		t.Fatal(err)
	}
	batch, err := r.cons.Fetch(1, jetstream.FetchMaxWait(5*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	for m := range batch.Messages() {
		if err := m.DoubleAck(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if info, err := r.cons.Info(ctx); err != nil || info.AckFloor.Stream < r.seq {
		t.Fatalf("ack floor %+v (%v), want past %d", info.AckFloor, err, r.seq)
	}
}

// wantSentAgain checks that, after the resume or the sweep (after), the
// fleet was handed task r/t again, its exhausted message left the stream,
// and the result recorded by second resolves fut.
func (r exhaustedRun) wantSentAgain(ctx context.Context, t *testing.T, second *dispatch.Dispatcher, fut *dispatch.Future, after string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); len(r.fleet.seen()) < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("the task was not delivered again after the %s: deliveries %v", after, r.fleet.seen())
		}
		time.Sleep(50 * time.Millisecond)
	}
	if _, err := r.stream.GetMsg(ctx, r.seq); err == nil {
		t.Errorf("the exhausted message %d is still in the stream beside its new copy", r.seq)
	} else if !isNotFound(err) {
		t.Fatal(err)
	}
	if s := record(second, &pb.Result{TaskId: "r/t", Outcome: pb.Outcome_OUTCOME_OK}); s != pb.ReportAck_STATUS_RECORDED {
		t.Fatalf("result acked %v, want RECORDED", s)
	}
	<-fut.Done()
	if got := fut.Result().GetOutcome(); got != pb.Outcome_OUTCOME_OK {
		t.Errorf("outcome %v, want OK", got)
	}
}

// exhaustions reports the stream sequence of every task message that
// runs out of deliveries, from JetStream's advisory: by the time it is
// sent the consumer has dropped the message from its pending set, so the
// next acknowledgement of another message moves the ack floor past it.
// (The consumer's info is no such signal: its pending count can be back
// at zero while the message still counts as pending for the ack floor.)
func exhaustions(t *testing.T, nc *nats.Conn) <-chan uint64 {
	t.Helper()
	ch := make(chan uint64, 16)
	stop, err := queue.SubscribeMaxDeliveries(nc, func(a queue.MaxDeliveriesExceeded) {
		select {
		case ch <- a.StreamSeq:
		default:
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return ch
}

// waitExhausted waits for the run's one message to run out of deliveries
// after the fleet was handed it, and returns its stream sequence.
func waitExhausted(t *testing.T, exhausted <-chan uint64, fleet *stalledFleet) uint64 {
	t.Helper()
	select {
	case seq := <-exhausted:
		if fleet.seen()[seq] == 0 {
			t.Fatalf("message %d ran out of deliveries, but the fleet was handed %v", seq, fleet.seen())
		}
		return seq
	case <-time.After(20 * time.Second):
		t.Fatalf("the first message did not run out of deliveries: deliveries %v", fleet.seen())
		return 0
	}
}

// TestSweepRepublishesAnExhaustedMessageTakenAsQueued: the process that
// resumes a run submits a task whose old message has run out of
// deliveries (nobody heard the advisory) but is not yet below the
// consumer's ack floor, so the de-duplicated publish takes it as queued.
// Once the floor moves past it, no worker is handed it again: the sweep
// must queue the task again, though the stream still holds the message
// (nemesis.sh seed 11: a cell waited for the last of its 40 baseline
// tasks for over ten minutes, its first message in the stream past every
// ack floor).
func TestSweepRepublishesAnExhaustedMessageTakenAsQueued(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	r := startExhaustedRun(ctx, t)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()

	// The process that resumes the run submits the task while the floor
	// is still below the exhausted message: the publish is de-duplicated
	// and the task taken as queued.
	if info, err := r.cons.Info(ctx); err != nil || info.AckFloor.Stream >= r.seq {
		t.Fatalf("ack floor %+v (%v), want below %d: this test's premise no longer holds", info.AckFloor, err, r.seq)
	}
	second := dispatch.New(dispatch.Options{NC: r.nc, JS: r.js, Stream: r.stream, RunPrefix: "r/"})
	futs, err := second.Submit(ctx, noopTask("r/t"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.stream.GetMsg(ctx, r.seq); err != nil {
		t.Fatalf("the exhausted message left the stream on the resubmission (%v): this test's premise no longer holds", err)
	}
	// Another process's task is answered and acknowledged: the floor
	// moves past the exhausted message.
	r.moveFloorPast(ctx, t)
	wg.Go(func() { r.fleet.run(ctx, t, r.js) })

	// A task is compared with the floor once it has been queued a while.
	if n := second.Sweep(ctx, 0); n != 0 {
		t.Fatalf("the sweep queued %d tasks again before the task had been queued floorAge", n)
	}
	defer dispatch.SetFloorAge(0)()
	if n := second.Sweep(ctx, 0); n != 1 {
		t.Fatalf("the sweep queued %d tasks again, want 1 (the task whose message no worker will be handed)", n)
	}
	r.wantSentAgain(ctx, t, second, futs[0], "sweep")
}
