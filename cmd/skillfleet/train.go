package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"regexp"
	"time"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/internal/fleet"
	"github.com/skillfleet/skillfleet/internal/runview"
	"github.com/skillfleet/skillfleet/internal/serve"
	"github.com/skillfleet/skillfleet/internal/ui"
	"github.com/skillfleet/skillfleet/pkg/config"
	"github.com/skillfleet/skillfleet/pkg/pricing"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/store"
	"github.com/skillfleet/skillfleet/pkg/store/redisstore"
	"github.com/skillfleet/skillfleet/pkg/telemetry"
)

// trainOpts are the flags shared by train and coordinator.
type trainOpts struct {
	config         string
	sets           multiFlag
	out            string
	natsURL        string
	grpcAddr       string
	workers        int
	concurrency    int
	logFormat      string
	logLevel       string
	assertImproves bool
	retryFailed    bool
	noSync         bool
	healthAddr     string
	metricsAddr    string
	traceContent   bool
	prices         string
	grpcTLS        grpcServerTLS
	redis          redisFlags
	nats           natsFlags
	noRolloutCache bool
	leaseWait      bool
	estimate       bool
	// registry, set when a shared store is in use, is listed by /status.
	registry store.Registry
	ui       uiFlags // --ui, --ui-insecure (ui.go)
	// progressFile keeps progress.json for a dashboard in another process.
	progressFile bool
	// exposure is --http-tls-* and --insecure-* (exposure.go).
	exposure exposureFlags
	// advertise is the gRPC address workers are told to dial.
	advertise string
	// ackWait is the task consumers' AckWait.
	ackWait time.Duration
	// weight is the run's share of a shared fleet.
	weight float64
	// natsGiveUp stops the run once --nats has been unreachable this long.
	natsGiveUp time.Duration
	// noPreflight skips the credential check before the first call.
	noPreflight bool
	// progressEvery is the interval of progress lines when the output is
	// not a terminal.
	progressEvery time.Duration
}

func (o *trainOpts) register(fs *flag.FlagSet, coordinatorOnly bool) {
	fs.StringVar(&o.config, "config", "", "run config YAML (required)")
	fs.Var(&o.sets, "set", "override a config key, section.key=value (repeatable)")
	fs.StringVar(&o.out, "out", "", "run directory (default env.out_root, else runs/<env>-<time>); re-run with the same --out to resume")
	fs.StringVar(&o.natsURL, "nats", "", "NATS URL of an external server (default: start an embedded one)")
	fs.DurationVar(&o.natsGiveUp, "nats-give-up", 0, "with --nats: stop the run (checkpointed, exit 1) once NATS has been unreachable this long, at start or later (0: retry a first connection for a minute, a lost one forever)")
	fs.StringVar(&o.grpcAddr, "grpc-addr", "127.0.0.1:0", "address the coordinator's gRPC service listens on")
	fs.StringVar(&o.advertise, "advertise-addr", "", "gRPC address workers dial, announced in the run directory (default: the listen address; give it when listening on 0.0.0.0 or behind a service name)")
	fs.DurationVar(&o.ackWait, "ack-wait", 0, "how long a task delivered to a worker that stopped heart-beating (a dead worker) waits before it goes to another worker (default: the fleet's task consumers', "+queue.DefaultAckWait.String()+" when this run creates them; another value than the fleet's refuses the run)")
	fs.Float64Var(&o.weight, "weight", 1, "the run's share of bulk work on a fleet shared with other runs")
	if !coordinatorOnly {
		fs.IntVar(&o.workers, "workers", -1, "in-process workers (default runtime.workers; 0 = only external workers)")
	}
	fs.IntVar(&o.concurrency, "concurrency", 0, "tasks each in-process worker runs at once (default runtime.rollout_concurrency)")
	fs.DurationVar(&o.progressEvery, "progress-every", 10*time.Second, "when the output is not a terminal (nohup, CI, a pipe): a progress line this often while tasks run (tasks done, time left, tokens; or waiting for workers); 0 = none")
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: text or json (json also makes progress plain lines)")
	fs.StringVar(&o.logLevel, "log-level", "warn", "log level: debug, info, warn, error")
	fs.BoolVar(&o.assertImproves, "assert-improves", false, "exit 5 unless the best skill's test score beats the baseline's")
	fs.BoolFunc("keep-workdirs", "keep the work directory of every agent CLI call (exec targets), for debugging", func(string) error {
		return o.sets.Set("model.target_options.keep_workdir=true")
	})
	fs.BoolVar(&o.retryFailed, "retry-failed", false, "on resume, dispatch again the tasks whose recorded outcome is a failure")
	fs.BoolVar(&o.noSync, "no-fsync", false, "do not fsync the result journal (faster; a machine crash may lose results)")
	fs.StringVar(&o.healthAddr, "health-addr", "", "serve /healthz and /status on this address (e.g. 127.0.0.1:8080)")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "serve Prometheus metrics at http://ADDR/metrics (loopback unless you say otherwise)")
	fs.BoolVar(&o.traceContent, "trace-content", false, "record prompt and completion text in model-call spans")
	o.grpcTLS.register(fs)
	o.exposure.register(fs, true)
	o.redis.register(fs, "the rollout cache shared across runs and the run's leader lease")
	o.nats.register(fs)
	fs.BoolVar(&o.noRolloutCache, "no-rollout-cache", false, "with --redis: do not read or fill the shared rollout cache")
	fs.BoolVar(&o.estimate, "estimate", false, "print the expected calls, tokens and dollars per stage for the config, then exit without calling any model")
	fs.BoolVar(&o.noPreflight, "no-preflight", false, "do not check each model's credentials (key variable set, one GET /models) before the first call; the check runs only with in-process workers")
	fs.BoolVar(&o.leaseWait, "lease-wait", false, "with --redis: wait for another coordinator's lease on this run instead of exiting 7")
	fs.StringVar(&o.prices, "prices", "", "price table YAML for budget.max_usd (default: the built-in table, see configs/prices.yaml)")
	o.ui.register(fs)
	fs.BoolVar(&o.progressFile, "progress-file", false, "keep progress.json in the run dir up to date (as --ui does) for a dashboard in another process: skillfleet ui DIR shows the wave's tasks and time left")
}

func runTrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o trainOpts
	fs := newFlagSet("train", "train --config FILE [flags]", stderr)
	o.register(fs, false)
	if help, err := parse(fs, skillOptArgs(fs, args)); help || err != nil {
		return err
	}
	return train(ctx, o, stdout, stderr)
}

func runCoordinator(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o trainOpts
	fs := newFlagSet("coordinator", "coordinator --config FILE --nats URL [flags]", stderr)
	o.register(fs, true)
	if help, err := parse(fs, skillOptArgs(fs, args)); help || err != nil {
		return err
	}
	if o.natsURL == "" {
		return usageError{errors.New("coordinator: --nats is required (use `skillfleet train` for all-in-one)")}
	}
	o.workers = 0
	return train(ctx, o, stdout, stderr)
}

func loadConfig(path string, sets []string) (*config.Config, error) {
	if path == "" {
		return nil, usageError{errors.New("--config is required")}
	}
	cfg, err := coordinator.LoadConfig(path, sets)
	return cfg, startError(err)
}

// runConfig is the coordinator.Config the flags give a run of cfg.
func (o trainOpts) runConfig(cfg *config.Config, log *slog.Logger) (coordinator.Config, error) {
	rc := coordinator.Config{
		Run: cfg, Dir: o.out, RetryFailed: o.retryFailed, NATSURL: o.natsURL, NATSReplicas: o.nats.replicas, NATSGiveUp: o.natsGiveUp, GRPCAddr: o.grpcAddr, Advertise: o.advertise,
		AckWait: o.ackWait, Weight: o.weight, NoSync: o.noSync, Workers: o.workers, Concurrency: o.concurrency,
		NoRolloutCache: o.noRolloutCache, LeaseWait: o.leaseWait, Logger: log,
	}
	if o.grpcTLS.enabled() && (o.workers > 0 || (o.workers < 0 && cfg.Runtime.Workers > 0)) {
		return rc, usageError{fmt.Errorf("--grpc-tls-* secure external workers; run with --workers 0 (in-process workers need no network)")}
	}
	var err error
	if rc.GRPCServerOptions, err = o.grpcTLS.options(log); err != nil {
		return rc, err
	}
	if o.natsURL != "" {
		if rc.NATSOptions, err = o.nats.options(); err != nil {
			return rc, usageError{err}
		}
	}
	return rc, nil
}

// runDeps are the parts of a run this binary gives it: in-process
// workers and the sim-llm (package fleet), telemetry, and (in test builds)
// the crash hook.
func (o trainOpts) runDeps(log *slog.Logger) coordinator.Deps {
	d := fleet.Deps(log)
	d.Telemetry = func(ctx context.Context, runID string) (*telemetry.Telemetry, func(), error) {
		return setupTelemetry(ctx, "skillfleet-coordinator", runID, o.metricsAddr, o.traceContent, log, o.exposure.metricsTLS)
	}
	d.Observe = fleet.CrashHook()
	return d
}

// startError maps what refused a run's start to the command's exit codes.
func startError(err error) error {
	var ce *coordinator.ConfigError
	switch {
	case errors.Is(err, coordinator.ErrLocked):
		return codedError{exitLocked, err}
	case errors.Is(err, trainer.ErrStopped):
		return codedError{exitStopped, err}
	case errors.As(err, &ce):
		return usageError{err}
	}
	return err
}

func train(ctx context.Context, o trainOpts, stdout, stderr io.Writer) error {
	log, err := newLogger(stderr, o.logFormat, o.logLevel)
	if err != nil {
		return err
	}
	if err := o.exposure.check(log, o.exposureOf()); err != nil {
		return usageError{err}
	}
	cfg, err := loadConfig(o.config, o.sets)
	if err != nil {
		return err
	}
	for _, w := range cfg.Warnings {
		log.Warn("config", "warning", w.String())
	}
	if o.estimate {
		// Nothing is called or written: the expected calls, tokens and
		// dollars per stage.
		prices, err := pricing.LoadOrDefault(o.prices)
		if err != nil {
			return usageError{err}
		}
		return startError(coordinator.WriteEstimate(stdout, cfg, prices))
	}
	if err := o.ui.check(); err != nil {
		return err
	}
	rc, err := o.runConfig(cfg, log)
	if err != nil {
		return err
	}
	if err := o.preflight(ctx, map[string]*config.Config{"": cfg}); err != nil {
		return err
	}
	if rc.Prices, err = pricing.LoadOrDefault(o.prices); err != nil {
		return usageError{fmt.Errorf("--prices: %w", err)}
	}
	var shared *redisstore.Store
	if o.redis.url != "" {
		if shared, err = o.redis.open(ctx, log); err != nil {
			return usageError{err}
		}
		defer shared.Close()
		rc.Shared = shared
		o.registry = shared.Registry()
	}
	view := runview.New(stdout, ui.IsTerminal(stdout) && o.logFormat != "json")
	defer view.Close()
	rc.Progress = coordinator.NewProgress(view.Out(), false)
	if !ui.IsTerminal(stdout) || o.logFormat == "json" {
		defer rc.Progress.Periodic(o.progressEvery)()
	}
	stopHealth := func() {}
	defer func() { stopHealth() }()
	rc.OnStart = func(r *coordinator.Run) error {
		if o.healthAddr != "" {
			stop, addr, err := serve.HTTP(ctx, o.healthAddr, serve.Status(r.Hub(), o.registry), o.exposure.httpConf, log)
			if err != nil {
				return fmt.Errorf("--health-addr: %w", err)
			}
			log.Info("health endpoint listening", "addr", addr.String())
			stopHealth = stop
		}
		if err := view.Attach(ctx, r, rc.Progress, runview.Options{Prices: rc.Prices, Dashboard: o.ui.options(nil, nil, log), Announce: stderr, ProgressFile: o.progressFile,
			Registry: o.registry, Levels: fleet.RedisLevels(shared)}); err != nil {
			return usageError{err}
		}
		if o.workers == 0 || (o.workers < 0 && cfg.Runtime.Workers == 0) {
			fmt.Fprintf(stderr, "coordinator listening on %s; start workers with: skillfleet worker --nats %s --coordinator %s\n", r.Hub().Addr(), o.natsURL, r.Hub().Addr())
		}
		return r.WriteStart(stdout)
	}
	// Without --out (or env.out_root) each run gets a new timestamped dir,
	// so resuming one needs its dir named.
	chosen := o.out == "" && cfg.Env.OutRoot == ""
	run, err := coordinator.Start(ctx, rc, o.runDeps(log))
	if err != nil {
		return startError(err)
	}
	if chosen {
		fmt.Fprintf(stderr, "no --out: this run's dir is %s; to resume it after a stop, re-run with --out %s\n", run.Dir(), run.Dir())
	}
	res, err := run.Wait()
	if err != nil {
		return classifyRunError(err, run.Dir(), chosen)
	}
	if err := res.WriteText(stdout, run.Dir()); err != nil {
		return err
	}
	if o.assertImproves {
		sum := res.Summary
		if sum.TestHard == nil || !(sum.TestHard["best"] > sum.TestHard["baseline"]) {
			return codedError{exitNoImprove, fmt.Errorf("--assert-improves: test score did not rise (baseline %.3f, best %.3f)", sum.TestHard["baseline"], sum.TestHard["best"])}
		}
	}
	return nil
}

// budgetKey finds the budget a budget error names.
var budgetKey = regexp.MustCompile(`budget\.max_[a-z]+`)

// chosen says the run dir was chosen for this run (no --out, no
// env.out_root): the same command would start a new run in a new dir, so
// the hint to resume names --out.
func classifyRunError(err error, runDir string, chosen bool) error {
	resume := fmt.Sprintf("; the run is checkpointed in %s: re-run the same command to resume", runDir)
	if chosen {
		resume = fmt.Sprintf("; the run is checkpointed in %s: re-run the same command with --out %s to resume", runDir, runDir)
	}
	switch {
	case errors.Is(err, trainer.ErrBudget):
		key := "budget.max_tokens"
		if m := budgetKey.FindString(err.Error()); m != "" {
			key = m
		}
		return codedError{exitBudget, fmt.Errorf("%w%s with a larger budget: raise %s (--set %s=N)", err, resume, key, key)}
	case errors.Is(err, trainer.ErrStopped), errors.Is(err, context.Canceled):
		return codedError{exitStopped, fmt.Errorf("stopped on request%s", resume)}
	case errors.Is(err, trainer.ErrCoverage):
		return codedError{exitCoverage, fmt.Errorf("%w%s (add --retry-failed to retry failed tasks)", err, resume)}
	}
	return err
}
