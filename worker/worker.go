// Package worker executes skillfleet tasks: it pulls them from the
// JetStream work queue, runs them with a [Handler], reports each result to
// the coordinator over gRPC and acknowledges the NATS message only after
// the coordinator has recorded the result.
//
// A worker never decides anything about the run. It owns only its
// in-flight tasks: a task it cannot finish is nak'd for redelivery, a
// malformed one is terminated with a logged reason.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/protobuf/proto"

	"github.com/skillfleet/skillfleet/pkg/catalogue"
	"github.com/skillfleet/skillfleet/pkg/objstore"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/telemetry"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Handler runs one task and returns its result. It must honour ctx: when
// ctx ends it returns promptly with outcome CANCELLED or TIMEOUT.
type Handler interface {
	Handle(ctx context.Context, t *pb.Task) *pb.Result
}

// HandlerFunc adapts a function to [Handler].
type HandlerFunc func(ctx context.Context, t *pb.Task) *pb.Result

// Handle calls f.
func (f HandlerFunc) Handle(ctx context.Context, t *pb.Task) *pb.Result { return f(ctx, t) }

// Config configures a Worker.
type Config struct {
	// ID names the worker (default host-pid-random).
	ID string
	// Concurrency bounds rollout tasks run at once (default 24).
	Concurrency int
	// OptimizerConcurrency bounds optimizer tasks run at once (default 16).
	OptimizerConcurrency int
	// MaxDeliver is the deliveries of a task whose consumer's info does
	// not say (default 5): on the last delivery a failure is reported
	// instead of nak'd. The consumers' own setting, read when the worker
	// starts, is the one that counts: they belong to the fleet.
	MaxDeliver int
	// Heartbeat is the InProgress interval for running tasks (default a
	// quarter of [queue.DefaultAckWait]; keep it well inside the
	// consumers' AckWait).
	Heartbeat time.Duration
	// ReportTimeout bounds how long a finished task waits for its
	// coordinator to take the result before the task goes back to the
	// queue (default 30s).
	ReportTimeout time.Duration
	// DrainTimeout bounds how long shutdown waits for in-flight tasks (default 30s).
	DrainTimeout time.Duration
	// TaskTimeout applies when a task carries none (default 10m).
	TaskTimeout time.Duration
	// CancelledInFlight bounds the tasks that give their slot back when
	// the coordinator cancels them while a model call is in flight: the
	// call still runs to its end in the background (the provider bills
	// it, so it is reported and accounted), and the slot takes new work
	// at once. It is a multiple of each pool's slots (default 1: however
	// many cancellations arrive, a pool of n slots has at most 2n tasks
	// running, n of them cancelled ones finishing their call). Negative
	// keeps a cancelled task in its slot until its call ends.
	CancelledInFlight int
}

func (c Config) withDefaults() Config {
	if c.ID == "" {
		host, _ := os.Hostname()
		c.ID = fmt.Sprintf("%s-%d-%04x", host, os.Getpid(), rand.IntN(1<<16))
	}
	if c.Concurrency <= 0 {
		c.Concurrency = 24
	}
	if c.OptimizerConcurrency <= 0 {
		c.OptimizerConcurrency = 16
	}
	if c.MaxDeliver <= 0 {
		c.MaxDeliver = 5
	}
	if c.Heartbeat <= 0 {
		c.Heartbeat = queue.DefaultAckWait / 4
	}
	if c.ReportTimeout <= 0 {
		c.ReportTimeout = 30 * time.Second
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = 30 * time.Second
	}
	if c.TaskTimeout <= 0 {
		c.TaskTimeout = 10 * time.Minute
	}
	if c.CancelledInFlight == 0 {
		c.CancelledInFlight = 1
	}
	return c
}

// Deps are the Worker's collaborators.
type Deps struct {
	Logger *slog.Logger
	// NC is the NATS connection (cancel notices and the ready bell).
	NC *nats.Conn
	// Consumers are the shared class consumers ([queue.Consumers]); a
	// class missing here is not served by this worker.
	Consumers map[queue.Class]jetstream.Consumer
	// Coordinators says where each task's result goes.
	Coordinators CoordinatorsConfig
	// Client, when set, is the one coordinator every result goes to
	// (shorthand for Coordinators.Client).
	Client  pb.CoordinatorClient
	Handler Handler
	// Propagator extracts trace context from task headers (nil = none).
	Propagator propagation.TextMapPropagator
	// Tracer, when set, traces each task (a consumer span, child of the
	// coordinator's stage span when the headers carry its context).
	Tracer trace.Tracer
	// Meters, when set, count tasks by kind and outcome and in-flight tasks.
	Meters *telemetry.Meters
	// Limits, when set, reports the worker's rate limiters; each heartbeat
	// carries them to the coordinators (the dashboard's Fleet page).
	Limits func() []*pb.LimitStatus
}

// Worker pulls and runs tasks.
type Worker struct {
	cfg    Config
	deps   Deps
	log    *slog.Logger
	coords *coordinators
	// payloads reads the bodies of tasks too large for one message (nil
	// without a NATS connection).
	payloads *objstore.Store
	// bells wake the pull loops when a coordinator published work.
	bells map[queue.Class][]chan struct{}

	inFlight  atomic.Int32
	completed atomic.Int64

	mu      sync.Mutex
	running map[string]context.CancelCauseFunc
	// abandons end the call a cancelled task is still finishing, by
	// task id (see [queue.AbandonNotice]).
	abandons map[string]context.CancelCauseFunc
	// dropped are the stream sequences of cancelled task messages not
	// running here when their notice came: delivered later (the
	// coordinator deletes them right after the notice), they are acked
	// unrun. The oldest are forgotten beyond maxDropped.
	dropped     map[uint64]struct{}
	droppedFIFO []uint64

	// maxDeliver is each task consumer's MaxDeliver, by consumer name,
	// read from the consumers when Run starts.
	maxDeliver map[string]int
}

// maxDropped bounds the cancelled messages a worker remembers.
const maxDropped = 1 << 16

// errCancelledByCoordinator is the cause of a task cancelled by a notice.
var errCancelledByCoordinator = errors.New("cancelled by coordinator")

// errAbandonedByCoordinator ends the call in flight of a cancelled task
// (an abandon notice): its run is over and waits for nothing but its
// report.
var errAbandonedByCoordinator = errors.New("call abandoned by coordinator: its run has ended")

// abandonKey carries a task's abandon context to the calls it makes.
type abandonKey struct{}

// errShutdown is the cause of tasks cut off by worker shutdown.
var errShutdown = errors.New("worker shutting down")

// New returns a Worker.
func New(cfg Config, deps Deps) *Worker {
	cfg = cfg.withDefaults()
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	log := deps.Logger.With("worker_id", cfg.ID)
	if deps.Client != nil && deps.Coordinators.Client == nil {
		deps.Coordinators.Client = deps.Client
	}
	coords := newCoordinators(deps.Coordinators, cfg.ID, cfg.Concurrency, log)
	w := &Worker{cfg: cfg, deps: deps, log: log, coords: coords, bells: map[queue.Class][]chan struct{}{}, running: map[string]context.CancelCauseFunc{}, abandons: map[string]context.CancelCauseFunc{}}
	if deps.NC != nil {
		if js, err := jetstream.New(deps.NC); err == nil {
			w.payloads = objstore.New(js, 0)
		}
	}
	return w
}

// ID is the worker's id.
func (w *Worker) ID() string { return w.cfg.ID }

// Snapshot reports the worker's concurrency, its tasks in flight and their
// ids (for a shared worker registry).
func (w *Worker) Snapshot() (concurrency, inFlight int, running []string) {
	w.mu.Lock()
	for id := range w.running {
		running = append(running, id)
	}
	w.mu.Unlock()
	sort.Strings(running)
	return w.cfg.Concurrency + w.cfg.OptimizerConcurrency, int(w.inFlight.Load()), running
}

// Completed is the number of tasks finished (acked) so far.
func (w *Worker) Completed() int64 { return w.completed.Load() }

// Run processes tasks of every run until ctx ends, then drains: it stops
// pulling, lets running tasks finish for up to DrainTimeout, naks the rest
// and returns nil.
func (w *Worker) Run(ctx context.Context) error {
	if w.deps.NC != nil {
		sub, err := w.deps.NC.Subscribe(queue.CancelSubject, w.onCancel)
		if err != nil {
			return fmt.Errorf("subscribe cancel notices: %w", err)
		}
		defer func() { _ = sub.Unsubscribe() }()
	}
	type loop struct {
		classes []queue.Class
		n       int
	}
	var loops []loop
	if c := w.served(queue.ClassCritical, queue.ClassBulk); len(c) > 0 {
		loops = append(loops, loop{c, w.cfg.Concurrency})
	}
	if c := w.served(queue.ClassOptimizer); len(c) > 0 && w.cfg.OptimizerConcurrency > 0 {
		loops = append(loops, loop{c, w.cfg.OptimizerConcurrency})
	}
	bells := make([]chan struct{}, len(loops))
	for i, l := range loops {
		bells[i] = make(chan struct{}, 1)
		for _, c := range l.classes {
			w.bells[c] = append(w.bells[c], bells[i])
		}
	}
	if w.deps.NC != nil {
		sub, err := w.deps.NC.Subscribe(queue.ReadySubject, w.onReady)
		if err != nil {
			return fmt.Errorf("subscribe ready bell: %w", err)
		}
		defer func() { _ = sub.Unsubscribe() }()
	}
	// Heartbeats stay well inside the consumers' AckWait, and the last
	// delivery is the consumers' last, whatever the fleet set them to.
	w.maxDeliver = map[string]int{}
	for _, c := range w.deps.Consumers {
		info := c.CachedInfo()
		if info == nil {
			continue
		}
		if info.Config.AckWait > 0 {
			w.cfg.Heartbeat = min(w.cfg.Heartbeat, info.Config.AckWait/4)
		}
		w.maxDeliver[info.Name] = info.Config.MaxDeliver
	}
	hbCtx, hbStop := context.WithCancel(ctx)
	var hb sync.WaitGroup
	stopHeartbeat := func() { hbStop(); hb.Wait() }
	defer stopHeartbeat()
	hb.Go(func() { w.heartbeat(hbCtx) })

	// Tasks run on their own context so that shutdown can let them finish.
	taskCtx, cancelTasks := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelTasks(errShutdown)
	var wg sync.WaitGroup
	w.log.InfoContext(ctx, "worker started", "concurrency", w.cfg.Concurrency, "optimizer_concurrency", w.cfg.OptimizerConcurrency)
	var running sync.WaitGroup
	for i, l := range loops {
		running.Add(1)
		go func() {
			defer running.Done()
			w.pull(ctx, taskCtx, l.classes, l.n, bells[i], &wg)
		}()
	}
	running.Wait()
	// Drain.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	n := w.inFlight.Load()
	if n > 0 {
		w.log.Info("draining in-flight tasks", "in_flight", n, "timeout", w.cfg.DrainTimeout.String())
	}
	select {
	case <-done:
	case <-time.After(w.cfg.DrainTimeout):
		cancelTasks(errShutdown)
		<-done
	}
	// No heartbeat may be in flight when the coordinator clients close.
	stopHeartbeat()
	w.coords.close()
	w.log.Info("worker stopped", "completed", w.completed.Load())
	return nil
}

// served returns the classes among cs this worker has consumers for.
func (w *Worker) served(cs ...queue.Class) []queue.Class {
	var out []queue.Class
	for _, c := range cs {
		if w.deps.Consumers[c] != nil {
			out = append(out, c)
		}
	}
	return out
}

func (w *Worker) onReady(m *nats.Msg) {
	for _, b := range w.bells[queue.Class(m.Data)] {
		select {
		case b <- struct{}{}:
		default:
		}
	}
}

// Idle polling: a loop that found nothing waits for the ready bell, or at
// most this long before it looks again (redeliveries ring no bell). A
// bell makes it look at once but does not restart the back-off: every
// worker hears every bell, and most find the work already taken, so a
// loop that looked in vain after a bell keeps polling at its slow pace
// (many workers polling fast after each bell cost the NATS server more
// than the tasks themselves).
const (
	idleFloor = 10 * time.Millisecond
	idleMax   = 250 * time.Millisecond
)

// pull fetches tasks for n slots from the classes in order — all of the
// first class's ready tasks before any of the next — until ctx ends.
func (w *Worker) pull(ctx, taskCtx context.Context, classes []queue.Class, n int, bell chan struct{}, wg *sync.WaitGroup) {
	sem := make(chan struct{}, n)
	// Room for cancelled tasks that gave their slot back (see
	// Config.CancelledInFlight), and for finished tasks waiting for their
	// coordinator to take the result: neither uses the model any more.
	var linger chan struct{}
	if w.cfg.CancelledInFlight > 0 {
		linger = make(chan struct{}, w.cfg.CancelledInFlight*n)
	}
	reporting := make(chan struct{}, n)
	idle := idleFloor
	for ctx.Err() == nil {
		// Wait for at least one free slot, then ask for as many tasks as slots are free.
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			continue
		}
		free := 1
	fill:
		for free < n {
			select {
			case sem <- struct{}{}:
				free++
			default:
				break fill
			}
		}
		got := 0
		var ferr error
		for _, c := range classes {
			if got == free {
				break
			}
			batch, err := w.deps.Consumers[c].FetchNoWait(free - got)
			if err != nil {
				ferr = err
				continue
			}
			for msg := range batch.Messages() {
				got++
				wg.Add(1)
				go func() {
					defer wg.Done()
					s := &slot{sem: sem, linger: linger, reporting: reporting}
					defer s.free()
					w.process(taskCtx, msg, s)
				}()
			}
		}
		for range free - got {
			<-sem
		}
		switch {
		case got == free:
			// Every free slot took a task: there may be more.
			idle = idleFloor
			continue
		case got > 0:
			// The queue ran dry: the next bell says when there is more.
			idle = idleMax
		case ferr != nil && ctx.Err() == nil:
			w.log.WarnContext(ctx, "fetch tasks", "err", ferr)
			idle = idleMax
		}
		select {
		case <-ctx.Done():
		case <-bell:
		case <-time.After(idle):
			idle = min(idle*2, idleMax)
		}
	}
}

func (w *Worker) heartbeat(ctx context.Context) {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			var limits []*pb.LimitStatus
			if w.deps.Limits != nil {
				limits = w.deps.Limits()
			}
			w.coords.heartbeat(ctx, w.inFlight.Load(), w.completed.Load(), limits)
		}
	}
}

// onCancel handles a cancel notice: one line per task, its id and, when
// its message was published, the message's stream sequence.
func (w *Worker) onCancel(m *nats.Msg) {
	lines := strings.Split(string(m.Data), "\n")
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.dropped == nil {
		w.dropped = map[uint64]struct{}{}
	}
	for _, line := range lines {
		id, seqText, _ := strings.Cut(line, " ")
		if seqText == queue.AbandonNotice {
			if a, ok := w.abandons[id]; ok {
				a(errAbandonedByCoordinator)
			}
			continue
		}
		if c, ok := w.running[id]; ok {
			c(errCancelledByCoordinator)
			continue
		}
		seq, err := strconv.ParseUint(seqText, 10, 64)
		if err != nil || seq == 0 {
			continue
		}
		if _, dup := w.dropped[seq]; dup {
			continue
		}
		w.dropped[seq] = struct{}{}
		w.droppedFIFO = append(w.droppedFIFO, seq)
		if len(w.droppedFIFO) > maxDropped {
			delete(w.dropped, w.droppedFIFO[0])
			w.droppedFIFO = w.droppedFIFO[1:]
		}
	}
}

// wasCancelled reports whether the task message at stream sequence seq
// was cancelled before it reached this worker.
func (w *Worker) wasCancelled(seq uint64) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	_, ok := w.dropped[seq]
	return ok
}

// slot is the pool slot a task holds while it uses the model. A task
// moves out of its slot into one of the pool's rooms, when the room has a
// place, so that the slot takes new work at once:
//
//   - linger: the coordinator cancelled the task while its call is in
//     flight; the call runs to its end (it is billed either way).
//   - reporting: the task's model work is done; its result waits for the
//     coordinator's ack (a round trip the next task need not wait for).
//
// Each room holds as many tasks as its size, so a pool of n slots never
// has more than n tasks calling the model plus those in its rooms.
type slot struct {
	sem       chan struct{}
	linger    chan struct{}
	reporting chan struct{}

	mu    sync.Mutex
	freed bool            // the slot was given back
	held  []chan struct{} // rooms the task holds a place in
}

// moveTo gives the slot back for a place in room; false when the slot was
// already given back or the room is full (the task keeps its slot).
func (s *slot) moveTo(room chan struct{}) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.freed || room == nil {
		return false
	}
	select {
	case room <- struct{}{}:
	default:
		return false
	}
	s.held = append(s.held, room)
	s.freed = true
	<-s.sem
	return true
}

// free releases whatever the task holds; it runs when the task is done.
func (s *slot) free() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.held {
		<-r
	}
	s.held = nil
	if !s.freed {
		s.freed = true
		<-s.sem
	}
}

// body is a task message's data, read from the object store when the
// message names its body there (a task too large for one message). A body
// that is gone belongs to a task that has ended: the message is
// terminated. One that cannot be read now goes back to the queue; ok is
// false in both cases.
func (w *Worker) body(ctx context.Context, msg jetstream.Msg) (data []byte, ok bool) {
	name := msg.Headers().Get(objstore.Header)
	if name == "" {
		return msg.Data(), true
	}
	if w.payloads == nil {
		_ = msg.NakWithDelay(2 * time.Second)
		return nil, false
	}
	data, err := w.payloads.Get(ctx, name)
	switch {
	case errors.Is(err, objstore.ErrGone):
		w.log.Info("task whose body left the object store dropped (its task has ended)", "subject", msg.Subject(), "body", name)
		_ = msg.TermWithReason("task body gone: " + name)
		return nil, false
	case err != nil:
		w.log.Warn("task body unreadable, task returned to the queue", "subject", msg.Subject(), "body", name, "err", err)
		_ = msg.NakWithDelay(2 * time.Second)
		return nil, false
	}
	return data, true
}

// process runs one delivered task to an ack, nak or term.
func (w *Worker) process(ctx context.Context, msg jetstream.Msg, s *slot) {
	w.inFlight.Add(1)
	defer w.inFlight.Add(-1)
	meta, _ := msg.Metadata()
	var delivered uint64 = 1
	if meta != nil {
		delivered = meta.NumDelivered
		if w.wasCancelled(meta.Sequence.Stream) {
			// Taken from the queue between the coordinator's cancel
			// notice and its delete: nobody wants it.
			w.log.Debug("cancelled task dropped before it ran", "stream_seq", meta.Sequence.Stream)
			_ = msg.Ack()
			return
		}
	}
	data, ok := w.body(ctx, msg)
	if !ok {
		return
	}
	t := &pb.Task{}
	if err := proto.Unmarshal(data, t); err != nil || t.GetId() == "" || (queue.KindOf(t) == "" && !newerKind(t)) {
		reason := "task without id or kind"
		if err != nil {
			reason = "undecodable task: " + err.Error()
		}
		w.log.Error("terminating malformed task", "subject", msg.Subject(), "reason", reason)
		_ = msg.TermWithReason(reason)
		return
	}
	log := w.log.With("task_id", t.GetId(), "run_id", t.GetRunId(), "kind", queue.KindOf(t), "attempt", delivered)
	// Where the result goes is settled before any model call is made.
	cn, err := w.coords.acquire(ctx, t)
	if errors.Is(err, errRunAway) {
		// Nobody awaits the result now. The task leaves the queue without
		// counting a delivery; its coordinator publishes it again when it
		// is back (a pending task whose message is gone is republished).
		log.Info("task of a run without a live coordinator taken off the queue", "reason", err.Error())
		_ = msg.TermWithReason(err.Error())
		return
	}
	if err != nil {
		log.Warn("coordinator unreachable, task returned to the queue", "err", err)
		_ = msg.NakWithDelay(2 * time.Second)
		return
	}
	defer w.coords.release(cn)
	ctx = withClient(ctx, cn.client)
	if w.deps.Propagator != nil {
		ctx = w.deps.Propagator.Extract(ctx, queue.HeaderCarrier(msg.Headers()))
	}
	kind := queue.KindOf(t)
	ctx = telemetry.WithAttrs(ctx, telemetry.Attrs{Run: t.GetRunId(), Step: int(t.GetStep()), Stage: t.GetStage(), Role: string(catalogue.RoleOf(kind)), TaskID: t.GetId(), Kind: kind})
	outcome := "returned"
	if w.deps.Tracer != nil {
		var span trace.Span
		ctx, span = telemetry.StartSpan(ctx, w.deps.Tracer, telemetry.TaskSpanName(kind), telemetry.Attrs{},
			trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attribute.Int64("skillfleet.delivery", int64(delivered))))
		defer func() {
			span.SetAttributes(telemetry.KeyOutcome.String(outcome))
			span.End()
		}()
	}
	w.deps.Meters.AddInFlight(ctx, kind, 1)
	defer func() {
		w.deps.Meters.AddInFlight(ctx, kind, -1)
		w.deps.Meters.RecordTask(ctx, kind, outcome)
	}()
	timeout := w.cfg.TaskTimeout
	if t.GetTimeoutMs() > 0 {
		timeout = time.Duration(t.GetTimeoutMs()) * time.Millisecond
	}
	tctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	tctx, cancelT := context.WithTimeout(tctx, timeout)
	defer cancelT()
	actx, abandon := context.WithCancelCause(context.Background())
	defer abandon(nil)
	tctx = context.WithValue(tctx, abandonKey{}, actx)
	w.mu.Lock()
	w.running[t.GetId()] = cancel
	w.abandons[t.GetId()] = abandon
	if meta != nil {
		// A notice that came between the check above and now found
		// nothing running.
		if _, ok := w.dropped[meta.Sequence.Stream]; ok {
			cancel(errCancelledByCoordinator)
		}
	}
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.running, t.GetId())
		delete(w.abandons, t.GetId())
		w.mu.Unlock()
	}()
	// Cancelled by the coordinator while running, the task tells the
	// coordinator at once that it lingers (a call in flight is billed
	// whenever it ends, a stalled one only at its stall deadline), so that
	// the run waits for its spend before writing its accounts; the final
	// report follows the note and is sent even if no call was made.
	lingered, noteDone := false, make(chan struct{})
	stopNote := context.AfterFunc(tctx, func() {
		defer close(noteDone)
		if errors.Is(context.Cause(tctx), errCancelledByCoordinator) {
			lingered = true
			w.reportLinger(ctx, t, cn, int32(delivered), log)
		}
	})
	defer stopNote()
	// Cancelled by the coordinator, the task only finishes the call it has
	// in flight (the meter starts no other): its slot can take new work.
	if s != nil {
		stopLeave := context.AfterFunc(tctx, func() {
			if errors.Is(context.Cause(tctx), errCancelledByCoordinator) && s.moveTo(s.linger) {
				log.Debug("cancelled task gave its slot back while its call ends")
			}
		})
		defer stopLeave()
	}

	// Heartbeat while the task runs so JetStream does not redeliver it.
	// The first beat comes after one interval, not later: a beat saved
	// is one NATS message, a beat missed on a stalled machine is a
	// redelivery, and a task out of deliveries is an item lost to the run.
	hbDone := make(chan struct{})
	go func() {
		tk := time.NewTimer(w.cfg.Heartbeat)
		defer tk.Stop()
		for {
			select {
			case <-hbDone:
				return
			case <-tk.C:
				_ = msg.InProgress()
				tk.Reset(w.cfg.Heartbeat)
			}
		}
	}()
	start := time.Now()
	var res *pb.Result
	if why := unservable(t); why != "" {
		// Told to the coordinator, which leaves the task in the queue for
		// a worker that can serve it (its answer is STATUS_RETRY).
		log.Warn("task this worker cannot serve returned to the queue", "reason", why)
		res = &pb.Result{Outcome: pb.Outcome_OUTCOME_UNSUPPORTED, Error: why}
	} else {
		res = w.deps.Handler.Handle(tctx, t)
	}
	if s != nil {
		s.moveTo(s.reporting)
	}
	if res == nil {
		res = &pb.Result{Outcome: pb.Outcome_OUTCOME_MODEL_ERROR, Error: "handler returned no result"}
	}
	res.TaskId = t.GetId()
	res.WorkerId = w.cfg.ID
	res.WireVersion = pb.WireVersion
	outcome = outcomeName(res.GetOutcome())
	res.Attempt = int32(delivered)
	// Every report of this run of the task, the spend-only one included,
	// names it: the coordinator counts its usage once however often a
	// late ack makes the worker send it.
	res.AttemptId = newAttemptID()
	if res.DurationMs == 0 {
		res.DurationMs = time.Since(start).Milliseconds()
	}
	// From here no linger note starts; one under way is waited for, so
	// that every report of the task comes after it.
	if !stopNote() {
		<-noteDone
	}
	cause := context.Cause(tctx)
	switch {
	case errors.Is(cause, errShutdown):
		outcome = "returned"
		w.reportSpend(ctx, t, cn, res, log)
		close(hbDone)
		log.Info("task cut off by shutdown, returned to queue")
		_ = msg.NakWithDelay(0)
		return
	case errors.Is(cause, errCancelledByCoordinator):
		outcome = "cancelled"
		close(hbDone)
		log.Debug("task cancelled by coordinator")
		// Calls it made were billed (a call in flight at the cancel runs
		// to its end): the coordinator accounts them, and keeps a result
		// that finished. Not delivered again either way. A task that sent
		// a linger note reports in any case: the coordinator waits for it.
		if res.GetUsage().GetCalls() > 0 || lingered {
			if _, err := w.report(ctx, t, cn, res); err != nil {
				log.Warn("usage of a cancelled task not reported", "err", err)
			}
		}
		_ = msg.Ack() // nobody wants it any more
		return
	}
	if retryable(res.GetOutcome()) && !w.lastDelivery(meta, delivered) {
		// The attempt's calls were made and billed, whatever the next
		// attempt brings: the coordinator accounts them now.
		w.reportSpend(ctx, t, cn, res, log)
		close(hbDone)
		delay := backoff(delivered)
		log.Warn("task failed, returned for redelivery", "outcome", res.GetOutcome().String(), "err", res.GetError(), "retry_in", delay.String())
		_ = msg.NakWithDelay(delay)
		return
	}
	// Report while still heart-beating: the coordinator may be restarting.
	ack, err := w.report(ctx, t, cn, res)
	close(hbDone)
	if err != nil {
		log.Warn("result not reported, returned for redelivery", "err", err)
		_ = msg.NakWithDelay(time.Second)
		return
	}
	switch ack.GetStatus() {
	case pb.ReportAck_STATUS_RETRY:
		// Not recorded: the task runs again, and this attempt's calls
		// were billed all the same.
		w.reportSpend(ctx, t, cn, res, log)
		_ = msg.NakWithDelay(time.Second)
		return
	case pb.ReportAck_STATUS_UNKNOWN:
		// The coordinator at that address serves another run: the run's
		// own coordinator moved. The task waits for it to be found again.
		log.Warn("coordinator does not know the task; returned to the queue")
		_ = msg.NakWithDelay(5 * time.Second)
		return
	}
	if err := msg.Ack(); err != nil {
		log.Warn("ack task", "err", err)
	}
	w.completed.Add(1)
}

// reportSpend tells the coordinator what an attempt that goes back on the
// queue spent (its usage, failure causes included), so that the run's
// accounts equal what the provider billed. It is best effort: a
// coordinator that does not take spend reports (an older build) would read
// the report as the task's result, so it gets none.
func (w *Worker) reportSpend(ctx context.Context, t *pb.Task, cn *coordConn, res *pb.Result, log *slog.Logger) {
	u := res.GetUsage()
	if u.GetCalls() == 0 && u.GetInputTokens() == 0 && u.GetOutputTokens() == 0 {
		return
	}
	if !w.coords.takesSpend(cn) {
		log.Debug("coordinator takes no spend reports; the requeued attempt's usage is not accounted")
		return
	}
	spend := &pb.Result{TaskId: res.GetTaskId(), WorkerId: res.GetWorkerId(), Outcome: res.GetOutcome(), Error: res.GetError(),
		Usage: u, DurationMs: res.GetDurationMs(), Attempt: res.GetAttempt(), AttemptId: res.GetAttemptId(), WireVersion: res.GetWireVersion(), SpendOnly: true}
	// A task cut off by shutdown has its context cancelled already; the
	// report gets a short while of its own.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(w.cfg.ReportTimeout, 10*time.Second))
	defer cancel()
	ack, err := w.report(rctx, t, cn, spend)
	switch {
	case err != nil:
		log.Warn("usage of a requeued attempt not reported", "err", err)
	case ack.GetStatus() != pb.ReportAck_STATUS_RECORDED:
		log.Warn("usage of a requeued attempt not taken", "status", ack.GetStatus().String(), "err", ack.GetError())
	}
}

// reportLinger tells the coordinator that a task it cancelled is still
// finishing a call: a spend-only result with no usage and the outcome
// cancelled. A coordinator that does not know the note counts nothing.
func (w *Worker) reportLinger(ctx context.Context, t *pb.Task, cn *coordConn, attempt int32, log *slog.Logger) {
	if !w.coords.takesSpend(cn) {
		return
	}
	note := &pb.Result{TaskId: t.GetId(), WorkerId: w.cfg.ID, Outcome: pb.Outcome_OUTCOME_CANCELLED, Attempt: attempt,
		WireVersion: pb.WireVersion, SpendOnly: true}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), min(w.cfg.ReportTimeout, 10*time.Second))
	defer cancel()
	if _, err := w.report(rctx, t, cn, note); err != nil {
		log.Debug("linger note not reported", "err", err)
	}
}

// report hands a result to its run's coordinator, following the run to a
// new address if its coordinator restarted elsewhere, for up to
// ReportTimeout.
func (w *Worker) report(ctx context.Context, t *pb.Task, cn *coordConn, res *pb.Result) (ack *pb.ReportAck, err error) {
	if w.deps.Tracer != nil {
		// The report's span, in the task's trace; the result carries its
		// context so that the coordinator's recording joins the trace.
		var span trace.Span
		ctx, span = w.deps.Tracer.Start(ctx, telemetry.SpanReport, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attribute.Bool("skillfleet.spend_only", res.GetSpendOnly())))
		defer func() {
			if err != nil {
				span.SetAttributes(telemetry.KeyErrorType.String(telemetry.ErrorType(err)))
			} else {
				span.SetAttributes(attribute.String("skillfleet.ack", strings.ToLower(strings.TrimPrefix(ack.GetStatus().String(), "STATUS_"))))
			}
			span.End()
		}()
		carrier := propagation.MapCarrier{}
		propagation.TraceContext{}.Inject(ctx, carrier)
		res.TraceContext = carrier
	}
	deadline := time.Now().Add(w.cfg.ReportTimeout)
	for {
		attempt := time.Now().Add(5 * time.Second)
		if deadline.Before(attempt) {
			attempt = deadline
		}
		actx, cancel := context.WithDeadline(ctx, attempt)
		ack, err := cn.rep.report(actx, res)
		cancel()
		if err == nil || ctx.Err() != nil || time.Now().After(deadline) {
			return ack, err
		}
		next, aerr := w.coords.acquire(ctx, t)
		if aerr != nil {
			if time.Now().After(deadline) {
				return nil, aerr
			}
			continue
		}
		w.coords.release(next)
		cn = next
	}
}

// newAttemptID returns a fresh, random attempt id (Result.attempt_id).
func newAttemptID() string {
	return strconv.FormatUint(rand.Uint64(), 36) + strconv.FormatUint(rand.Uint64(), 36)
}

// outcomeName is a task outcome as a metric and span label.
func outcomeName(o pb.Outcome) string {
	return strings.ToLower(strings.TrimPrefix(o.String(), "OUTCOME_"))
}

// lastDelivery reports whether a task's delivery is the last its consumer
// makes (a MaxDeliver below 1 is unbounded).
func (w *Worker) lastDelivery(meta *jetstream.MsgMetadata, delivered uint64) bool {
	limit := w.cfg.MaxDeliver
	if meta != nil {
		if n, ok := w.maxDeliver[meta.Consumer]; ok {
			limit = n
		}
	}
	return limit > 0 && delivered >= uint64(limit)
}

func retryable(o pb.Outcome) bool {
	switch o {
	case pb.Outcome_OUTCOME_TIMEOUT, pb.Outcome_OUTCOME_RATE_LIMITED, pb.Outcome_OUTCOME_MODEL_ERROR, pb.Outcome_OUTCOME_INVALID_REPLY:
		return true
	default:
		return false
	}
}

// backoff is the redelivery delay after the n-th failed delivery: 1s, 2s,
// 4s … capped at 30s, with ±20% jitter.
func backoff(n uint64) time.Duration {
	d := time.Second << min(n-1, 5)
	d = min(d, 30*time.Second)
	j := time.Duration(rand.Int64N(int64(d)/5*2+1)) - d/5
	return d + j
}
