// Package dispatch publishes tasks to the JetStream work queue and turns
// the results workers report into resolved futures. It owns the pending-task
// map and the result journal; results are recorded effectively once, keyed
// by task id.
package dispatch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/propagation"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/skillfleet/skillfleet/pkg/objstore"
	"github.com/skillfleet/skillfleet/pkg/queue"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// coordinatorField and wireVersionField are the field numbers of
// Task.coordinator and Task.wire_version.
const (
	coordinatorField = 6
	wireVersionField = 7
)

// ErrClosed is returned by Submit after the dispatcher stopped.
var ErrClosed = errors.New("dispatcher closed")

// Options configures a Dispatcher.
type Options struct {
	Logger *slog.Logger
	NC     *nats.Conn
	JS     jetstream.JetStream
	// Stream is the task stream (for deleting cancelled queued tasks).
	Stream jetstream.Stream
	// Journal records results durably and keeps them: the dispatcher holds
	// only where each result is and reads it back when asked for it. The
	// results it held when opened ([Journal.Recovered]) count as recorded
	// (and the journal forgets them).
	Journal *Journal
	// Recorded are results recorded before, kept in memory (for a
	// dispatcher without a journal).
	Recorded []*pb.Result
	// RunPrefix: results whose task id does not start with it belong to
	// another run and are answered STATUS_UNKNOWN.
	RunPrefix string
	// OnResult, if set, sees every newly recorded result (accounting, progress).
	OnResult func(*pb.Result)
	// Propagator injects trace context into task headers (nil = none).
	Propagator propagation.TextMapPropagator
	// Cache, if set, serves tasks measured before instead of publishing
	// them, and keeps every fresh successful result for later.
	Cache *Cache
	// BulkWindow, if set, bounds this run's bulk tasks (baseline and test
	// evaluations) in the stream or running at once; see window.go.
	BulkWindow func() int
	// Addr is the coordinator's advertised gRPC address, written into
	// every task so a worker that does not find the run in the run
	// directory still knows where its result goes.
	Addr string
	// OnFatal, if set, is called once when the journal fails (a full
	// disk): no result can be recorded any more, so the run must stop.
	// From then on Submit refuses tasks and every Future's Wait returns
	// the error.
	OnFatal func(error)
	// Generations bounds how many times a task that ran out of its
	// deliveries is queued again as a new message before it is recorded
	// as failed (default [DefaultGenerations]; 1 = never queued again).
	// A delivery runs out when no worker acknowledged it or sent a
	// heartbeat within the consumer's AckWait: its worker died, or a
	// stalled machine held its heartbeats back while the call went on. A
	// worker that fails a task on its last delivery reports the failure
	// itself, so only a task no worker finished reaches this bound.
	Generations int
	// Sweeper, if set, looks for this dispatcher's lost tasks together
	// with the other runs of its process while Run runs; without one, Run
	// runs a sweeper of its own.
	Sweeper *Sweeper
	// Payloads, if set, carries the bodies of tasks too large for one
	// NATS message (the server's max_payload): such a task's message
	// names its body in the object store, and the body is deleted once
	// the task has ended. Without it such a task fails to publish.
	Payloads *objstore.Store
}

// DefaultGenerations is [Options.Generations]' default: with the
// consumers' five deliveries, a task goes out up to fifteen times before
// it counts as failed.
const DefaultGenerations = 3

// Dispatcher publishes tasks and resolves their futures.
type Dispatcher struct {
	o   Options
	log *slog.Logger

	// fatal is closed when the journal fails; fatalOnce guards it.
	fatal     chan struct{}
	fatalOnce sync.Once

	// mu guards every task's record and state (task.go).
	mu sync.Mutex
	// tasks holds the record of every task not recorded: live, cancelled
	// or failed.
	tasks map[string]*task
	// recorded holds, for every recorded task id, where its result is.
	recorded map[string]rec
	// seqs maps the stream sequence of each task's message to its record.
	seqs map[uint64]*task
	// spent sees the usage of results that arrive once too often (a task
	// run twice after a redelivery or a cancel): their calls were made
	// and paid for.
	spent func(res *pb.Result, stage string)
	// closed refuses new submissions; stopped refuses new republishes
	// (the run withdrew), and flights counts the republishes under way.
	closed  bool
	stopped bool
	flights sync.WaitGroup
	// held are bulk tasks waiting for the bulk window, bulkOut the bulk
	// tasks holding a slot of it.
	held     []heldRef
	bulkOut  int
	pumpBell chan struct{}
	// unused are the object store bodies of tasks that ended, for Run to
	// delete; unusedBell wakes it.
	unused     []string
	unusedBell chan struct{}

	// refusals are the workers that said they cannot serve a task.
	refusals refusals
}

// rec is what the dispatcher keeps of a recorded result: where the
// journal holds it or, with no journal, the result itself, and the stage
// of its task (for the accounting of duplicates).
type rec struct {
	off   int64
	size  uint32
	res   *pb.Result
	stage string
}

// Future is the eventual result of one task.
type Future struct {
	id string
	// fatal is closed when the journal fails; err then says why.
	fatal <-chan struct{}
	err   func() error
	done  chan struct{}
	res   *pb.Result
	once  sync.Once
}

// ID is the task id.
func (f *Future) ID() string { return f.id }

// Done is closed when the result is known.
func (f *Future) Done() <-chan struct{} { return f.done }

// Result is the task's result; valid after Done is closed. A rollout's
// trajectory is left out of a result the journal holds: [Dispatcher.Lookup]
// reads it back whole.
func (f *Future) Result() *pb.Result { return f.res }

// Wait blocks until the result is known, ctx ends, or the dispatcher's
// journal fails (see [Options].OnFatal).
func (f *Future) Wait(ctx context.Context) (*pb.Result, error) {
	select {
	case <-f.done:
		return f.res, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-f.fatal:
		return nil, f.err()
	}
}

// lean is res without its rollout's trajectory, sharing every other field
// with res (res itself is not changed): what a future of a result the
// journal holds keeps, so that a run's waves hold scores and ids in
// memory and their trajectories on disk ([Dispatcher.Lookup] reads the
// whole result back).
func lean(res *pb.Result) *pb.Result {
	ro := res.GetRollout()
	if len(ro.GetTrajectory()) == 0 {
		return res
	}
	out := &pb.Result{}
	src, dst := res.ProtoReflect(), out.ProtoReflect()
	body := src.Descriptor().Fields().ByName("rollout")
	src.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd != body {
			dst.Set(fd, v)
		}
		return true
	})
	lro := &pb.RolloutResult{}
	rsrc, rdst := ro.ProtoReflect(), lro.ProtoReflect()
	traj := rsrc.Descriptor().Fields().ByName("trajectory")
	rsrc.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		if fd != traj {
			rdst.Set(fd, v)
		}
		return true
	})
	out.Body = &pb.Result_Rollout{Rollout: lro}
	return out
}

func (f *Future) resolve(r *pb.Result) {
	f.once.Do(func() {
		f.res = r
		close(f.done)
	})
}

// newFuture returns an unresolved future for task id; once fatal is
// closed, Wait returns err() (a nil fatal never closes).
func newFuture(id string, fatal <-chan struct{}, err func() error) *Future {
	return &Future{id: id, done: make(chan struct{}), fatal: fatal, err: err}
}

// NewFuture returns an unresolved future for task id, and the function
// that resolves it (the first result wins), for a dispatcher other than
// this package's (the trainer's in-memory one): its futures behave as
// these do. Having no journal that can fail, it ends Wait only with the
// result or ctx.
func NewFuture(id string) (*Future, func(*pb.Result)) {
	f := newFuture(id, nil, nil)
	return f, f.resolve
}

// New returns a Dispatcher primed with already recorded results.
func New(o Options) *Dispatcher {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	d := &Dispatcher{
		o:        o,
		log:      o.Logger,
		fatal:    make(chan struct{}),
		tasks:    map[string]*task{},
		recorded: make(map[string]rec, len(o.Recorded)),
		seqs:     map[uint64]*task{},
		pumpBell: make(chan struct{}, 1),

		unusedBell: make(chan struct{}, 1),
	}
	for _, r := range o.Recorded {
		d.recorded[r.GetTaskId()] = rec{res: r}
	}
	if o.Journal != nil {
		for _, ref := range o.Journal.takeRecovered() {
			d.recorded[ref.TaskID] = rec{off: ref.Off, size: ref.Size}
		}
	}
	return d
}

// result returns the recorded result of task id that r locates, reading
// it back from the journal. A failed read fails the journal and so the
// run ([Options].OnFatal).
func (d *Dispatcher) result(id string, r rec) (*pb.Result, error) {
	if r.res != nil {
		return r.res, nil
	}
	res, err := d.o.Journal.ReadAt(Ref{TaskID: id, Off: r.off, Size: r.size})
	if err != nil {
		d.log.Error("read back recorded result", "task_id", id, "err", err)
		d.journalFailed()
		return nil, err
	}
	return res, nil
}

// journalFailed stops the dispatcher once the journal has failed: Submit
// refuses tasks, every Future's Wait returns the error and OnFatal is told.
func (d *Dispatcher) journalFailed() {
	if d.Err() == nil {
		return
	}
	d.fatalOnce.Do(func() {
		close(d.fatal)
		if d.o.OnFatal != nil {
			d.o.OnFatal(d.Err())
		}
	})
}

// Run handles the tasks that ran out of deliveries (through its
// process's [Sweeper], which also sweeps for lost tasks) and publishes
// held bulk tasks. When ctx ends it stops republishing at once (the run
// is withdrawing), and it returns nil once its goroutines, the
// republishes under way and the cache's pending puts have ended.
func (d *Dispatcher) Run(ctx context.Context) error {
	if d.o.Cache != nil {
		defer d.o.Cache.Flush()
	}
	if d.o.NC == nil {
		<-ctx.Done()
		d.stop()
		return nil
	}
	s := d.o.Sweeper
	own := s == nil
	if own {
		s = NewSweeper(d.log)
	}
	leave, err := s.add(d)
	if err != nil {
		return err
	}
	defer leave()
	var wg sync.WaitGroup
	if own && d.o.Stream != nil {
		wg.Go(func() { _ = s.Run(ctx) })
	}
	if d.o.BulkWindow != nil {
		wg.Go(func() { d.pump(ctx) })
	}
	if d.o.Payloads != nil {
		wg.Go(func() { d.deleteUnused(ctx) })
	}
	<-ctx.Done()
	d.stop()
	wg.Wait()
	return nil
}

// stop refuses new submissions and republishes, and waits for the
// republishes under way.
func (d *Dispatcher) stop() {
	d.mu.Lock()
	d.closed, d.stopped = true, true
	d.mu.Unlock()
	d.flights.Wait()
}

// deliveriesExhausted handles the advisory of a message that ran out of
// deliveries with no result, and reports whether the message is one of
// this dispatcher's (its process's sweeper hands the advisory to each of
// its dispatchers until one owns it). The owner deletes the message, and
// queues its task again as a new message, up to Options.Generations
// times in all, and only then records it as failed. No worker finished it
// in time, which on a machine stalled for seconds says nothing about the
// task itself: a worker may still be running it, and its result, when it
// comes, is recorded like any other.
func (d *Dispatcher) deliveriesExhausted(ctx context.Context, a queue.MaxDeliveriesExceeded) bool {
	d.mu.Lock()
	t := d.seqs[a.StreamSeq]
	if t == nil || t.seq != a.StreamSeq {
		d.mu.Unlock()
		return false
	}
	if d.stopped {
		d.mu.Unlock()
		return true
	}
	claimed, out := d.claimLostLocked(a.StreamSeq, true)
	var fl *flight
	var rt *task
	switch {
	case out:
		rt, _, _ = d.beginRecordLocked(t.id)
	case claimed != nil:
		fl = d.flightLocked(t, republishing)
	}
	// A task whose result is being recorded keeps its message for the
	// worker's ack; once exhausted, no worker will ack it.
	del := claimed != nil || t.state == recording
	generation := t.generation
	d.mu.Unlock()
	if del && d.o.Stream != nil {
		_ = d.o.Stream.DeleteMsg(context.WithoutCancel(ctx), a.StreamSeq)
	}
	switch {
	case fl != nil:
		if seq, err := d.republish(ctx, fl); err != nil {
			// The lost-task sweep queues it again once the stream answers.
			d.log.Warn("task ran out of deliveries; queueing it again failed", "task_id", t.id, "err", err)
		} else {
			d.log.Warn("task ran out of deliveries; queued again", "task_id", t.id,
				"deliveries", a.Deliveries, "generation", generation+1, "of", d.generations(), "seq", seq)
		}
	case rt != nil:
		d.writeRecord(rt, d.exhaustedResult(t.id, a.Deliveries), func(pb.ReportAck_Status, error) {})
	}
	return true
}

// exhaustedResult is the failure recorded for task id once every
// generation of it ran out of deliveries.
func (d *Dispatcher) exhaustedResult(id string, deliveries uint64) *pb.Result {
	attempts := int32(deliveries) * int32(d.generations())
	if why := d.refusal(id); why != "" {
		// Every worker that took it said it cannot serve it: the run is
		// told which task and which versions, and no result is invented.
		msg := fmt.Sprintf("task %s: no live worker can serve it after %d deliveries in each of %d generations (%s); upgrade the workers (docs/upgrades.md)",
			id, deliveries, d.generations(), why)
		d.log.Error("task no live worker can serve", "task_id", id, "err", msg)
		return &pb.Result{TaskId: id, Outcome: pb.Outcome_OUTCOME_UNSUPPORTED, Error: msg, WireVersion: pb.WireVersion, Attempt: attempts}
	}
	d.log.Warn("task ran out of deliveries", "task_id", id, "deliveries", deliveries)
	return &pb.Result{
		TaskId:  id,
		Outcome: pb.Outcome_OUTCOME_MODEL_ERROR,
		Error:   fmt.Sprintf("no result after %d deliveries in each of %d generations (workers died or stalled)", deliveries, d.generations()),
		Attempt: attempts,
	}
}

// ring wakes idle workers of every class: tasks were queued again.
func (d *Dispatcher) ring() {
	if d.o.NC == nil {
		return
	}
	for _, c := range queue.Classes {
		_ = d.o.NC.Publish(queue.ReadySubject, []byte(c))
	}
}

func (d *Dispatcher) generations() int {
	if d.o.Generations > 0 {
		return d.o.Generations
	}
	return DefaultGenerations
}

// SweepEvery is how often the dispatcher looks for lost tasks.
var SweepEvery = 5 * time.Second

// Lookup returns the recorded result of a task id, if any, read back
// from the journal. A result the journal cannot give back is not found
// (and fails the journal).
func (d *Dispatcher) Lookup(id string) (*pb.Result, bool) {
	d.mu.Lock()
	r, ok := d.recorded[id]
	d.mu.Unlock()
	if !ok {
		return nil, false
	}
	res, err := d.result(id, r)
	return res, err == nil
}

// Submit publishes tasks and returns one future per task, in order. A task
// whose result is already recorded is not published again; a task already
// pending shares its future. Re-publishing a task that is still queued is
// harmless: JetStream drops it as a duplicate of its Nats-Msg-Id. When a
// publish fails Submit returns the error; each task of the batch is then
// either published and pending or failed and no longer pending, so
// submitting the batch again publishes exactly the ones that failed.
func (d *Dispatcher) Submit(ctx context.Context, tasks ...*pb.Task) ([]*Future, error) {
	if err := d.Err(); err != nil {
		return nil, err
	}
	futs := make([]*Future, len(tasks))
	type known struct {
		i int
		r rec
	}
	var knowns []known
	var toSend []int
	recs := make([]*task, len(tasks))
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, ErrClosed
	}
	for i, pt := range tasks {
		f, r, t := d.submitLocked(pt)
		futs[i] = f
		switch {
		case r != nil:
			knowns = append(knowns, known{i, *r})
		case t != nil:
			recs[i] = t
			toSend = append(toSend, i)
		}
	}
	d.mu.Unlock()
	for _, k := range knowns {
		res, err := d.result(futs[k.i].id, k.r)
		if err != nil {
			// The journal failed: nothing of this batch goes out.
			for _, j := range toSend {
				d.fail(recs[j], pb.Outcome_OUTCOME_MODEL_ERROR, "not published: "+err.Error())
			}
			return nil, err
		}
		if k.r.res == nil {
			res = lean(res) // the journal keeps the rest
		}
		futs[k.i].resolve(res)
	}
	toSend = d.serveCached(ctx, tasks, recs, toSend)

	// Once a publish is refused the rest of the batch is not tried: those
	// tasks fail (and can be submitted again), while the tasks already
	// sent are followed to their acks, so every task of the batch ends up
	// published or failed.
	var firstErr error
	classes := map[queue.Class]bool{}
	fls := make([]*flight, 0, len(toSend))
	for _, i := range toSend {
		pt, t := tasks[i], recs[i]
		if firstErr != nil {
			d.fail(t, pb.Outcome_OUTCOME_MODEL_ERROR, "not published: "+firstErr.Error())
			continue
		}
		if queue.KindOf(pt) == "" {
			d.fail(t, pb.Outcome_OUTCOME_BAD_TASK, "task has no kind")
			continue
		}
		data, err := d.encode(pt)
		if err != nil {
			d.fail(t, pb.Outcome_OUTCOME_BAD_TASK, err.Error())
			continue
		}
		class := queue.ClassOf(pt)
		fl := d.firstFlight(ctx, t, pt, class, data)
		if fl == nil {
			continue // held for the bulk window, or answered or cancelled meanwhile
		}
		if err := d.launch(ctx, fl); err != nil {
			firstErr = err
			d.land(fl, 0, err, pb.Outcome_OUTCOME_MODEL_ERROR)
			continue
		}
		classes[class] = true
		fls = append(fls, fl)
	}
	for k, fl := range fls {
		seq, err := d.settle(ctx, fl)
		if ctx.Err() != nil {
			// Whether these reached the stream is unknown: they fail
			// rather than wait unswept; a result a worker still reports
			// for one is recorded like any other.
			for _, q := range fls[k:] {
				d.land(q, 0, errors.New("submit ended before the publish was acknowledged: "+ctx.Err().Error()), pb.Outcome_OUTCOME_CANCELLED)
			}
			return nil, ctx.Err()
		}
		d.land(fl, seq, err, pb.Outcome_OUTCOME_MODEL_ERROR)
		if err != nil && firstErr == nil {
			firstErr = err
		}
	}
	if len(fls) > 0 && d.o.NC != nil {
		for c := range classes {
			_ = d.o.NC.Publish(queue.ReadySubject, []byte(c))
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return futs, nil
}

// serveCached records the cached results of the tasks toSend indexes and
// returns the indexes of the others, which are to be published.
func (d *Dispatcher) serveCached(ctx context.Context, tasks []*pb.Task, recs []*task, toSend []int) []int {
	c := d.o.Cache
	if c == nil || len(toSend) == 0 {
		return toSend
	}
	send := make([]*pb.Task, len(toSend))
	for j, i := range toSend {
		send[j] = tasks[i]
	}
	hits, keys := c.lookup(ctx, send)
	d.mu.Lock()
	for j, i := range toSend {
		if keys[j] != "" && hits[j] == nil {
			recs[i].cacheKey = keys[j]
		}
	}
	d.mu.Unlock()
	rest := toSend[:0]
	for j, i := range toSend {
		if hits[j] == nil {
			rest = append(rest, i)
			continue
		}
		// Recorded (journaled) like a worker's result; the future
		// resolves when it is durable.
		t := recs[i]
		d.Record(hits[j], func(_ pb.ReportAck_Status, err error) {
			if err != nil {
				// The journal failed: the run cannot record anything;
				// the task fails rather than waiting forever.
				d.fail(t, pb.Outcome_OUTCOME_MODEL_ERROR, "record cached result: "+err.Error())
			}
		})
	}
	return rest
}

// encode is a task's message data: its encoding, stamped with the wire
// version and this coordinator's address unless the task names them.
func (d *Dispatcher) encode(t *pb.Task) ([]byte, error) {
	// Sized for the stamps, so that appending them does not copy the
	// encoding (an optimizer task's payload can be megabytes).
	data, err := proto.MarshalOptions{}.MarshalAppend(make([]byte, 0, proto.Size(t)+16+len(d.o.Addr)), t)
	if err != nil {
		return nil, fmt.Errorf("encode task: %w", err)
	}
	if t.GetWireVersion() == 0 {
		// Stamped on the encoding, as the address below is.
		data = protowire.AppendTag(data, wireVersionField, protowire.VarintType)
		data = protowire.AppendVarint(data, uint64(pb.WireVersion))
	}
	if t.GetCoordinator() == "" && d.o.Addr != "" {
		// Appended to the encoding rather than set on t, which the
		// trainer may be reading elsewhere: a later field wins.
		data = protowire.AppendTag(data, coordinatorField, protowire.BytesType)
		data = protowire.AppendString(data, d.o.Addr)
	}
	return data, nil
}

// vanished reports whether the stream no longer holds the message at seq
// (the original of a de-duplicated publish, or a task the sweep found
// missing), or holds it where no worker will be handed it again: at or
// below its class consumer's ack floor, a message that ran out of
// deliveries while no process of its run listened for the advisory (the
// member that owned the run was killed). Such a message is deleted, so
// that the fresh copy is the task's only one. It asks the stream's
// leader: a direct get may be answered by a replica that is behind.
func (d *Dispatcher) vanished(ctx context.Context, seq uint64) bool {
	if d.o.Stream == nil {
		return false
	}
	var subject string
	if d.o.NC == nil || d.o.JS == nil {
		m, err := d.o.Stream.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return true
		}
		if err != nil {
			return false
		}
		subject = m.Subject
	} else {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		req, _ := json.Marshal(struct {
			Seq uint64 `json:"seq"`
		}{seq})
		m, err := d.o.NC.RequestWithContext(ctx, d.api("STREAM.MSG.GET."), req)
		if err != nil {
			return false
		}
		var resp struct {
			Error *struct {
				ErrCode int `json:"err_code"`
			} `json:"error"`
			Message *struct {
				Subject string `json:"subject"`
			} `json:"message"`
		}
		if json.Unmarshal(m.Data, &resp) != nil {
			return false
		}
		if resp.Error != nil {
			return resp.Error.ErrCode == int(jetstream.JSErrCodeMessageNotFound)
		}
		if resp.Message == nil {
			return false
		}
		subject = resp.Message.Subject
	}
	if !d.undeliverable(ctx, seq, subject) {
		return false
	}
	if err := d.o.Stream.DeleteMsg(ctx, seq); err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
		return false // the old copy stays; the next look tries again
	}
	d.log.Warn("a task's message ran out of deliveries with no process of its run listening; queueing it again", "seq", seq, "subject", subject)
	return true
}

// undeliverable reports whether the stored message at seq on subject is at
// or below its class consumer's ack floor: acknowledged or out of
// deliveries, never handed to a worker again.
func (d *Dispatcher) undeliverable(ctx context.Context, seq uint64, subject string) bool {
	class, ok := queue.ClassOfSubject(subject)
	if !ok {
		return false
	}
	cons, err := d.o.Stream.Consumer(ctx, class.Consumer())
	if err != nil {
		return false
	}
	info, err := cons.Info(ctx)
	return err == nil && info.AckFloor.Stream >= seq
}

// Err returns the error that failed the result journal, or nil.
func (d *Dispatcher) Err() error {
	if d.o.Journal == nil {
		return nil
	}
	return d.o.Journal.Err()
}

// fail ends a submission that could not be published: the task moves to
// failed and its future resolves with outcome o and msg.
func (d *Dispatcher) fail(t *task, o pb.Outcome, msg string) {
	d.mu.Lock()
	f := d.failLocked(t)
	d.mu.Unlock()
	if f != nil {
		f.resolve(&pb.Result{TaskId: t.id, Outcome: o, Error: msg})
	}
}

// Record stores a reported result and calls done with the status to send
// back to the worker: RECORDED once durable, DUPLICATE if it was recorded
// before, UNKNOWN for another run's task, RETRY if it could not be stored
// now (or the same task is being stored by another report).
func (d *Dispatcher) Record(res *pb.Result, done func(pb.ReportAck_Status, error)) {
	id := res.GetTaskId()
	if id == "" || (d.o.RunPrefix != "" && !strings.HasPrefix(id, d.o.RunPrefix)) {
		done(pb.ReportAck_STATUS_UNKNOWN, nil)
		return
	}
	if res.GetOutcome() == pb.Outcome_OUTCOME_UNSUPPORTED && res.GetWorkerId() != "" {
		d.refused(res)
		done(pb.ReportAck_STATUS_RETRY, nil)
		return
	}
	if res.GetOutcome() == pb.Outcome_OUTCOME_CANCELLED {
		d.recordCancelled(res, done)
		return
	}
	d.mu.Lock()
	t, status, stage := d.beginRecordLocked(id)
	spent := d.spent
	d.mu.Unlock()
	switch status {
	case pb.ReportAck_STATUS_DUPLICATE:
		if spent != nil && res.GetUsage().GetCalls() > 0 {
			spent(res, stage)
		}
		done(status, nil)
	case pb.ReportAck_STATUS_RETRY:
		done(status, nil)
	default:
		d.writeRecord(t, res, done)
	}
}

// recordCancelled takes the report of an attempt its worker stopped on a
// cancel (outcome CANCELLED, sent for the calls it had made): spend, never
// the task's result. Recorded as one, it would answer the task's next
// submission with a cancellation instead of a score: in this process (a
// wave that withdrew a task and asks for it again), or from the journal
// in a resumed run (a cell stopped by its member's self-fencing, whose
// workers reported the tasks the stop cancelled). The spend goes to the
// cancel's late hook, else to OnDuplicateSpend; the task itself stays
// where it was. A submission still waiting for the task is told RETRY, so
// that the task runs (again) if this was its last attempt.
func (d *Dispatcher) recordCancelled(res *pb.Result, done func(pb.ReportAck_Status, error)) {
	id := res.GetTaskId()
	status, stage := pb.ReportAck_STATUS_RECORDED, ""
	var late func(*pb.Result)
	d.mu.Lock()
	if r, ok := d.recorded[id]; ok {
		status, stage = pb.ReportAck_STATUS_DUPLICATE, r.stage
	} else if t := d.tasks[id]; t != nil {
		stage = t.stage
		switch {
		case t.state.live():
			status = pb.ReportAck_STATUS_RETRY
		case t.state == cancelled:
			late = t.late
		}
	}
	spent := d.spent
	d.mu.Unlock()
	switch {
	case late != nil:
		late(res)
	case spent != nil && res.GetUsage().GetCalls() > 0:
		spent(res, stage)
	}
	done(status, nil)
}

// writeRecord writes the result of t, which is recording, to the journal
// and then ends the recording.
func (d *Dispatcher) writeRecord(t *task, res *pb.Result, done func(pb.ReportAck_Status, error)) {
	commit := func(at rec, err error) {
		d.mu.Lock()
		f, late, cacheKey := d.endRecordLocked(t, at, err)
		d.mu.Unlock()
		if err != nil {
			d.log.Error("record result", "task_id", t.id, "err", err)
			d.journalFailed()
			done(pb.ReportAck_STATUS_RETRY, err)
			return
		}
		d.refusal(t.id)
		if d.o.Cache != nil {
			d.o.Cache.store(cacheKey, res)
		}
		if d.o.OnResult != nil {
			d.o.OnResult(res)
		}
		if late != nil {
			late(res)
		}
		if f != nil {
			if at.res == nil {
				f.resolve(lean(res)) // the journal keeps the rest
			} else {
				f.resolve(res)
			}
		}
		done(pb.ReportAck_STATUS_RECORDED, nil)
	}
	if d.o.Journal == nil {
		commit(rec{res: res}, nil)
		return
	}
	d.o.Journal.append(res, func(ref Ref, err error) { commit(rec{off: ref.Off, size: ref.Size}, err) })
}

// Cancel stops tasks that are no longer needed: queued ones are deleted
// from the stream, in-flight ones are told to stop, and their futures
// resolve as cancelled. A result a worker still reports for a cancelled
// task is recorded (its calls were made) but resolves nothing.
func (d *Dispatcher) Cancel(ctx context.Context, ids ...string) {
	_ = d.CancelWith(ctx, nil, ids...)
}

// CancelWith is [Dispatcher.Cancel] that also hands the result of any
// cancelled task a worker finishes anyway to late (for accounting the
// calls it made). It returns the ids of the cancelled tasks that were
// published: a worker may have taken one, and then reports it (a linger
// note while it finishes a call, a result when it ends).
func (d *Dispatcher) CancelWith(ctx context.Context, late func(*pb.Result), ids ...string) (sent []string) {
	var seqs []uint64
	var futs []*Future
	var lines []string
	d.mu.Lock()
	for _, id := range ids {
		f, seq, wasSent, ok := d.cancelLocked(id, late)
		if !ok {
			continue
		}
		if wasSent {
			sent = append(sent, id)
		}
		line := id
		if seq != 0 {
			seqs = append(seqs, seq)
			line += " " + strconv.FormatUint(seq, 10)
		}
		futs = append(futs, f)
		lines = append(lines, line)
	}
	d.mu.Unlock()
	if len(futs) == 0 {
		return nil
	}
	for _, f := range futs {
		f.resolve(&pb.Result{TaskId: f.id, Outcome: pb.Outcome_OUTCOME_CANCELLED, Error: "cancelled by coordinator"})
	}
	// The notice goes out before the deletes (one request each): a worker
	// that takes one of these messages meanwhile drops it unrun. Each line
	// is the task id and, once published, its message's stream sequence
	// (a task submitted again is a new message).
	if d.o.NC != nil {
		_ = d.o.NC.Publish(queue.CancelSubject, []byte(strings.Join(lines, "\n")))
	}
	if d.o.Stream != nil {
		for _, s := range seqs {
			// A task already delivered is no longer in the stream; that is fine.
			_ = d.o.Stream.DeleteMsg(ctx, s)
		}
	}
	return sent
}

// Abandon asks the workers still finishing the calls of cancelled tasks
// ids to end them now and report what they spent: the run has ended and
// waits for nothing else (a stalled call would hold it until its worker's
// stall deadline). Each line of the notice is a task id and
// [queue.AbandonNotice]; a worker not running the task ignores it.
func (d *Dispatcher) Abandon(ids ...string) {
	if d.o.NC == nil || len(ids) == 0 {
		return
	}
	lines := make([]string, len(ids))
	for i, id := range ids {
		lines[i] = id + " " + queue.AbandonNotice
	}
	_ = d.o.NC.Publish(queue.CancelSubject, []byte(strings.Join(lines, "\n")))
}

// RecordSpend hands the spend of a task attempt that its worker put back
// on the queue (a spend-only report) to the function OnDuplicateSpend
// installed: its calls were billed whatever the next attempt brings.
func (d *Dispatcher) RecordSpend(res *pb.Result) {
	id := res.GetTaskId()
	if id == "" || (d.o.RunPrefix != "" && !strings.HasPrefix(id, d.o.RunPrefix)) {
		return
	}
	d.mu.Lock()
	spent, stage := d.spent, ""
	if t := d.tasks[id]; t != nil {
		stage = t.stage
	} else if r, ok := d.recorded[id]; ok {
		stage = r.stage
	}
	d.mu.Unlock()
	if spent != nil {
		spent(res, stage)
	}
}

// OnDuplicateSpend installs fn to see every duplicate result that made
// model calls, with the stage of the task it answers ("" when this
// process never submitted it).
func (d *Dispatcher) OnDuplicateSpend(fn func(res *pb.Result, stage string)) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.spent = fn
}

// Pending reports how many tasks await results.
func (d *Dispatcher) Pending() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	n := 0
	for _, t := range d.tasks {
		if t.state.live() && t.fut != nil {
			n++
		}
	}
	return n
}

// RecordedIDs returns the ids of the results recorded so far.
func (d *Dispatcher) RecordedIDs() map[string]struct{} {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make(map[string]struct{}, len(d.recorded))
	for id := range d.recorded {
		out[id] = struct{}{}
	}
	return out
}

// Recorded reports how many results are recorded.
func (d *Dispatcher) Recorded() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.recorded)
}
