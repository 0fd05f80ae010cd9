package dispatch

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/pkg/queue"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Bulk work (baseline and test evaluations) is published through a
// window: at most BulkWindow() of a run's bulk tasks are in the stream or
// running at once, the rest wait here in submission order. Runs sharing a
// fleet then interleave their bulk work in proportion to their windows
// (each run's weight), instead of the first run to publish 1,400 test
// rollouts holding every worker until they are done. Critical and
// optimizer work is never held back.

type heldTask struct {
	task *pb.Task
	f    *Future
	data []byte
	// trace is the submitter's context, kept (without its cancellation)
	// for the trace context the task's message carries.
	trace context.Context
}

// windowed reports whether a task of class c waits for the bulk window.
func (d *Dispatcher) windowed(c queue.Class) bool {
	return c == queue.ClassBulk && d.o.BulkWindow != nil
}

// hold queues a bulk task for the pump.
func (d *Dispatcher) hold(ctx context.Context, t *pb.Task, f *Future, data []byte) {
	d.mu.Lock()
	d.held = append(d.held, heldTask{task: t, f: f, data: data, trace: context.WithoutCancel(ctx)})
	d.mu.Unlock()
	d.kick()
}

func (d *Dispatcher) kick() {
	select {
	case d.pumpBell <- struct{}{}:
	default:
	}
}

// pump publishes held bulk tasks while the window has room, until ctx ends.
func (d *Dispatcher) pump(ctx context.Context) {
	t := time.NewTicker(time.Second) // windows follow the fleet's size
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-d.pumpBell:
		case <-t.C:
		}
		d.pumpOnce(ctx)
	}
}

func (d *Dispatcher) pumpOnce(ctx context.Context) {
	window := max(d.o.BulkWindow(), 1)
	d.mu.Lock()
	var out []heldTask
	for len(d.held) > 0 && len(d.bulkOut) < window {
		var h heldTask
		h, d.held = d.held[0], d.held[1:]
		if d.pending[h.f.id] == h.f { // not cancelled meanwhile
			d.bulkOut[h.f.id] = true
			out = append(out, h)
		}
	}
	d.mu.Unlock()
	// The released tasks go out in one burst (asynchronous publishes,
	// then their acks), so a run's bulk wave lands in the stream as one
	// run of messages rather than one message per round trip interleaved
	// with every other run's.
	type pub struct {
		h   heldTask
		msg *nats.Msg
		paf jetstream.PubAckFuture
	}
	pubs := make([]pub, 0, len(out))
	failed := func(h heldTask, err error) {
		d.mu.Lock()
		delete(d.bulkOut, h.f.id)
		d.mu.Unlock()
		d.log.Warn("publish bulk task", "task_id", h.f.id, "err", err)
		d.fail(h.f, pb.Outcome_OUTCOME_MODEL_ERROR, "publish: "+err.Error())
	}
	for _, h := range out {
		msg := d.taskMsg(h.trace, h.task, queue.ClassBulk, h.data, "")
		paf, err := d.o.JS.PublishMsgAsync(msg)
		if err != nil {
			failed(h, err)
			continue
		}
		pubs = append(pubs, pub{h: h, msg: msg, paf: paf})
	}
	published := 0
	for _, p := range pubs {
		var seq uint64
		select {
		case ack := <-p.paf.Ok():
			seq = ack.Sequence
			if ack.Duplicate && !d.answered(p.h.f.id) && d.vanished(ctx, ack.Sequence) {
				var err error
				if seq, err = d.republish(ctx, p.msg, nil); err != nil {
					failed(p.h, err)
					continue
				}
			}
		case err := <-p.paf.Err():
			// A cluster electing a stream leader, or a lost ack: again,
			// under the same message id.
			ack, err := queue.PublishAgain(ctx, d.o.JS, p.msg, err)
			if err != nil {
				failed(p.h, err)
				continue
			}
			seq = ack.Sequence
			if ack.Duplicate && !d.answered(p.h.f.id) && d.vanished(ctx, ack.Sequence) {
				if seq, err = d.republish(ctx, p.msg, nil); err != nil {
					failed(p.h, err)
					continue
				}
			}
		case <-ctx.Done():
			return
		}
		d.mu.Lock()
		p.h.f.seq, p.h.f.msg, p.h.f.task, p.h.f.published = seq, kept(p.msg), p.h.task, time.Now()
		if d.pending[p.h.f.id] == p.h.f {
			d.seqs[seq] = p.h.f.id
		}
		d.mu.Unlock()
		published++
	}
	if published > 0 && d.o.NC != nil {
		_ = d.o.NC.Publish(queue.ReadySubject, []byte(queue.ClassBulk))
	}
}

// releaseBulk frees a bulk window slot held by task id.
func (d *Dispatcher) releaseBulkLocked(id string) bool {
	if d.bulkOut[id] {
		delete(d.bulkOut, id)
		return true
	}
	return false
}

// Held reports how many bulk tasks wait for the window.
func (d *Dispatcher) Held() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.held)
}
