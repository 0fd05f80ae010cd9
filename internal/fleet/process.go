package fleet

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/internal/serve"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/store"
	"github.com/skillfleet/skillfleet/pkg/store/redisstore"
	"github.com/skillfleet/skillfleet/pkg/telemetry"
	"github.com/skillfleet/skillfleet/worker"
)

// Process is a worker process: one worker serving every run on a NATS.
type Process struct {
	Worker worker.Config
	// NATSURL, with its credentials and TLS (NATSOptions), is the fleet's
	// NATS; NATSReplicas keeps the run directory on that many servers.
	NATSURL      string
	NATSOptions  []nats.Option
	NATSReplicas int
	// GiveUp ends the process with [ErrNATSLost] once NATS has been
	// unreachable this long, at start or later (0: keep retrying).
	GiveUp time.Duration
	// Coordinator, when set, receives every result; else each task's run's
	// coordinator, found in the run directory on NATS.
	Coordinator string
	// DialOptions are the gRPC dial options (transport credentials).
	DialOptions []grpc.DialOption
	// Shared, when set, holds the rate limits every worker shares, and
	// the registry this worker announces itself in.
	Shared *redisstore.Store
	// Telemetry traces tasks and model calls (nil: none).
	Telemetry *telemetry.Telemetry
	// HealthAddr, when set, serves /healthz (over TLS with HealthTLS).
	HealthAddr string
	HealthTLS  *tls.Config
	Logger     *slog.Logger
	// Out receives the line saying what the worker serves.
	Out io.Writer
}

// ErrNATSLost ends a worker process whose NATS stayed unreachable past
// [Process.GiveUp].
var ErrNATSLost = errors.New("worker: NATS unreachable past --nats-give-up; exiting")

// RunProcess runs p until ctx ends (nil) or NATS is lost ([ErrNATSLost]).
// A ctx that ends while the process is still starting (connecting to
// NATS, waiting for a coordinator to make the task consumers) is a stop
// on request like any other: nil.
func RunProcess(ctx context.Context, p Process) (err error) {
	stopped := ctx
	defer func() {
		if err != nil && stopped.Err() != nil && !errors.Is(err, ErrNATSLost) {
			err = nil
		}
	}()
	log := p.Logger
	retryFor := 24 * time.Hour
	if p.GiveUp > 0 {
		retryFor = p.GiveUp
	}
	nc, err := queue.Connect(ctx, p.NATSURL, queue.ConnectOptions{Name: "skillfleet-worker", Logger: log, RetryFor: retryFor, Extra: p.NATSOptions})
	if err != nil {
		return err
	}
	defer nc.Close()
	if p.GiveUp > 0 {
		lost, stop := context.WithCancelCause(ctx)
		gaveUp := make(chan struct{})
		go func() { giveUpWithoutNATS(lost, stop, nc, p.GiveUp); close(gaveUp) }()
		defer func() { stop(nil); <-gaveUp }()
		ctx = lost
		defer func() {
			if cause := context.Cause(lost); errors.Is(cause, ErrNATSLost) {
				err = cause
			}
		}()
	}
	if err := coordinator.WaitForJetStream(ctx, nc, log); err != nil {
		return err
	}
	consumers, err := waitConsumers(ctx, nc, log)
	if err != nil {
		return err
	}
	runs, err := worker.WatchRuns(ctx, nc, p.NATSReplicas)
	if err != nil {
		return err
	}
	watchCtx, stopWatch := context.WithCancel(ctx)
	watched := make(chan struct{})
	go func() { _ = runs.Run(watchCtx); close(watched) }()
	defer func() { stopWatch(); <-watched }()
	limiter := backends.NewLimiter(nil, nil)
	if p.Shared != nil {
		limiter = SharedLimiter(p.Shared.Limiter(), nil, log)
	}
	if p.Worker.OptimizerConcurrency == 0 {
		delete(consumers, queue.ClassOptimizer)
	}
	dialOpts := append(append([]grpc.DialOption(nil), p.DialOptions...), p.Telemetry.GRPCDialOptions()...)
	dial := func(addr string) (*grpc.ClientConn, error) { return worker.Dial(addr, dialOpts...) }
	x := executor(log, p.Telemetry, limiter)
	// The benchmarks' connections end with the worker.
	defer func() { _ = x.Close() }()
	w := worker.New(p.Worker, traced(p.Telemetry, worker.Deps{Logger: log, NC: nc, Consumers: consumers, Handler: x,
		Limits: limiterStatus(limiter), Coordinators: worker.CoordinatorsConfig{Override: p.Coordinator, Runs: runs.Table, Dial: dial}}))
	if p.HealthAddr != "" {
		stop, _, err := serve.HTTP(ctx, p.HealthAddr, http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
			if !nc.IsConnected() {
				http.Error(rw, "nats disconnected", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintf(rw, "ok %s completed=%d\n", w.ID(), w.Completed())
		}), p.HealthTLS, log)
		if err != nil {
			return fmt.Errorf("--health-addr: %w", err)
		}
		defer stop()
	}
	if p.Shared != nil {
		actx, stopAnnounce := context.WithCancel(ctx)
		announced := make(chan struct{})
		go func() { announce(actx, p.Shared.Registry(), w, log); close(announced) }()
		defer func() { stopAnnounce(); <-announced }()
	}
	reportTo := "each run's coordinator"
	if p.Coordinator != "" {
		reportTo = p.Coordinator
	}
	fmt.Fprintf(p.Out, "worker %s: pulling tasks of every run from %s, reporting to %s (concurrency %d)\n", w.ID(), p.NATSURL, reportTo, p.Worker.Concurrency)
	return w.Run(ctx)
}

// giveUpWithoutNATS cancels the worker's context with ErrNATSLost once nc
// has been disconnected for longer than after.
func giveUpWithoutNATS(ctx context.Context, cancel context.CancelCauseFunc, nc *nats.Conn, after time.Duration) {
	tick := time.NewTicker(min(after/4, time.Second))
	defer tick.Stop()
	var since time.Time
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if nc.IsConnected() {
			since = time.Time{}
			continue
		}
		if since.IsZero() {
			since = time.Now()
		} else if time.Since(since) >= after {
			cancel(ErrNATSLost)
			return
		}
	}
}

// waitConsumers waits for a coordinator to create the task consumers.
func waitConsumers(ctx context.Context, nc *nats.Conn, log *slog.Logger) (map[queue.Class]jetstream.Consumer, error) {
	delay := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		c, err := worker.Consumers(ctx, nc)
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if attempt == 1 || attempt%10 == 0 {
			log.Warn("task consumers not found yet (no coordinator has started on this NATS), retrying", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, 3*time.Second)
	}
}

// announce keeps a worker's entry in the shared registry fresh (who is
// alive, what it runs, its concurrency) until ctx ends, then removes it.
func announce(ctx context.Context, reg store.Registry, w *worker.Worker, log *slog.Logger) {
	host, _ := os.Hostname()
	const every, ttl = 5 * time.Second, 15 * time.Second
	beat := func() {
		conc, inFlight, running := w.Snapshot()
		if len(running) > 64 {
			running = running[:64]
		}
		hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if err := reg.Heartbeat(hctx, store.WorkerInfo{ID: w.ID(), Host: host, Concurrency: conc, InFlight: inFlight, Running: running}, ttl); err != nil && ctx.Err() == nil {
			log.Debug("worker registry heartbeat failed", "err", err)
		}
	}
	beat()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			_ = reg.Remove(rctx, w.ID())
			cancel()
			return
		case <-t.C:
			beat()
		}
	}
}
