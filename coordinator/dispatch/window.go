package dispatch

import (
	"context"
	"time"

	"github.com/nats-io/nats.go"

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
	published := 0
	for ctx.Err() == nil {
		d.mu.Lock()
		var h heldTask
		found := false
		for len(d.held) > 0 && len(d.bulkOut) < window {
			h, d.held = d.held[0], d.held[1:]
			if d.pending[h.f.id] == h.f { // not cancelled meanwhile
				found = true
				d.bulkOut[h.f.id] = true
				break
			}
		}
		d.mu.Unlock()
		if !found {
			break
		}
		msg := d.taskMsg(h.trace, h.task, queue.ClassBulk, h.data, "")
		seq, err := d.publishSync(ctx, msg)
		if err != nil {
			d.mu.Lock()
			delete(d.bulkOut, h.f.id)
			d.mu.Unlock()
			d.log.Warn("publish bulk task", "task_id", h.f.id, "err", err)
			d.fail(h.f, pb.Outcome_OUTCOME_MODEL_ERROR, "publish: "+err.Error())
			continue
		}
		d.mu.Lock()
		h.f.seq, h.f.msg, h.f.published = seq, msg, time.Now()
		if d.pending[h.f.id] == h.f {
			d.seqs[seq] = h.f.id
		}
		d.mu.Unlock()
		published++
	}
	if published > 0 && d.o.NC != nil {
		_ = d.o.NC.Publish(queue.ReadySubject, []byte(queue.ClassBulk))
	}
}

// publishSync publishes one task message and returns its stream sequence,
// republishing under a fresh id when de-duplication hit a vanished copy.
func (d *Dispatcher) publishSync(ctx context.Context, msg *nats.Msg) (uint64, error) {
	ack, err := d.o.JS.PublishMsg(ctx, msg)
	if err != nil {
		return 0, err
	}
	if ack.Duplicate && d.vanished(ctx, ack.Sequence) {
		return d.republish(ctx, msg)
	}
	return ack.Sequence, nil
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
