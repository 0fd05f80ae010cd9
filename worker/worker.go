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
	// MaxDeliver must equal the consumer's MaxDeliver (default 5): on the
	// last delivery a failure is reported instead of nak'd.
	MaxDeliver int
	// Heartbeat is the InProgress interval for running tasks (default 10s;
	// keep it well inside the consumer's AckWait).
	Heartbeat time.Duration
	// DrainTimeout bounds how long shutdown waits for in-flight tasks (default 30s).
	DrainTimeout time.Duration
	// TaskTimeout applies when a task carries none (default 10m).
	TaskTimeout time.Duration
	// FetchWait bounds one pull request (default 1s).
	FetchWait time.Duration
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
		c.Heartbeat = 10 * time.Second
	}
	if c.DrainTimeout <= 0 {
		c.DrainTimeout = 30 * time.Second
	}
	if c.TaskTimeout <= 0 {
		c.TaskTimeout = 10 * time.Minute
	}
	if c.FetchWait <= 0 {
		c.FetchWait = time.Second
	}
	return c
}

// Deps are the Worker's collaborators.
type Deps struct {
	Logger *slog.Logger
	// NC is the NATS connection (cancel notices); Consumer and
	// OptimizerConsumer the shared rollout and optimizer consumers (a nil
	// OptimizerConsumer means this worker takes no optimizer work).
	NC                *nats.Conn
	Consumer          jetstream.Consumer
	OptimizerConsumer jetstream.Consumer
	Client            pb.CoordinatorClient
	Handler           Handler
	// Propagator extracts trace context from task headers (nil = none).
	Propagator propagation.TextMapPropagator
	// Tracer, when set, traces each task (a consumer span, child of the
	// coordinator's stage span when the headers carry its context).
	Tracer trace.Tracer
	// Meters, when set, count tasks by kind and outcome and in-flight tasks.
	Meters *telemetry.Meters
}

// Worker pulls and runs tasks.
type Worker struct {
	cfg  Config
	deps Deps
	log  *slog.Logger
	rep  *reporter

	inFlight  atomic.Int32
	completed atomic.Int64

	mu      sync.Mutex
	running map[string]context.CancelCauseFunc
}

// errCancelledByCoordinator is the cause of a task cancelled by a notice.
var errCancelledByCoordinator = errors.New("cancelled by coordinator")

// errShutdown is the cause of tasks cut off by worker shutdown.
var errShutdown = errors.New("worker shutting down")

// New returns a Worker.
func New(cfg Config, deps Deps) *Worker {
	cfg = cfg.withDefaults()
	if deps.Logger == nil {
		deps.Logger = slog.New(slog.DiscardHandler)
	}
	log := deps.Logger.With("worker_id", cfg.ID)
	return &Worker{cfg: cfg, deps: deps, log: log, rep: newReporter(deps.Client, log), running: map[string]context.CancelCauseFunc{}}
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

// Run registers with the coordinator and processes tasks until ctx ends,
// then drains: it stops pulling, lets running tasks finish for up to
// DrainTimeout, naks the rest and returns nil.
func (w *Worker) Run(ctx context.Context) error {
	if err := w.register(ctx); err != nil {
		return err
	}
	if w.deps.NC != nil {
		sub, err := w.deps.NC.Subscribe(queue.CancelSubject, w.onCancel)
		if err != nil {
			return fmt.Errorf("subscribe cancel notices: %w", err)
		}
		defer func() { _ = sub.Unsubscribe() }()
	}
	hbCtx, hbStop := context.WithCancel(ctx)
	defer hbStop()
	go w.heartbeat(hbCtx)

	// Tasks run on their own context so that shutdown can let them finish.
	taskCtx, cancelTasks := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancelTasks(errShutdown)
	var wg sync.WaitGroup
	w.log.InfoContext(ctx, "worker started", "concurrency", w.cfg.Concurrency, "optimizer_concurrency", w.cfg.OptimizerConcurrency)
	var loops sync.WaitGroup
	for _, c := range []struct {
		cons jetstream.Consumer
		n    int
	}{{w.deps.Consumer, w.cfg.Concurrency}, {w.deps.OptimizerConsumer, w.cfg.OptimizerConcurrency}} {
		if c.cons == nil {
			continue
		}
		loops.Add(1)
		go func() {
			defer loops.Done()
			w.pull(ctx, taskCtx, c.cons, c.n, &wg)
		}()
	}
	loops.Wait()
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
	w.rep.close()
	w.log.Info("worker stopped", "completed", w.completed.Load())
	return nil
}

// pull fetches tasks from one consumer while it has free slots, until ctx ends.
func (w *Worker) pull(ctx, taskCtx context.Context, cons jetstream.Consumer, n int, wg *sync.WaitGroup) {
	sem := make(chan struct{}, n)
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
		batch, err := cons.Fetch(free, jetstream.FetchMaxWait(w.cfg.FetchWait))
		if err != nil {
			for range free {
				<-sem
			}
			if ctx.Err() != nil {
				return
			}
			w.log.WarnContext(ctx, "fetch tasks", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
			continue
		}
		used := 0
		for msg := range batch.Messages() {
			used++
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				w.process(taskCtx, msg)
			}()
		}
		for range free - used {
			<-sem
		}
	}
}

func (w *Worker) register(ctx context.Context) error {
	host, _ := os.Hostname()
	delay := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		_, err := w.deps.Client.Register(ctx, &pb.RegisterRequest{WorkerId: w.cfg.ID, Hostname: host, Concurrency: int32(w.cfg.Concurrency)})
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return fmt.Errorf("register with coordinator: %w", ctx.Err())
		}
		w.log.WarnContext(ctx, "coordinator unreachable, retrying", "attempt", attempt, "retry_in", delay.String(), "err", err)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(delay):
		}
		delay = min(delay*2, 5*time.Second)
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
			resp, err := w.deps.Client.Heartbeat(ctx, &pb.HeartbeatRequest{WorkerId: w.cfg.ID, InFlight: w.inFlight.Load(), Completed: w.completed.Load()})
			if err == nil && !resp.GetKnown() {
				_ = w.register(ctx) // the coordinator restarted
			}
		}
	}
}

func (w *Worker) onCancel(m *nats.Msg) {
	ids := strings.Split(string(m.Data), "\n")
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, id := range ids {
		if c, ok := w.running[id]; ok {
			c(errCancelledByCoordinator)
		}
	}
}

// process runs one delivered task to an ack, nak or term.
func (w *Worker) process(ctx context.Context, msg jetstream.Msg) {
	w.inFlight.Add(1)
	defer w.inFlight.Add(-1)
	meta, _ := msg.Metadata()
	var delivered uint64 = 1
	if meta != nil {
		delivered = meta.NumDelivered
	}
	t := &pb.Task{}
	if err := proto.Unmarshal(msg.Data(), t); err != nil || t.GetId() == "" || queue.KindOf(t) == "" {
		reason := "task without id or kind"
		if err != nil {
			reason = "undecodable task: " + err.Error()
		}
		w.log.Error("terminating malformed task", "subject", msg.Subject(), "reason", reason)
		_ = msg.TermWithReason(reason)
		return
	}
	log := w.log.With("task_id", t.GetId(), "kind", queue.KindOf(t), "attempt", delivered)
	if w.deps.Propagator != nil {
		ctx = w.deps.Propagator.Extract(ctx, queue.HeaderCarrier(msg.Headers()))
	}
	role := "optimizer"
	if queue.KindOf(t) == queue.KindRollout {
		role = "target"
	}
	kind := queue.KindOf(t)
	ctx = telemetry.WithAttrs(ctx, telemetry.Attrs{Run: t.GetRunId(), Step: int(t.GetStep()), Stage: t.GetStage(), Role: role, TaskID: t.GetId(), Kind: kind})
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
	w.mu.Lock()
	w.running[t.GetId()] = cancel
	w.mu.Unlock()
	defer func() {
		w.mu.Lock()
		delete(w.running, t.GetId())
		w.mu.Unlock()
	}()

	// Heartbeat while the task runs so JetStream does not redeliver it.
	hbDone := make(chan struct{})
	go func() {
		tk := time.NewTicker(w.cfg.Heartbeat)
		defer tk.Stop()
		for {
			select {
			case <-hbDone:
				return
			case <-tk.C:
				_ = msg.InProgress()
			}
		}
	}()
	start := time.Now()
	res := w.deps.Handler.Handle(tctx, t)
	if res == nil {
		res = &pb.Result{Outcome: pb.Outcome_OUTCOME_MODEL_ERROR, Error: "handler returned no result"}
	}
	res.TaskId = t.GetId()
	res.WorkerId = w.cfg.ID
	outcome = outcomeName(res.GetOutcome())
	res.Attempt = int32(delivered)
	if res.DurationMs == 0 {
		res.DurationMs = time.Since(start).Milliseconds()
	}
	cause := context.Cause(tctx)
	switch {
	case errors.Is(cause, errShutdown):
		outcome = "returned"
		close(hbDone)
		log.Info("task cut off by shutdown, returned to queue")
		_ = msg.NakWithDelay(0)
		return
	case errors.Is(cause, errCancelledByCoordinator):
		outcome = "cancelled"
		close(hbDone)
		log.Debug("task cancelled by coordinator")
		_ = msg.Ack() // nobody wants it any more
		return
	}
	if retryable(res.GetOutcome()) && delivered < uint64(w.cfg.MaxDeliver) {
		close(hbDone)
		delay := backoff(delivered)
		log.Warn("task failed, returned for redelivery", "outcome", res.GetOutcome().String(), "err", res.GetError(), "retry_in", delay.String())
		_ = msg.NakWithDelay(delay)
		return
	}
	// Report while still heart-beating: the coordinator may be restarting.
	ack, err := w.rep.report(ctx, res)
	close(hbDone)
	if err != nil {
		log.Warn("result not reported, returned for redelivery", "err", err)
		_ = msg.NakWithDelay(time.Second)
		return
	}
	switch ack.GetStatus() {
	case pb.ReportAck_STATUS_RETRY:
		_ = msg.NakWithDelay(time.Second)
		return
	case pb.ReportAck_STATUS_UNKNOWN:
		log.Warn("coordinator does not know the task; dropping it")
	}
	if err := msg.Ack(); err != nil {
		log.Warn("ack task", "err", err)
	}
	w.completed.Add(1)
}

// outcomeName is a task outcome as a metric and span label.
func outcomeName(o pb.Outcome) string {
	return strings.ToLower(strings.TrimPrefix(o.String(), "OUTCOME_"))
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
