package main

import (
	"context"
	"errors"
	"io"
	"time"

	"github.com/skillfleet/skillfleet/internal/fleet"
	"github.com/skillfleet/skillfleet/worker"
)

func runWorker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("worker", "worker --nats URL [flags]", stderr)
	natsURL := fs.String("nats", "", "NATS URL (required)")
	coord := fs.String("coordinator", "", "send every result to this coordinator HOST:PORT (default: each task's run's coordinator, found in the run directory on NATS)")
	conc := fs.Int("concurrency", 24, "rollout (target) tasks this worker runs at once")
	optConc := fs.Int("optimizer-concurrency", 16, "optimizer tasks this worker runs at once (0 = take no optimizer work)")
	id := fs.String("id", "", "worker id (default host-pid-random)")
	maxDeliver := fs.Int("max-deliveries", 5, "deliveries of a task, used only when a task consumer's info does not say (the worker reads them from the fleet's consumers)")
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
	dialOpts, err := tlsFlags.dialOptions()
	if err != nil {
		return usageError{err}
	}
	p := fleet.Process{
		Worker:  worker.Config{ID: *id, Concurrency: *conc, OptimizerConcurrency: *optConc, MaxDeliver: *maxDeliver, DrainTimeout: *drain},
		NATSURL: *natsURL, NATSOptions: natsOpts, NATSReplicas: natsF.replicas, GiveUp: *natsGiveUp,
		Coordinator: *coord, DialOptions: dialOpts, Telemetry: tel, HealthAddr: *health, HealthTLS: exf.httpConf, Logger: log, Out: stdout,
	}
	if redisF.url != "" {
		if p.Shared, err = redisF.open(ctx, log); err != nil {
			return err
		}
		defer p.Shared.Close()
	}
	return fleet.RunProcess(ctx, p)
}
