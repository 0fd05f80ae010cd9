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

	mu sync.Mutex
	// recorded holds, for every recorded task id, where its result is.
	recorded  map[string]rec
	recording map[string]bool
	pending   map[string]*Future
	seqs      map[uint64]string // stream seq → task id of pending tasks
	// late maps cancelled task ids to the function that sees their result
	// if a worker finishes them anyway (the calls were made and paid for).
	late map[string]func(*pb.Result)
	// cancels counts how often each task id was cancelled: a task
	// submitted again after a cancel is published under a fresh message
	// id, or JetStream's de-duplication would drop it.
	cancels map[string]int
	// stages maps each submitted task id to its stage, and spent sees the
	// usage of results that arrive once too often (a task run twice after a
	// redelivery or a cancel): their calls were made and paid for.
	stages map[string]string
	spent  func(res *pb.Result, stage string)
	// cacheKeys holds the cache key of each pending cached task.
	cacheKeys map[string]string
	closed    bool
	// held are bulk tasks waiting for the bulk window; bulkOut the bulk
	// tasks published and not yet answered.
	held     []heldTask
	bulkOut  map[string]bool
	pumpBell chan struct{}

	// refusals are the workers that said they cannot serve a task.
	refusals refusals
}

// rec is what the dispatcher keeps of a recorded result: where the
// journal holds it or, with no journal, the result itself.
type rec struct {
	off  int64
	size uint32
	res  *pb.Result
}

// Future is the eventual result of one task.
type Future struct {
	id  string
	seq uint64
	// fatal is closed when the journal fails; err then says why.
	fatal <-chan struct{}
	err   func() error
	// msg and published are the task's message (without its data: see
	// kept) and when it went out, and task the task, for the lost-task
	// sweep.
	msg       *nats.Msg
	task      *pb.Task
	published time.Time
	// generation counts the times the task ran out of deliveries and was
	// queued again.
	generation int
	done       chan struct{}
	res        *pb.Result
	once       sync.Once
}

// ID is the task id.
func (f *Future) ID() string { return f.id }

// Done is closed when the result is known.
func (f *Future) Done() <-chan struct{} { return f.done }

// Result is the task's result; valid after Done is closed.
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
		o:         o,
		log:       o.Logger,
		fatal:     make(chan struct{}),
		recorded:  make(map[string]rec, len(o.Recorded)),
		recording: map[string]bool{},
		pending:   map[string]*Future{},
		seqs:      map[uint64]string{},
		bulkOut:   map[string]bool{},
		pumpBell:  make(chan struct{}, 1),
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

// Run watches for tasks that ran out of deliveries and turns them into
// typed failures, sweeps for lost tasks and publishes held bulk tasks. It
// returns nil when ctx ends, once its goroutines and the cache's pending
// puts have ended.
func (d *Dispatcher) Run(ctx context.Context) error {
	if d.o.Cache != nil {
		defer d.o.Cache.Flush()
	}
	if d.o.NC == nil {
		<-ctx.Done()
		return nil
	}
	stop, err := queue.SubscribeMaxDeliveries(d.o.NC, func(a queue.MaxDeliveriesExceeded) {
		d.deliveriesExhausted(ctx, a)
	})
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	switch {
	case d.o.Sweeper != nil:
		leave := d.o.Sweeper.add(d)
		defer leave()
	case d.o.Stream != nil:
		own := NewSweeper(d.log)
		leave := own.add(d)
		defer leave()
		wg.Go(func() { own.Run(ctx) })
	}
	if d.o.BulkWindow != nil {
		wg.Go(func() { d.pump(ctx) })
	}
	<-ctx.Done()
	stop()
	wg.Wait()
	d.mu.Lock()
	d.closed = true
	d.mu.Unlock()
	return nil
}

// deliveriesExhausted handles a task whose message ran out of deliveries
// with no result: it goes out again as a new message, up to
// Options.Generations times in all, and only then is recorded as failed.
// No worker finished it in time, which on a machine stalled for seconds
// says nothing about the task itself: a worker may still be running it,
// and its result, when it comes, is recorded like any other.
func (d *Dispatcher) deliveriesExhausted(ctx context.Context, a queue.MaxDeliveriesExceeded) {
	d.mu.Lock()
	id, ok := d.seqs[a.StreamSeq]
	f := d.pending[id]
	again := ok && f != nil && f.seq == a.StreamSeq && f.msg != nil && f.generation+1 < d.generations()
	if again {
		f.generation++
	}
	d.mu.Unlock()
	if d.o.Stream != nil {
		_ = d.o.Stream.DeleteMsg(context.WithoutCancel(ctx), a.StreamSeq)
	}
	if !ok {
		return
	}
	if again {
		seq, err := d.republish(context.WithoutCancel(ctx), f.msg, f.task)
		if err == nil {
			d.mu.Lock()
			delete(d.seqs, a.StreamSeq)
			if d.pending[id] == f {
				f.seq, f.published = seq, time.Now()
				d.seqs[seq] = id
			}
			d.mu.Unlock()
			d.log.Warn("task ran out of deliveries; queued again", "task_id", id,
				"deliveries", a.Deliveries, "generation", f.generation+1, "of", d.generations())
			d.ring()
			return
		}
		// The lost-task sweep republishes it once the stream answers again.
		d.log.Warn("task ran out of deliveries; queueing it again failed", "task_id", id, "err", err)
		return
	}
	if why := d.refusal(id); why != "" {
		// Every worker that took it said it cannot serve it: the run is
		// told which task and which versions, and no result is invented.
		msg := fmt.Sprintf("task %s: no live worker can serve it after %d deliveries in each of %d generations (%s); upgrade the workers (docs/upgrades.md)",
			id, a.Deliveries, d.generations(), why)
		d.log.Error("task no live worker can serve", "task_id", id, "err", msg)
		d.Record(&pb.Result{TaskId: id, Outcome: pb.Outcome_OUTCOME_UNSUPPORTED, Error: msg, WireVersion: pb.WireVersion,
			Attempt: int32(a.Deliveries) * int32(d.generations())}, func(pb.ReportAck_Status, error) {})
		return
	}
	d.log.Warn("task ran out of deliveries", "task_id", id, "deliveries", a.Deliveries)
	d.Record(&pb.Result{
		TaskId:  id,
		Outcome: pb.Outcome_OUTCOME_MODEL_ERROR,
		Error:   fmt.Sprintf("no result after %d deliveries in each of %d generations (workers died or stalled)", a.Deliveries, d.generations()),
		Attempt: int32(a.Deliveries) * int32(d.generations()),
	}, func(pb.ReportAck_Status, error) {})
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

// SweepEvery is how often the dispatcher looks for lost tasks.
var SweepEvery = 5 * time.Second

// Sweep republishes pending tasks whose message left the stream without a
// result: a worker terminated it while this coordinator was away, it ran
// out of deliveries with no coordinator listening, or another process
// purged it. A message leaves the work queue when a worker acknowledges
// it, and a worker acknowledges only after the result is recorded, so a
// pending task whose message is gone is lost, never merely finished.
// Tasks published within minAge are left alone. It returns how many tasks
// it republished. A dispatcher with a [Sweeper] is swept by it; Sweep
// still sweeps it alone when called.
func (d *Dispatcher) Sweep(ctx context.Context, minAge time.Duration) int {
	r := d.sweepRound(minAge)
	if r == nil {
		return 0
	}
	return d.sweepWith(ctx, r, d.storedCount)
}

// sweepRound is what one sweep of a dispatcher looks at: its pending
// tasks old enough to be looked at, and how many of its tasks are
// published and pending on each run subject filter. It is nil when no
// task is old enough.
type sweepRound struct {
	cands     []sweepCand
	published map[string]uint64
}

func (d *Dispatcher) sweepRound(minAge time.Duration) *sweepRound {
	d.mu.Lock()
	defer d.mu.Unlock()
	var cands []sweepCand
	published := map[string]uint64{}
	for id, f := range d.pending {
		if f.seq == 0 || f.msg == nil {
			continue
		}
		filter := runFilter(f.msg.Subject)
		published[filter]++
		if !d.recording[id] && time.Since(f.published) >= minAge {
			cands = append(cands, sweepCand{f: f, seq: f.seq, filter: filter})
		}
	}
	if len(cands) == 0 {
		return nil
	}
	return &sweepRound{cands: cands, published: published}
}

// sweepWith finishes a sweep round: stored says how many messages the
// stream holds on a run subject filter, counted after the round was taken.
func (d *Dispatcher) sweepWith(ctx context.Context, r *sweepRound, stored func(context.Context, string) (uint64, error)) int {
	n := 0
	for _, c := range d.missing(ctx, r, stored) {
		if ctx.Err() != nil || !d.vanished(ctx, c.seq) {
			continue
		}
		d.mu.Lock()
		still := d.pending[c.f.id] == c.f && c.f.seq == c.seq && !d.recording[c.f.id]
		d.mu.Unlock()
		if !still {
			continue
		}
		seq, err := d.republish(ctx, c.f.msg, c.f.task)
		if err != nil {
			d.log.Warn("republish lost task", "task_id", c.f.id, "err", err)
			continue
		}
		d.mu.Lock()
		delete(d.seqs, c.seq)
		if d.pending[c.f.id] == c.f {
			c.f.seq, c.f.published = seq, time.Now()
			d.seqs[seq] = c.f.id
		}
		d.mu.Unlock()
		n++
	}
	if n > 0 {
		d.ring()
	}
	return n
}

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
	futs := make([]*Future, len(tasks))
	type pub struct {
		f    *Future
		paf  jetstream.PubAckFuture
		msg  *nats.Msg
		task *pb.Task
	}
	classes := map[queue.Class]bool{}
	pubs := make([]pub, 0, len(tasks))
	if err := d.Err(); err != nil {
		return nil, err
	}
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil, ErrClosed
	}
	var toSend, known []int
	var knownRecs []rec
	for i, t := range tasks {
		id := t.GetId()
		if r, ok := d.recorded[id]; ok {
			futs[i] = newFuture(id, d.fatal, d.Err)
			known = append(known, i)
			knownRecs = append(knownRecs, r)
			continue
		}
		if f, ok := d.pending[id]; ok {
			futs[i] = f
			continue
		}
		f := newFuture(id, d.fatal, d.Err)
		d.pending[id] = f
		if d.stages == nil {
			d.stages = map[string]string{}
		}
		d.stages[id] = t.GetStage()
		delete(d.late, id) // this future now sees (and accounts) its result
		futs[i] = f
		toSend = append(toSend, i)
	}
	d.mu.Unlock()
	for k, i := range known {
		res, err := d.result(futs[i].id, knownRecs[k])
		if err != nil {
			// The journal failed: nothing of this batch goes out.
			for _, j := range toSend {
				d.fail(futs[j], pb.Outcome_OUTCOME_MODEL_ERROR, "not published: "+err.Error())
			}
			return nil, err
		}
		futs[i].resolve(res)
	}

	if c := d.o.Cache; c != nil && len(toSend) > 0 {
		send := make([]*pb.Task, len(toSend))
		for j, i := range toSend {
			send[j] = tasks[i]
		}
		hits, keys := c.lookup(ctx, send)
		rest := toSend[:0]
		d.mu.Lock()
		if d.cacheKeys == nil {
			d.cacheKeys = map[string]string{}
		}
		for j, i := range toSend {
			if keys[j] != "" && hits[j] == nil {
				d.cacheKeys[tasks[i].GetId()] = keys[j]
			}
		}
		d.mu.Unlock()
		for j, i := range toSend {
			if hits[j] != nil {
				// Recorded (journaled) like a worker's result; the
				// pending future resolves when it is durable.
				f := futs[i]
				d.Record(hits[j], func(_ pb.ReportAck_Status, err error) {
					if err != nil {
						// The journal failed: the run cannot record anything;
						// the task fails rather than waiting forever.
						d.fail(f, pb.Outcome_OUTCOME_MODEL_ERROR, "record cached result: "+err.Error())
					}
				})
				continue
			}
			rest = append(rest, i)
		}
		toSend = rest
	}

	// Once a publish is refused the rest of the batch is not tried: those
	// tasks fail (and leave pending, so submitting them again publishes
	// them), while the tasks already sent are followed to their acks, so
	// every task of the batch ends up published or failed.
	var firstErr error
	for _, i := range toSend {
		t := tasks[i]
		if firstErr != nil {
			d.fail(futs[i], pb.Outcome_OUTCOME_MODEL_ERROR, "not published: "+firstErr.Error())
			continue
		}
		kind := queue.KindOf(t)
		if kind == "" {
			d.fail(futs[i], pb.Outcome_OUTCOME_BAD_TASK, "task has no kind")
			continue
		}
		data, err := d.encode(t)
		if err != nil {
			d.fail(futs[i], pb.Outcome_OUTCOME_BAD_TASK, err.Error())
			continue
		}
		class := queue.ClassOf(t)
		if d.windowed(class) {
			d.hold(ctx, t, futs[i], data)
			continue
		}
		classes[class] = true
		msg := d.taskMsg(ctx, t, class, data, "")
		paf, err := d.o.JS.PublishMsgAsync(msg)
		if err != nil {
			firstErr = d.publishErr(t.GetId(), msg, err)
			d.fail(futs[i], pb.Outcome_OUTCOME_MODEL_ERROR, firstErr.Error())
			continue
		}
		pubs = append(pubs, pub{f: futs[i], paf: paf, msg: msg, task: t})
	}
	for k, p := range pubs {
		var ack *jetstream.PubAck
		select {
		case ack = <-p.paf.Ok():
		case err := <-p.paf.Err():
			// A cluster electing a stream leader, or a lost ack: again,
			// under the same message id.
			if ack, err = queue.PublishAgain(ctx, d.o.JS, p.msg, err); err != nil {
				err = fmt.Errorf("publish task %s: %w", p.f.id, err)
				d.fail(p.f, pb.Outcome_OUTCOME_MODEL_ERROR, err.Error())
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
		case <-ctx.Done():
			// Whether these reached the stream is unknown: they fail
			// rather than wait unswept; a result a worker still reports
			// for one is recorded like any other.
			for _, q := range pubs[k:] {
				d.fail(q.f, pb.Outcome_OUTCOME_CANCELLED, "submit ended before the publish was acknowledged: "+ctx.Err().Error())
			}
			return nil, ctx.Err()
		}
		if ack.Duplicate && !d.answered(p.f.id) && d.vanished(ctx, ack.Sequence) {
			// The first copy ran out of deliveries or was dropped
			// while this run's coordinator was away: JetStream's
			// de-duplication would drop this one too, so it goes out
			// under a fresh message id. (A first copy that a worker
			// already answered is gone too, and needs nothing.)
			seq, err := d.republish(ctx, p.msg, nil)
			if err != nil {
				d.fail(p.f, pb.Outcome_OUTCOME_MODEL_ERROR, err.Error())
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			ack.Sequence = seq
		}
		d.mu.Lock()
		p.f.seq = ack.Sequence
		p.f.msg, p.f.task, p.f.published = kept(p.msg), p.task, time.Now()
		if _, still := d.pending[p.f.id]; still {
			d.seqs[ack.Sequence] = p.f.id
		}
		d.mu.Unlock()
	}
	if len(pubs) > 0 && d.o.NC != nil {
		for c := range classes {
			_ = d.o.NC.Publish(queue.ReadySubject, []byte(c))
		}
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return futs, nil
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

// kept is what a future keeps of its task's published message, for a
// republish: the subject and headers, not the data, which the task
// encodes again (the submitter holds the task anyway; the encoding would
// be a second copy of it for as long as the task is pending).
func kept(msg *nats.Msg) *nats.Msg {
	return &nats.Msg{Subject: msg.Subject, Header: msg.Header}
}

// taskMsg is the message that carries a task: its class subject, its
// message id (with a suffix after cancels or a republish) and trace context.
func (d *Dispatcher) taskMsg(ctx context.Context, t *pb.Task, class queue.Class, data []byte, suffix string) *nats.Msg {
	msg := nats.NewMsg(queue.TaskSubject(class, queue.KindOf(t), queue.RunToken(t.GetRunId())))
	msg.Data = data
	msgID := t.GetId()
	d.mu.Lock()
	if n := d.cancels[msgID]; n > 0 {
		msgID += "~c" + strconv.Itoa(n)
	}
	d.mu.Unlock()
	msg.Header.Set(jetstream.MsgIDHeader, msgID+suffix)
	if d.o.Propagator != nil {
		d.o.Propagator.Inject(ctx, queue.HeaderCarrier(msg.Header))
	}
	return msg
}

// vanished reports whether the stream no longer holds the message at seq
// (the original of a de-duplicated publish, or a task the sweep found
// missing). It asks the stream's leader: a direct get may be answered by
// a replica that is behind.
func (d *Dispatcher) vanished(ctx context.Context, seq uint64) bool {
	if d.o.Stream == nil {
		return false
	}
	if d.o.NC == nil || d.o.JS == nil {
		_, err := d.o.Stream.GetMsg(ctx, seq)
		return errors.Is(err, jetstream.ErrMsgNotFound)
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	subject := d.api("STREAM.MSG.GET.")
	req, _ := json.Marshal(struct {
		Seq uint64 `json:"seq"`
	}{seq})
	m, err := d.o.NC.RequestWithContext(ctx, subject, req)
	if err != nil {
		return false
	}
	var resp struct {
		Error *struct {
			ErrCode int `json:"err_code"`
		} `json:"error"`
	}
	if json.Unmarshal(m.Data, &resp) != nil {
		return false
	}
	return resp.Error != nil && resp.Error.ErrCode == int(jetstream.JSErrCodeMessageNotFound)
}

// republish publishes msg again under a message id no earlier copy used;
// a kept message without data carries task's encoding.
func (d *Dispatcher) republish(ctx context.Context, msg *nats.Msg, task *pb.Task) (uint64, error) {
	id := msg.Header.Get(jetstream.MsgIDHeader)
	msg.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("%s~r%d", id, time.Now().UnixNano()))
	out := &nats.Msg{Subject: msg.Subject, Header: msg.Header, Data: msg.Data}
	if out.Data == nil && task != nil {
		data, err := d.encode(task)
		if err != nil {
			return 0, fmt.Errorf("republish task %s: %w", id, err)
		}
		out.Data = data
	}
	ack, err := d.o.JS.PublishMsg(ctx, out)
	if err != nil {
		// A lost ack or a slow server: again, under the same fresh id.
		ack, err = queue.PublishAgain(ctx, d.o.JS, out, err)
	}
	if err != nil {
		return 0, fmt.Errorf("republish task %s: %w", id, err)
	}
	d.log.Info("task republished: its earlier copy left the queue without a result", "task_id", id)
	return ack.Sequence, nil
}

// answered reports whether task id's result is recorded or being recorded.
func (d *Dispatcher) answered(id string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	_, ok := d.recorded[id]
	return ok || d.recording[id]
}

func (d *Dispatcher) unpend(f *Future) {
	d.mu.Lock()
	if d.pending[f.id] == f {
		delete(d.pending, f.id)
	}
	d.mu.Unlock()
}

// Err returns the error that failed the result journal, or nil.
func (d *Dispatcher) Err() error {
	if d.o.Journal == nil {
		return nil
	}
	return d.o.Journal.Err()
}

func (d *Dispatcher) fail(f *Future, o pb.Outcome, msg string) {
	d.unpend(f)
	f.resolve(&pb.Result{TaskId: f.id, Outcome: o, Error: msg})
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
	d.mu.Lock()
	if _, ok := d.recorded[id]; ok {
		spent, stage := d.spent, d.stages[id]
		d.mu.Unlock()
		if spent != nil && res.GetUsage().GetCalls() > 0 {
			spent(res, stage)
		}
		done(pb.ReportAck_STATUS_DUPLICATE, nil)
		return
	}
	if d.recording[id] {
		d.mu.Unlock()
		done(pb.ReportAck_STATUS_RETRY, nil)
		return
	}
	d.recording[id] = true
	d.mu.Unlock()

	commit := func(at rec, err error) {
		d.mu.Lock()
		delete(d.recording, id)
		if err != nil {
			d.mu.Unlock()
			d.log.Error("record result", "task_id", id, "err", err)
			d.journalFailed()
			done(pb.ReportAck_STATUS_RETRY, err)
			return
		}
		d.recorded[id] = at
		f := d.pending[id]
		delete(d.pending, id)
		if d.releaseBulkLocked(id) {
			d.kick()
		}
		if f != nil && f.seq != 0 {
			delete(d.seqs, f.seq)
		}
		lateFn := d.late[id]
		delete(d.late, id)
		cacheKey := d.cacheKeys[id]
		delete(d.cacheKeys, id)
		d.mu.Unlock()
		d.refusal(id)
		if d.o.Cache != nil {
			d.o.Cache.store(cacheKey, res)
		}
		if d.o.OnResult != nil {
			d.o.OnResult(res)
		}
		if lateFn != nil {
			lateFn(res)
		}
		if f != nil {
			f.resolve(res)
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
	d.CancelWith(ctx, nil, ids...)
}

// CancelWith is [Dispatcher.Cancel] that also hands the result of any
// cancelled task a worker finishes anyway to late (for accounting the
// calls it made).
func (d *Dispatcher) CancelWith(ctx context.Context, late func(*pb.Result), ids ...string) {
	var seqs []uint64
	var futs []*Future
	var lines []string
	d.mu.Lock()
	for _, id := range ids {
		f, ok := d.pending[id]
		if !ok {
			continue
		}
		delete(d.pending, id)
		if d.releaseBulkLocked(id) {
			d.kick()
		}
		if d.cancels == nil {
			d.cancels = map[string]int{}
		}
		d.cancels[id]++
		if late != nil {
			if d.late == nil {
				d.late = map[string]func(*pb.Result){}
			}
			d.late[id] = late
		}
		line := id
		if f.seq != 0 {
			delete(d.seqs, f.seq)
			seqs = append(seqs, f.seq)
			line += " " + strconv.FormatUint(f.seq, 10)
		}
		futs = append(futs, f)
		lines = append(lines, line)
	}
	d.mu.Unlock()
	if len(futs) == 0 {
		return
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
	return len(d.pending)
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
