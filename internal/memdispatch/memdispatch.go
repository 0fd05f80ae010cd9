// Package memdispatch is an in-memory [trainer.Dispatcher]: it runs the
// trainer's tasks on a handler in this process (no NATS, no gRPC, no
// journal), so step- and epoch-level tests of the training loop run in
// milliseconds against the sim model.
//
// It keeps the guarantees the trainer relies on: a task id already in
// flight shares its future, one already recorded resolves at once, a
// cancelled task resolves as cancelled, and a cancelled task that ran
// anyway has its result recorded and handed to the late callback. It does
// not redeliver failed tasks (one delivery, as runtime.max_deliveries=1);
// the hub tests cover the real path's exactly-once and redelivery rules.
package memdispatch

import (
	"context"
	"fmt"
	"sync"

	"github.com/skillfleet/skillfleet/coordinator/dispatch"
	"github.com/skillfleet/skillfleet/coordinator/trainer"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Handler runs one task and returns its result (worker.Handler's method).
type Handler interface {
	Handle(ctx context.Context, t *pb.Task) *pb.Result
}

// Dispatcher runs tasks on a Handler with at most Slots at once.
type Dispatcher struct {
	h     Handler
	slots chan struct{}
	n     int

	mu       sync.Mutex
	pending  map[string]*inflight
	recorded map[string]*pb.Result
	skills   map[string]string
	late     map[string]func(*pb.Result)
	ran      int
}

var _ trainer.Dispatcher = (*Dispatcher)(nil)

// New returns a dispatcher running up to slots tasks at once on h
// (slots <= 0: 64).
func New(h Handler, slots int) *Dispatcher {
	if slots <= 0 {
		slots = 64
	}
	return &Dispatcher{h: h, slots: make(chan struct{}, slots), n: slots,
		pending: map[string]*inflight{}, recorded: map[string]*pb.Result{}, skills: map[string]string{}, late: map[string]func(*pb.Result){}}
}

// inflight is a task submitted and not yet finished: its future (the
// real dispatcher's type), the function that resolves it, and the cancel
// of its run.
type inflight struct {
	fut     *dispatch.Future
	resolve func(*pb.Result)
	cancel  context.CancelFunc
}

// Submit starts the tasks not recorded or in flight and returns a future
// per task, in order.
func (d *Dispatcher) Submit(ctx context.Context, tasks ...*pb.Task) ([]trainer.Future, error) {
	out := make([]trainer.Future, len(tasks))
	d.mu.Lock()
	defer d.mu.Unlock()
	for i, t := range tasks {
		id := t.GetId()
		if id == "" {
			return nil, fmt.Errorf("memdispatch: task %d has no id", i)
		}
		if r, ok := d.recorded[id]; ok {
			f, resolve := dispatch.NewFuture(id)
			resolve(r)
			out[i] = f
			continue
		}
		if p, ok := d.pending[id]; ok {
			out[i] = p.fut
			continue
		}
		// The task outlives the submitting call (as on a worker); only a
		// cancel stops it.
		tctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		f, resolve := dispatch.NewFuture(id)
		p := &inflight{fut: f, resolve: resolve, cancel: cancel}
		d.pending[id] = p
		delete(d.late, id)
		out[i] = f
		go d.run(tctx, t, p)
	}
	return out, nil
}

func (d *Dispatcher) run(ctx context.Context, t *pb.Task, p *inflight) {
	defer p.cancel()
	select {
	case d.slots <- struct{}{}:
	case <-ctx.Done():
		return // cancelled while queued: CancelWith resolved it
	}
	if ctx.Err() != nil {
		<-d.slots
		return
	}
	res := d.h.Handle(ctx, t)
	<-d.slots
	if res == nil {
		res = &pb.Result{Outcome: pb.Outcome_OUTCOME_MODEL_ERROR, Error: "handler returned no result"}
	}
	res.TaskId = t.GetId()
	d.mu.Lock()
	if cur, ok := d.pending[t.GetId()]; ok && cur == p {
		delete(d.pending, t.GetId())
		d.recorded[t.GetId()] = res
		d.ran++
		d.mu.Unlock()
		p.resolve(res)
		return
	}
	// Cancelled while running: a result that made calls is recorded (they
	// were made) and goes to the late callback; the future stays cancelled.
	late := d.late[t.GetId()]
	made := res.GetUsage().GetCalls() > 0 || res.GetOutcome() == pb.Outcome_OUTCOME_OK
	if made {
		if _, ok := d.recorded[t.GetId()]; !ok {
			d.recorded[t.GetId()] = res
			d.ran++
		}
	}
	d.mu.Unlock()
	if made && late != nil {
		late(res)
	}
}

// CancelWith resolves the futures of tasks not yet finished as cancelled
// and stops them; late sees the result of one that finishes anyway (one
// that made calls). It names none to wait for: a cancelled task that made
// no calls here reports nothing, and in-process calls end with the run.
func (d *Dispatcher) CancelWith(_ context.Context, late func(*pb.Result), ids ...string) []string {
	var cancelled []*inflight
	d.mu.Lock()
	for _, id := range ids {
		p, ok := d.pending[id]
		if !ok {
			continue
		}
		delete(d.pending, id)
		if late != nil {
			d.late[id] = late
		}
		cancelled = append(cancelled, p)
	}
	d.mu.Unlock()
	for _, p := range cancelled {
		p.resolve(&pb.Result{TaskId: p.fut.ID(), Outcome: pb.Outcome_OUTCOME_CANCELLED, Error: "cancelled by coordinator"})
		p.cancel()
	}
	return nil
}

// Lookup returns a recorded result.
func (d *Dispatcher) Lookup(id string) (*pb.Result, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	r, ok := d.recorded[id]
	return r, ok
}

// AddSkill makes a skill text available by hash (see [Dispatcher.Skill]).
func (d *Dispatcher) AddSkill(hash, text string) {
	d.mu.Lock()
	d.skills[hash] = text
	d.mu.Unlock()
}

// Skill returns a skill text added by hash.
func (d *Dispatcher) Skill(hash string) (string, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.skills[hash]
	return s, ok
}

// TargetSlots is the dispatcher's concurrency.
func (d *Dispatcher) TargetSlots() int { return d.n }

// Ran is how many tasks ran to a recorded result.
func (d *Dispatcher) Ran() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ran
}
