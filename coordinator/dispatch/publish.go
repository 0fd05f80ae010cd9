package dispatch

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/pkg/objstore"
	"github.com/skillfleet/skillfleet/pkg/queue"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Every message of a task goes out through one path: whoever moved the
// task into publishing or republishing (Submit, the bulk pump, the sweep,
// the max-deliveries advisory) makes a flight, launches it, settles it
// (its ack, a lost ack published again, a duplicate whose original is
// gone published under a fresh id) and lands it, which moves the task on
// if the claim still stands (task.go).

// flight is one publish of a task's message.
type flight struct {
	t *task
	// turn and from are the task's turn and state when it was claimed.
	turn uint64
	from state
	// msg is the message, with a header map of its own.
	msg *nats.Msg
	paf jetstream.PubAckFuture
	// fresh is set once the stream stored msg as a new message (not a
	// duplicate of an earlier one).
	fresh bool
}

// republishTimeout bounds a republish by the sweep or the advisory: one
// that fails leaves the task to the next sweep.
const republishTimeout = 2 * queue.PublishAckWait

// firstFlight is the flight of a task's first message of a submission.
// It is nil when the task waits for the bulk window instead (the pump
// publishes it), or was answered or cancelled since it was claimed.
func (d *Dispatcher) firstFlight(ctx context.Context, t *task, pt *pb.Task, class queue.Class, data []byte) *flight {
	subject := queue.TaskSubject(class, queue.KindOf(pt), queue.RunToken(pt.GetRunId()))
	trace := nats.Header{}
	if d.o.Propagator != nil {
		d.o.Propagator.Inject(ctx, queue.HeaderCarrier(trace))
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if t.state != publishing {
		return nil
	}
	t.subject, t.trace = subject, trace
	if d.windowed(class) {
		d.holdLocked(t, data)
		return nil
	}
	fl := d.flightLocked(t, publishing)
	fl.msg.Data = data
	return fl
}

// flightLocked is the flight of t's current message id, claimed in state
// from; its data is set by the caller.
func (d *Dispatcher) flightLocked(t *task, from state) *flight {
	return &flight{t: t, turn: t.turn, from: from, msg: &nats.Msg{Subject: t.subject, Header: t.header(t.msgID)}}
}

// launch publishes fl's message without waiting for its ack. A message
// too large for the server goes with its body in the object store. A
// publish the broken connection refuses at once is tried again as the
// client reconnects.
func (d *Dispatcher) launch(ctx context.Context, fl *flight) error {
	if d.o.Payloads != nil && d.o.NC != nil && !objstore.Fits(d.o.NC, fl.msg) {
		if err := d.offload(fl); err != nil {
			return fmt.Errorf("publish task %s: %w", fl.t.id, err)
		}
	}
	paf, err := d.o.JS.PublishMsgAsync(fl.msg)
	if err != nil {
		paf, err = queue.PublishAsyncAgain(ctx, d.o.JS, fl.msg, err)
	}
	if err != nil {
		return d.publishErr(fl.t.id, fl.msg, err)
	}
	fl.paf = paf
	return nil
}

// settle waits for fl's ack and returns the stream sequence of the
// task's message. A lost ack is published again under the same message
// id; an ack saying the stream already had that message id, while the
// message is gone (it ran out of deliveries or was dropped while this
// run's coordinator was away), is published under a fresh id, or
// JetStream's de-duplication would drop it too. A copy already answered
// is gone too, and needs nothing: the claim is checked first.
func (d *Dispatcher) settle(ctx context.Context, fl *flight) (uint64, error) {
	for renewed := false; ; renewed = true {
		var ack *jetstream.PubAck
		select {
		case ack = <-fl.paf.Ok():
		case err := <-fl.paf.Err():
			// A cluster electing a stream leader, or a lost ack: again,
			// under the same message id.
			if ack, err = queue.PublishAgain(ctx, d.o.JS, fl.msg, err); err != nil {
				return 0, fmt.Errorf("publish task %s: %w", fl.t.id, err)
			}
		case <-ctx.Done():
			return 0, ctx.Err()
		}
		if !ack.Duplicate || renewed || fl.from == republishing {
			// A message id of a republish is fresh: a duplicate of it is
			// its own copy, stored before an ack was lost.
			fl.fresh = true
			return ack.Sequence, nil
		}
		if !d.claimed(fl) || !d.vanished(ctx, ack.Sequence) {
			return ack.Sequence, nil
		}
		if !d.renew(fl) {
			return ack.Sequence, nil
		}
		if err := d.launch(ctx, fl); err != nil {
			return 0, err
		}
	}
}

// offloadTimeout bounds the put of one task's body in the object store.
const offloadTimeout = 2 * queue.PublishAckWait

// offload puts fl's data in the object store, under the name its task
// holds for this submission (a republish finds it there), and leaves the
// message with a header naming it and no data.
func (d *Dispatcher) offload(fl *flight) error {
	d.mu.Lock()
	t := fl.t
	name := t.payload
	if name == "" {
		name = objstore.NewName(t.id)
		if t.state.live() {
			t.payload = name
		} else {
			// Cancelled since it was claimed: the copy about to go out
			// is deleted when it lands; so is its body.
			d.unused = append(d.unused, name)
		}
	}
	d.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), offloadTimeout)
	defer cancel()
	if err := d.o.Payloads.Ensure(ctx, name, fl.msg.Data); err != nil {
		return err
	}
	fl.msg.Header.Set(objstore.Header, name)
	fl.msg.Data = nil
	return nil
}

// deleteUnused deletes the object store bodies of tasks that ended, until
// ctx ends; then once more, briefly, for the tasks that ended last.
func (d *Dispatcher) deleteUnused(ctx context.Context) {
	drain := func(ctx context.Context) {
		d.mu.Lock()
		names := d.unused
		d.unused = nil
		d.mu.Unlock()
		for _, name := range names {
			if err := d.o.Payloads.Delete(ctx, name); err != nil {
				d.log.Debug("object store body of an ended task left to its TTL", "name", name, "err", err)
			}
		}
	}
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			drain(fctx)
			cancel()
			return
		case <-d.unusedBell:
			drain(ctx)
		}
	}
}

// claimed reports whether fl's claim on its task still stands.
func (d *Dispatcher) claimed(fl *flight) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	return fl.t.turn == fl.turn && fl.t.state == fl.from
}

// renew gives fl a fresh message id, if its claim still stands.
func (d *Dispatcher) renew(fl *flight) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	t := fl.t
	if t.turn != fl.turn || t.state != fl.from {
		return false
	}
	t.msgID = t.freshMsgID()
	h := t.header(t.msgID)
	if name := fl.msg.Header.Get(objstore.Header); name != "" {
		h.Set(objstore.Header, name) // its body stays where it is
	}
	fl.msg = &nats.Msg{Subject: fl.msg.Subject, Header: h, Data: fl.msg.Data}
	return true
}

// land moves fl's task on once its publish settled: to queued at seq, or,
// when it failed (err), back to queued at its old message for a
// republish and to failed (its future resolved with outcome o) for a
// first publish. A copy whose task moved on meanwhile is deleted.
func (d *Dispatcher) land(fl *flight, seq uint64, err error, o pb.Outcome) {
	d.mu.Lock()
	fut := fl.t.fut
	fail, del := d.landedLocked(fl, seq, err)
	if fail {
		fl.t.fut = nil
	}
	d.mu.Unlock()
	if fail && fut != nil {
		fut.resolve(&pb.Result{TaskId: fl.t.id, Outcome: o, Error: err.Error()})
	}
	if del && d.o.Stream != nil {
		_ = d.o.Stream.DeleteMsg(context.Background(), seq)
	}
}

// republish sends a claimed lost task's new message (fl, in state
// republishing) and lands it; the claim counted in d.flights ends here.
func (d *Dispatcher) republish(ctx context.Context, fl *flight) (uint64, error) {
	defer d.flights.Done()
	ctx, cancel := context.WithTimeout(ctx, republishTimeout)
	defer cancel()
	d.mu.Lock()
	pt := fl.t.t
	d.mu.Unlock()
	data, err := d.encode(pt)
	if err == nil {
		fl.msg.Data = data
		if err = d.launch(ctx, fl); err == nil {
			var seq uint64
			if seq, err = d.settle(ctx, fl); err == nil {
				d.land(fl, seq, nil, 0)
				d.log.Info("task republished: its earlier copy left the queue without a result", "task_id", fl.t.id)
				return seq, nil
			}
		}
	}
	err = fmt.Errorf("republish task %s: %w", fl.t.id, err)
	d.land(fl, 0, err, 0)
	return 0, err
}

// publishErr says why a task could not be published; a task larger than
// the server allows names both sizes and the server setting to raise.
func (d *Dispatcher) publishErr(id string, msg *nats.Msg, err error) error {
	if errors.Is(err, nats.ErrMaxPayload) {
		size := len(msg.Data)
		for k, vs := range msg.Header {
			for _, v := range vs {
				size += len(k) + len(v) + 4
			}
		}
		return fmt.Errorf("publish task %s: it is %d bytes, more than the NATS server's max_payload of %d bytes: raise max_payload in the server's configuration (deploy/base/nats.yaml sets 8MB): %w",
			id, size, d.o.NC.MaxPayload(), err)
	}
	return fmt.Errorf("publish task %s: %w", id, err)
}
