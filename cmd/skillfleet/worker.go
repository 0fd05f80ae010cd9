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

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/store/redisstore"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/worker"
)

func runWorker(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("worker", "worker --nats URL --coordinator HOST:PORT [flags]", stderr)
	natsURL := fs.String("nats", "", "NATS URL (required)")
	coord := fs.String("coordinator", "", "coordinator gRPC address HOST:PORT (required)")
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
	var tlsFlags grpcClientTLS
	tlsFlags.register(fs)
	var redisF redisFlags
	redisF.register(fs, "rate limits shared by every worker")
	var natsF natsFlags
	natsF.register(fs)
	if help, err := parse(fs, args); help || err != nil {
		return err
	}
	if *natsURL == "" || *coord == "" {
		return usageError{errors.New("worker: --nats and --coordinator are required")}
	}
	log, err := newLogger(stderr, *logFormat, *logLevel)
	if err != nil {
		return err
	}
	tel, stopTel, err := setupTelemetry(ctx, "skillfleet-worker", *id, *metricsAddr, *traceContent, log)
	if err != nil {
		return err
	}
	defer stopTel()
	natsOpts, err := natsF.options()
	if err != nil {
		return usageError{err}
	}
	nc, err := queue.Connect(ctx, *natsURL, queue.ConnectOptions{Name: "skillfleet-worker", Logger: log, RetryFor: 24 * time.Hour, Extra: natsOpts})
	if err != nil {
		return err
	}
	defer nc.Close()
	dialOpts, err := tlsFlags.dialOptions()
	if err != nil {
		return usageError{err}
	}
	cc, err := worker.Dial(*coord, append(dialOpts, grpcClientTracing(tel)...)...)
	if err != nil {
		return err
	}
	defer cc.Close()
	consumer, optConsumer, err := waitConsumers(ctx, nc, log)
	if err != nil {
		return err
	}
	client := pb.NewCoordinatorClient(cc)
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
	x := worker.NewExecutor(worker.ExecutorDeps{Logger: log, Client: client, NewModel: modelFactory(tel, limiter), NewEnv: newEnv, Prompts: promptSet()})
	if *optConc == 0 {
		optConsumer = nil
	}
	w := worker.New(worker.Config{ID: *id, Concurrency: *conc, OptimizerConcurrency: *optConc, MaxDeliver: *maxDeliver, DrainTimeout: *drain},
		workerTracing(tel, worker.Deps{Logger: log, NC: nc, Consumer: consumer, OptimizerConsumer: optConsumer, Client: client, Handler: x}))
	if *health != "" {
		srv := &http.Server{Addr: *health, ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
			if !nc.IsConnected() {
				http.Error(rw, "nats disconnected", http.StatusServiceUnavailable)
				return
			}
			fmt.Fprintf(rw, "ok %s completed=%d\n", w.ID(), w.Completed())
		})}
		go func() { _ = srv.ListenAndServe() }()
		defer srv.Close()
	}
	if shared != nil {
		actx, stopAnnounce := context.WithCancel(ctx)
		announced := make(chan struct{})
		go func() { announceWorker(actx, shared.Registry(), w, log); close(announced) }()
		defer func() { stopAnnounce(); <-announced }()
	}
	fmt.Fprintf(stdout, "worker %s: pulling tasks from %s, reporting to %s (concurrency %d)\n", w.ID(), *natsURL, *coord, *conc)
	return w.Run(ctx)
}

// waitConsumers waits for the coordinator to create the task consumers.
func waitConsumers(ctx context.Context, nc *nats.Conn, log *slog.Logger) (jetstream.Consumer, jetstream.Consumer, error) {
	delay := 200 * time.Millisecond
	for attempt := 1; ; attempt++ {
		c, oc, err := worker.Consumers(ctx, nc)
		if err == nil {
			return c, oc, nil
		}
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		if attempt == 1 || attempt%10 == 0 {
			log.Warn("task consumer not found yet (is the coordinator up?), retrying", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		case <-time.After(delay):
		}
		delay = min(delay*2, 3*time.Second)
	}
}
