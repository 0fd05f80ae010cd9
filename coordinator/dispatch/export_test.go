package dispatch

import (
	"context"
	"time"

	"github.com/skillfleet/skillfleet/pkg/queue"
)

// Add makes d one of s's dispatchers until the returned func is called,
// as Run does for a dispatcher with [Options.Sweeper].
func (s *Sweeper) Add(d *Dispatcher) (remove func()) {
	remove, err := s.add(d)
	if err != nil {
		panic(err)
	}
	return remove
}

// Exhausted hands d the max-deliveries advisory of the message at seq, as
// its process's advisory subscription does.
func (d *Dispatcher) Exhausted(ctx context.Context, seq, deliveries uint64) {
	d.deliveriesExhausted(ctx, queue.MaxDeliveriesExceeded{StreamSeq: seq, Deliveries: deliveries})
}

// SetFloorAge sets how long a task stays queued before the sweep compares
// its message with the ack floor, until the returned func restores it.
// Not for parallel tests.
func SetFloorAge(d time.Duration) (restore func()) {
	old := floorAge
	floorAge = d
	return func() { floorAge = old }
}
