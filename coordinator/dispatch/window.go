package dispatch

import (
	"context"
	"fmt"
	"time"

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

// heldRef is a held task in the window's queue, with the turn it was
// held at: a task cancelled (or submitted again) since has moved on.
type heldRef struct {
	t    *task
	turn uint64
}

// windowed reports whether a task of class c waits for the bulk window.
func (d *Dispatcher) windowed(c queue.Class) bool {
	return c == queue.ClassBulk && d.o.BulkWindow != nil
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
	out := d.releaseLocked(window)
	fls := make([]*flight, 0, len(out))
	for _, t := range out {
		fl := d.flightLocked(t, publishing)
		fl.msg.Data, t.data = t.data, nil
		fls = append(fls, fl)
	}
	d.mu.Unlock()
	// The released tasks go out in one burst (asynchronous publishes,
	// then their acks), so a run's bulk wave lands in the stream as one
	// run of messages rather than one message per round trip interleaved
	// with every other run's.
	sent := fls[:0]
	for _, fl := range fls {
		if err := d.launch(ctx, fl); err != nil {
			d.log.Warn("publish bulk task", "task_id", fl.t.id, "err", err)
			d.land(fl, 0, fmt.Errorf("publish: %w", err), pb.Outcome_OUTCOME_MODEL_ERROR)
			continue
		}
		sent = append(sent, fl)
	}
	published := 0
	for _, fl := range sent {
		seq, err := d.settle(ctx, fl)
		if ctx.Err() != nil {
			// The run is ending: its futures are no longer waited for.
			return
		}
		if err != nil {
			d.log.Warn("publish bulk task", "task_id", fl.t.id, "err", err)
			err = fmt.Errorf("publish: %w", err)
		} else {
			published++
		}
		d.land(fl, seq, err, pb.Outcome_OUTCOME_MODEL_ERROR)
	}
	if published > 0 && d.o.NC != nil {
		_ = d.o.NC.Publish(queue.ReadySubject, []byte(queue.ClassBulk))
	}
}

// Held reports how many bulk tasks wait for the window.
func (d *Dispatcher) Held() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, h := range d.held {
		if h.t.state == held && h.t.turn == h.turn {
			n++
		}
	}
	return n
}
