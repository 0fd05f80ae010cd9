package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"golang.org/x/term"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/coordinator/dispatch"
	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/pkg/bench/registry"
	"github.com/skillfleet/skillfleet/pkg/config"
	"github.com/skillfleet/skillfleet/pkg/pricing"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/store"
	"github.com/skillfleet/skillfleet/pkg/store/redisstore"
	"github.com/skillfleet/skillfleet/pkg/telemetry"
	usagepkg "github.com/skillfleet/skillfleet/pkg/usage"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
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
	// exposure is --http-tls-* and --insecure-* (exposure.go).
	exposure exposureFlags
	// advertise is the gRPC address workers are told to dial.
	advertise string
	// ackWait is the task consumers' AckWait.
	ackWait time.Duration
	// weight is the run's share of a shared fleet.
	weight float64
	// hooks let a campaign watch and stop the run (nil for a plain run).
	hooks *runHooks
}

// runHooks let a caller that runs many trainings in one process (a
// campaign) see each run's trainer and stop it at a phase boundary.
type runHooks struct {
	// started sees the trainer once it exists.
	started func(tr *trainer.Trainer)
	// stop is consulted with the run's own stop checks.
	stop func() error
}

func (o *trainOpts) register(fs *flag.FlagSet, coordinatorOnly bool) {
	fs.StringVar(&o.config, "config", "", "run config YAML (required)")
	fs.Var(&o.sets, "set", "override a config key, section.key=value (repeatable)")
	fs.StringVar(&o.out, "out", "", "run directory (default env.out_root, else runs/<env>-<time>); re-run with the same --out to resume")
	fs.StringVar(&o.natsURL, "nats", "", "NATS URL of an external server (default: start an embedded one)")
	fs.StringVar(&o.grpcAddr, "grpc-addr", "127.0.0.1:0", "address the coordinator's gRPC service listens on")
	fs.StringVar(&o.advertise, "advertise-addr", "", "gRPC address workers dial, announced in the run directory (default: the listen address; give it when listening on 0.0.0.0 or behind a service name)")
	fs.DurationVar(&o.ackWait, "ack-wait", queue.DefaultAckWait, "how long a task delivered to a worker that stopped heart-beating (a dead worker) waits before it goes to another worker")
	fs.Float64Var(&o.weight, "weight", 1, "the run's share of bulk work on a fleet shared with other runs")
	if !coordinatorOnly {
		fs.IntVar(&o.workers, "workers", -1, "in-process workers (default runtime.workers; 0 = only external workers)")
	}
	fs.IntVar(&o.concurrency, "concurrency", 0, "tasks each in-process worker runs at once (default runtime.rollout_concurrency)")
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
	fs.BoolVar(&o.leaseWait, "lease-wait", false, "with --redis: wait for another coordinator's lease on this run instead of exiting 7")
	fs.StringVar(&o.prices, "prices", "", "price table YAML for budget.max_usd (default: the built-in table, see configs/prices.yaml)")
	o.ui.register(fs)
}

func runTrain(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o trainOpts
	fs := newFlagSet("train", "train --config FILE [flags]", stderr)
	o.register(fs, false)
	if help, err := parse(fs, args); help || err != nil {
		return err
	}
	return train(ctx, o, stdout, stderr)
}

func runCoordinator(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o trainOpts
	fs := newFlagSet("coordinator", "coordinator --config FILE --nats URL [flags]", stderr)
	o.register(fs, true)
	if help, err := parse(fs, args); help || err != nil {
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
	cfg, err := config.Load(path, sets)
	if err == nil {
		err = backends.CheckConfig(cfg)
	}
	if err != nil {
		var fe *config.FieldError
		if errors.As(err, &fe) {
			return nil, usageError{err}
		}
		return nil, err
	}
	return cfg, nil
}

// runIdentity returns the run dir and a run id that stays the same when
// the run is resumed (it is stored in the run dir).
func runIdentity(cfg *config.Config, out string) (dir, id string, err error) {
	dir = out
	if dir == "" {
		dir = cfg.Env.OutRoot
	}
	if dir == "" {
		dir = filepath.Join("runs", fmt.Sprintf("%s-%s", cfg.Env.Name, time.Now().Format("20060102-150405")))
	}
	dir, err = filepath.Abs(dir)
	if err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", "", fmt.Errorf("run dir: %w", err)
	}
	idFile := filepath.Join(dir, "run_id")
	if b, err := os.ReadFile(idFile); err == nil && len(strings.TrimSpace(string(b))) > 0 {
		return dir, strings.TrimSpace(string(b)), nil
	}
	sum := sha256.Sum256([]byte(dir + time.Now().String()))
	base := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, filepath.Base(dir))
	id = base + "-" + hex.EncodeToString(sum[:4])
	if err := os.WriteFile(idFile, []byte(id+"\n"), 0o644); err != nil {
		return "", "", fmt.Errorf("run dir: %w", err)
	}
	return dir, id, nil
}

func isTTY(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
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
		return estimate(o, cfg, stdout)
	}
	if err := o.ui.check(); err != nil {
		return err
	}
	runDir, runID, err := runIdentity(cfg, o.out)
	if err != nil {
		return err
	}
	unlock, err := lockRunDir(runDir)
	if err != nil {
		return err
	}
	defer unlock()
	// The run's leader lease comes before anything is written to the run.
	var shared *redisstore.Store
	var fence func() error
	if o.redis.url != "" {
		if shared, err = o.redis.open(ctx, log); err != nil {
			return usageError{err}
		}
		defer shared.Close()
		f, stopLease, err := leadRun(ctx, shared, runID, o.leaseWait, log)
		if err != nil {
			return err
		}
		defer stopLease()
		fence = f
	}
	if err := cfg.WriteResolved(filepath.Join(runDir, "config.yaml")); err != nil {
		return err
	}
	splits, err := loadSplits(cfg, runDir)
	if err != nil {
		return err
	}
	s, err := coordinator.FromConfig(cfg, runID, runDir)
	if err != nil {
		return usageError{err}
	}
	s.RetryFailed = o.retryFailed
	// The benchmark's own settings are checked here, before any call: in
	// all-in-one mode a bad one is an error; with external workers (which
	// may hold data this host does not) a warning.
	if _, err := registry.New(cfg.Env.Name, s.BenchConfig); err != nil {
		if o.workers != 0 {
			return usageError{fmt.Errorf("config: %s: %w", cfg.File, err)}
		}
		log.Warn("benchmark settings do not work on this host; the workers must have what they need", "benchmark", cfg.Env.Name, "err", err)
	}
	prices, err := budgetPrices(o.prices, s)
	if err != nil {
		return usageError{err}
	}

	var cache *dispatch.Cache
	if shared != nil && !o.noRolloutCache {
		cache = coordinator.RolloutCache(&s, store.Degrading(shared.Cache(), log))
	}
	if shared != nil {
		o.registry = shared.Registry()
	}
	sess, err := startSession(ctx, o, cfg, runDir, runID, &s, cache, log, stderr)
	if err != nil {
		return err
	}
	defer sess.close()
	if cache != nil {
		// Results still being stored reach the cache before the store closes.
		defer cache.Flush()
	}
	hub := sess.hub
	pw := newProgressWiring(stdout, isTTY(stdout) && o.logFormat != "json")
	defer pw.close()
	prog := coordinator.NewProgress(pw.out, false)
	tr, err := coordinator.NewTrainer(s, hub, splits, log, prog)
	if err != nil {
		return err
	}
	prog.SetTokens(func() int64 { return tr.Accounting().Total().Tokens() })
	if at := os.Getenv("SKILLFLEET_CRASH_AT"); at != "" {
		prog.Observe(crashAt(at))
	}
	check := stopCheck(ctx, runDir, s, tr, prices)
	if h := o.hooks; h != nil {
		if h.started != nil {
			h.started(tr)
		}
		if h.stop != nil {
			own := check
			check = func() error {
				if err := own(); err != nil {
					return err
				}
				return h.stop()
			}
		}
	}
	tr.SetStopCheck(check)
	if err := pw.attach(ctx, o.ui, o.prices, runDir, prog, tr, sess.hub, o.registry, redisLevels(shared), log, stderr); err != nil {
		return err
	}
	if fence != nil {
		tr.SetFence(fence)
	}
	tr.SetTelemetry(sess.tel.Tracer, sess.tel.Meters)
	fmt.Fprintf(stdout, "skillfleet: training %s on %s (%d train / %d val / %d test items); run dir %s\n",
		cfg.Env.Name, s.Target.GetModel(), len(splits.Train), len(splits.Val), len(splits.Test), runDir)
	if shared != nil {
		stopCounters := publishCounters(ctx, shared.Counters(), runID, func() usagepkg.Totals { return tr.Accounting().Total() }, log)
		defer stopCounters()
	}
	runCtx, stopRun := sess.stopOnFatal(ctx, runDir)
	defer stopRun()
	sum, err := tr.Run(runCtx)
	if cause := context.Cause(runCtx); err != nil && cause != nil && ctx.Err() == nil {
		return fmt.Errorf("run dir %s: %w; the run is checkpointed: free space and re-run the same command to resume", runDir, cause)
	}
	if err != nil {
		return classifyRunError(err, runDir)
	}
	printSummary(stdout, sum, runDir)
	if cache != nil {
		c, tot := cache.Counts(), tr.Accounting().Total()
		fmt.Fprintf(stdout, "rollout cache: %d hits, %d misses; %d calls and %s tokens saved\n",
			c.Hits, c.Misses, tot.SavedCalls, fmtTokens(tot.SavedInput+tot.SavedOutput))
	}
	if o.assertImproves {
		if sum.TestHard == nil || !(sum.TestHard["best"] > sum.TestHard["baseline"]) {
			return codedError{exitNoImprove, fmt.Errorf("--assert-improves: test score did not rise (baseline %.3f, best %.3f)", sum.TestHard["baseline"], sum.TestHard["best"])}
		}
	}
	return nil
}

func pointAtSim(m *pb.ModelSpec, url string) {
	m.BaseUrl = url
	m.ApiKeyEnv = ""
	if m.Backend == backends.BackendExec {
		return // an agent CLI reaches the sim through its own API (backends/exec)
	}
	m.Backend = backends.BackendOpenAI
}

// stopCheck stops the run at a phase boundary on a signal, a STOP file in
// the run dir, or a reached budget.
func stopCheck(ctx context.Context, runDir string, s trainer.Settings, tr *trainer.Trainer, prices *pricing.Table) func() error {
	start := time.Now()
	return func() error {
		if ctx.Err() != nil {
			return trainer.ErrStopped
		}
		if _, err := os.Stat(filepath.Join(runDir, "STOP")); err == nil {
			_ = os.Remove(filepath.Join(runDir, "STOP"))
			return fmt.Errorf("%w: STOP file found in the run dir", trainer.ErrStopped)
		}
		tot := tr.Accounting().Total()
		switch {
		case s.MaxTokens > 0 && tot.Tokens() >= s.MaxTokens:
			return fmt.Errorf("%w: budget.max_tokens (%d tokens spent, limit %d)", trainer.ErrBudget, tot.Tokens(), s.MaxTokens)
		case s.MaxCalls > 0 && tot.Calls >= s.MaxCalls:
			return fmt.Errorf("%w: budget.max_calls (%d calls made, limit %d)", trainer.ErrBudget, tot.Calls, s.MaxCalls)
		case s.MaxWall > 0 && time.Since(start) >= s.MaxWall:
			return fmt.Errorf("%w: budget.max_wall (%s elapsed)", trainer.ErrBudget, time.Since(start).Round(time.Second))
		}
		if s.MaxUSD > 0 && prices != nil {
			if usd := prices.Price(tr.Accounting().PriceRows()).Total; usd >= s.MaxUSD {
				return fmt.Errorf("%w: budget.max_usd ($%.4f spent at the prices of %s as of %s, limit $%.4f)",
					trainer.ErrBudget, usd, prices.Source(), prices.AsOf(), s.MaxUSD)
			}
		}
		return nil
	}
}

func classifyRunError(err error, runDir string) error {
	resume := fmt.Sprintf("; the run is checkpointed in %s: re-run the same command to resume", runDir)
	switch {
	case errors.Is(err, trainer.ErrBudget):
		return codedError{exitBudget, fmt.Errorf("%w%s with a larger budget (raise the one named, e.g. --set budget.max_tokens=N)", err, resume)}
	case errors.Is(err, trainer.ErrStopped), errors.Is(err, context.Canceled):
		return codedError{exitStopped, fmt.Errorf("stopped on request%s", resume)}
	case errors.Is(err, trainer.ErrCoverage):
		return codedError{exitCoverage, fmt.Errorf("%w%s (add --retry-failed to retry failed tasks)", err, resume)}
	}
	return err
}

func printSummary(w io.Writer, sum *trainer.Summary, runDir string) {
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%-10s %10s %10s\n", "skill", "selection", "test")
	row := func(name string, sel *float64, test float64, ok bool) {
		s := "-"
		if sel != nil {
			s = fmt.Sprintf("%.3f", *sel)
		}
		t := "-"
		if ok {
			t = fmt.Sprintf("%.3f", test)
		}
		fmt.Fprintf(w, "%-10s %10s %10s\n", name, s, t)
	}
	base, best := sum.BaselineScore, sum.BestScore
	tb, okb := sum.TestHard["baseline"]
	tbest, okbest := sum.TestHard["best"]
	tf, okf := sum.TestHard["final"]
	row("baseline", &base, tb, okb)
	row("best", &best, tbest, okbest)
	row("final", sum.FinalScore, tf, okf)
	fmt.Fprintf(w, "\nsteps %d: %d accepted, %d rejected, %d skipped; %d model calls, %s tokens; %.1fs\n",
		sum.TotalSteps, sum.Accepts, sum.Rejects, sum.Skips, sum.Tokens.Calls, fmtTokens(sum.Tokens.Tokens()), sum.WallTime)
	fmt.Fprintf(w, "best skill: %s\n", filepath.Join(runDir, "best_skill.md"))
}

func fmtTokens(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	case n >= 1000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}

var _ = slog.LevelInfo

// session is the running machinery of a run: NATS, the hub, local workers.
type session struct {
	hub     *coordinator.Hub
	tel     *telemetry.Telemetry
	cleanup []func()
	// fatal receives the hub's result-journal failure (a full disk).
	fatal chan error
}

// stopOnFatal returns ctx cancelled, with the reason as its cause, when
// the run can no longer record what it does: the hub's result journal
// failed, or the run dir's file system (which also holds the embedded
// NATS store) has less than minFreeBytes left. The trainer's waits all end
// on ctx, so the run stops with that reason instead of waiting for
// results or tasks that can no longer be written.
func (s *session) stopOnFatal(ctx context.Context, runDir string) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			if err := diskSpaceLeft(runDir); err != nil {
				cancel(err)
				return
			}
			select {
			case err := <-s.fatal:
				cancel(fmt.Errorf("result journal: %w", err))
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return ctx, func() { cancel(nil) }
}

// minFreeBytes is the free space below which a run stops cleanly rather
// than let the journal, the run dir or the NATS store fail mid-write.
const minFreeBytes = 1 << 20

// diskSpaceLeft reports a file system nearly full under dir as an error
// wrapping syscall.ENOSPC (nil where free space cannot be measured).
func diskSpaceLeft(dir string) error {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return nil
	}
	if free := st.Bavail * uint64(st.Bsize); free < minFreeBytes {
		return fmt.Errorf("%w (%d KiB free; a run stops below %d KiB)", syscall.ENOSPC, free>>10, minFreeBytes>>10)
	}
	return nil
}

func (s *session) add(f func()) { s.cleanup = append(s.cleanup, f) }

func (s *session) close() {
	for i := len(s.cleanup) - 1; i >= 0; i-- {
		s.cleanup[i]()
	}
	s.cleanup = nil
}

// startSession starts (or connects to) NATS, the coordinator hub and the
// in-process workers, and points the roles at an in-process sim-llm when
// the config asks for one.
func startSession(ctx context.Context, o trainOpts, cfg *config.Config, runDir, runID string, s *trainer.Settings, cache *dispatch.Cache, log *slog.Logger, stderr io.Writer) (*session, error) {
	sess := &session{}
	ok := false
	defer func() {
		if !ok {
			sess.close()
		}
	}()
	tel, stopTel, err := setupTelemetry(ctx, "skillfleet-coordinator", runID, o.metricsAddr, o.traceContent, log, o.exposure.metricsTLS)
	if err != nil {
		return nil, err
	}
	sess.add(stopTel)

	if cfg.Runtime.SimLLM {
		url, stop, err := startSimLLM(ctx, log)
		if err != nil {
			return nil, err
		}
		sess.add(stop)
		pointAtSim(s.Target, url)
		pointAtSim(s.Optimizer, url)
		pointAtSim(s.Rewriter, url)
	}

	// NATS: external or embedded.
	var nc *nats.Conn
	var embedded *queue.Embedded
	if o.natsURL != "" {
		natsOpts, err := o.nats.options()
		if err != nil {
			return nil, usageError{err}
		}
		nc, err = queue.Connect(ctx, o.natsURL, queue.ConnectOptions{Name: "skillfleet-coordinator", Logger: log, Extra: natsOpts})
		if err != nil {
			return nil, err
		}
	} else {
		embedded, err = queue.StartEmbedded(queue.EmbeddedOptions{StoreDir: filepath.Join(runDir, "nats")})
		if err != nil {
			return nil, err
		}
		sess.add(embedded.Shutdown)
		nc, err = embedded.Connect("skillfleet-coordinator")
		if err != nil {
			return nil, err
		}
	}
	sess.add(nc.Close)

	grpcOpts, err := o.grpcTLS.options()
	if err != nil {
		return nil, err
	}
	if o.grpcTLS.enabled() && (o.workers > 0 || (o.workers < 0 && cfg.Runtime.Workers > 0)) {
		return nil, usageError{fmt.Errorf("--grpc-tls-* secure external workers; run with --workers 0 (in-process workers need no network)")}
	}
	ln, err := net.Listen("tcp", o.grpcAddr)
	if err != nil {
		return nil, fmt.Errorf("listen %s: %w", o.grpcAddr, err)
	}
	sess.fatal = make(chan error, 1)
	hub, err := coordinator.NewHub(ctx, coordinator.HubOptions{
		OnFatal: func(err error) {
			select {
			case sess.fatal <- err:
			default:
			}
		},
		Logger: log, NC: nc, RunDir: runDir, RunID: runID, GRPCListener: ln, NoSync: o.noSync,
		GRPCServerOptions: append(grpcOpts, grpcServerTracing(tel)...), Propagator: tel.Propagator, Meters: tel.Meters,
		Consumer: queue.ConsumerOptions{MaxDeliver: cfg.Runtime.MaxDeliveries, AckWait: o.ackWait},
		Cache:    cache, Advertise: o.advertise, Weight: o.weight, Replicas: o.nats.replicasOr(cfg.Runtime.NATSReplicas),
	})
	if err != nil {
		return nil, err
	}
	hubCtx, hubStop := context.WithCancel(context.WithoutCancel(ctx))
	hubDone := make(chan error, 1)
	go func() { hubDone <- hub.Run(hubCtx) }()
	sess.add(func() { hubStop(); <-hubDone })

	workers := o.workers
	if workers < 0 {
		workers = cfg.Runtime.Workers
	}
	conc := o.concurrency
	if conc <= 0 {
		conc = cfg.Runtime.RolloutConcurrency
	}
	if workers > 0 {
		stop, err := startLocalWorkers(ctx, log, workerSetup{
			nc: func() (*nats.Conn, error) {
				if embedded != nil {
					return embedded.Connect("skillfleet-worker")
				}
				natsOpts, err := o.nats.options()
				if err != nil {
					return nil, err
				}
				return queue.Connect(ctx, o.natsURL, queue.ConnectOptions{Name: "skillfleet-worker", Logger: log, Extra: natsOpts})
			},
			tel: tel, coordinator: hub.Addr(), n: workers, concurrency: conc, optConcurrency: cfg.Runtime.OptimizerConcurrency, maxDeliver: cfg.Runtime.MaxDeliveries,
		})
		if err != nil {
			return nil, err
		}
		sess.add(stop)
	} else {
		log.Info("waiting for external workers", "grpc_addr", hub.Addr())
		fmt.Fprintf(stderr, "coordinator listening on %s; start workers with: skillfleet worker --nats %s --coordinator %s\n", hub.Addr(), o.natsURL, hub.Addr())
	}

	if o.healthAddr != "" {
		stop, err := serveHealth(ctx, o.healthAddr, hub, o.registry, log, o.exposure)
		if err != nil {
			return nil, fmt.Errorf("--health-addr: %w", err)
		}
		sess.add(stop)
	}
	sess.hub = hub
	sess.tel = tel
	ok = true
	return sess, nil
}

// crashAt returns an observer that kills this process with SIGKILL when
// the n-th task of a stage finishes (SKILLFLEET_CRASH_AT=stage:n). It
// exists for the crash-and-resume tests.
func crashAt(spec string) func(stage string, done int) {
	stage, nstr, _ := strings.Cut(spec, ":")
	n, _ := strconv.Atoi(nstr)
	n = max(n, 1)
	return func(s string, done int) {
		if strings.HasPrefix(s, stage) && done >= n {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
}

// budgetPrices loads the price table budget.max_usd is enforced with; nil
// when there is no dollar budget. Every model of the run must have a
// price: a budget that cannot count some spend is refused, not guessed.
func budgetPrices(path string, s trainer.Settings) (*pricing.Table, error) {
	if s.MaxUSD <= 0 {
		return nil, nil
	}
	t := pricing.Default()
	if path != "" {
		var err error
		if t, err = pricing.Load(path); err != nil {
			return nil, fmt.Errorf("--prices: %w", err)
		}
	}
	for _, m := range []*pb.ModelSpec{s.Target, s.Optimizer, s.Rewriter} {
		if m == nil || m.GetModel() == "" {
			continue
		}
		if _, _, ok := t.Lookup(m.GetModel()); !ok {
			return nil, fmt.Errorf("budget.max_usd: the price table %s has no price for model %q; add it there or pass a table that has one with --prices FILE", t.Source(), m.GetModel())
		}
	}
	return t, nil
}
