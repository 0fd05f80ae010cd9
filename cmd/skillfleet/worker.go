package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"google.golang.org/grpc"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/internal/serve"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/store/redisstore"
	"github.com/skillfleet/skillfleet/worker"
)

func runWorker(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := newFlagSet("worker", "worker --nats URL [flags]", stderr)
	natsURL := fs.String("nats", "", "NATS URL (required)")
	coord := fs.String("coordinator", "", "send every result to this coordinator HOST:PORT (default: each task's run's coordinator, found in the run directory on NATS)")
	conc := fs.Int("concurrency", 24, "rollout (target) tasks this worker runs at once")
	optConc := fs.Int("optimizer-concurrency", 16, "optimizer tasks this worker runs at once (0 = take no optimizer work)")
	id := fs.String("id", "", "worker id (default host-pid-random)")
	maxDeliver := fs.Int("max-deliveries", 5, "must match the coordinator's runtime.max_deliveries")
	drain := fs.Duration("drain-timeout", 30*time.Second, "on SIGTERM, how long to let running tasks finish before returning them to the queue")
	health := fs.String("health-addr", "", "serve /healthz on this address (e.g. 127.0.0.1:8081)")
	logFormat := fs.String("log-format", "text", "log format: text or json")
	logLevel := fs.String("log-level", "info", "log level: debug, info, warn, error")
	metricsAddr := fs.String("metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics (loopback unless you say otherwise)")
	traceContent := fs.Bool("trace-content", false, "record prompt and completion text in model-call spans")
	natsGiveUp := fs.Duration("nats-give-up", 0, "exit with an error once NATS has been unreachable this long, at start or later (0: keep retrying; a container fleet sets it so that workers end with their NATS)")
	var tlsFlags grpcClientTLS
	tlsFlags.register(fs)
	var exf exposureFlags
	exf.register(fs, false)
	var redisF redisFlags
	redisF.register(fs, "rate limits shared by every worker")
	var natsF natsFlags
	natsF.register(fs)
	if help, err := parse(fs, args); help || err != nil {
		return err
	}
	if *natsURL == "" {
		return usageError{errors.New("worker: --nats is required")}
	}
	log, err := newLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		return err
	}
	if err := exf.check(log, workerExposure(*health, *metricsAddr, *natsURL, natsF, redisF, *coord, tlsFlags)); err != nil {
		return usageError{err}
	}
	tel, stopTel, err := setupTelemetry(ctx, "skillfleet-worker", *id, *metricsAddr, *traceContent, log, exf.metricsTLS)
	if err != nil {
		return err
	}
	defer stopTel()
	natsOpts, err := natsF.options()
	if err != nil {
		return usageError{err}
	}
	retryFor := 24 * time.Hour
	if *natsGiveUp > 0 {
		retryFor = *natsGiveUp
	}
	nc, err := queue.Connect(ctx, *natsURL, queue.ConnectOptions{Name: "skillfleet-worker", Logger: log, RetryFor: retryFor, Extra: natsOpts})
	if err != nil {
		return err
	}
	defer nc.Close()
	if *natsGiveUp > 0 {
		lost, stop := context.WithCancelCause(ctx)
		defer stop(nil)
		go giveUpWithoutNATS(lost, stop, nc, *natsGiveUp)
		ctx = lost
		defer func() {
			if cause := context.Cause(lost); errors.Is(cause, errNATSLost) {
				err = cause
			}
		}()
	}
	dialOpts, err := tlsFlags.dialOptions()
	if err != nil {
		return usageError{err}
	}
	dialOpts = append(dialOpts, grpcClientTracing(tel)...)
	consumers, err := waitConsumers(ctx, nc, log)
	if err != nil {
		return err
	}
	runs, err := worker.WatchRuns(ctx, nc, natsF.replicas)
	if err != nil {
		return err
	}
	limiter := backends.NewLimiter(nil, nil)
	var shared *redisstore.Store
	if redisF.url != "" {
		st, err := redisF.open(ctx, log)
		if err != nil {
			return err
		}
		defer st.Close()
		limiter = sharedLimiter(st.Limiter(), nil, log)
		shared = st
	}
	x := worker.NewExecutor(worker.ExecutorDeps{Logger: log, NewModel: modelFactory(tel, limiter), NewEnv: newEnv, Prompts: promptSet()})
	if *optConc == 0 {
		delete(consumers, queue.ClassOptimizer)
	}
	dial := func(addr string) (*grpc.ClientConn, error) { return worker.Dial(addr, dialOpts...) }
	w := worker.New(worker.Config{ID: *id, Concurrency: *conc, OptimizerConcurrency: *optConc, MaxDeliver: *maxDeliver, DrainTimeout: *drain},
		workerTracing(tel, worker.Deps{Logger: log, NC: nc, Consumers: consumers, Handler: x, Limits: limiterStatus(limiter),
			Coordinators: worker.CoordinatorsConfig{Override: *coord, Runs: runs, Dial: dial}}))
	if *health != "" {
		stop, _, err := serve.HTTP(ctx, *health, http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
			if !nc.IsConnected() {
				http.Error(rw, "nats disconnected", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintf(rw, "ok %s completed=%d\n", w.ID(), w.Completed())
		}), exf.httpConf, log)
		if err != nil {
			return fmt.Errorf("--health-addr: %w", err)
		}
		defer stop()
	}
	if shared != nil {
		actx, stopAnnounce := context.WithCancel(ctx)
		announced := make(chan struct{})
		go func() { announceWorker(actx, shared.Registry(), w, log); close(announced) }()
		defer func() { stopAnnounce(); <-announced }()
	}
	reportTo := "each run's coordinator"
	if *coord != "" {
		reportTo = *coord
	}
	fmt.Fprintf(stdout, "worker %s: pulling tasks of every run from %s, reporting to %s (concurrency %d)\n", w.ID(), *natsURL, reportTo, *conc)
	return w.Run(ctx)
}

// errNATSLost ends a worker whose NATS stayed unreachable past --nats-give-up.
var errNATSLost = errors.New("worker: NATS unreachable past --nats-give-up; exiting")

// giveUpWithoutNATS cancels the worker's context with errNATSLost once nc
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
			cancel(errNATSLost)
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
