package coordinator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/grpc"

	"github.com/skillfleet/skillfleet/coordinator/dispatch"
	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/internal/atomicfile"
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/registry"
	"github.com/skillfleet/skillfleet/pkg/config"
	"github.com/skillfleet/skillfleet/pkg/pricing"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/rundir"
	"github.com/skillfleet/skillfleet/pkg/store"
	"github.com/skillfleet/skillfleet/pkg/store/redisstore"
	"github.com/skillfleet/skillfleet/pkg/telemetry"
	"github.com/skillfleet/skillfleet/pkg/usage"
)

// Config says which run [Start] starts and how it reaches its fleet. Every
// field but Run has a usable zero value, given in its comment.
type Config struct {
	// Run is the run's loaded config. Nil starts a fleet without a
	// trainer — NATS, the hub and in-process workers for Dir — whose tasks
	// the caller submits through [Run.Hub] until it calls [Run.Stop]; Dir
	// is then required.
	Run *config.Config
	// Dir is the run directory (default env.out_root, else
	// runs/<env>-<time>). Starting a run on a directory that holds one
	// resumes it.
	Dir string
	// ID is the run's id (default: the one stored in Dir, else one made
	// from Dir's name and stored there).
	ID string
	// Eval, if set, scores skills on a split instead of training.
	Eval *Eval
	// RetryFailed dispatches again, on resume, the tasks whose recorded
	// outcome is a failure.
	RetryFailed bool

	// NATSURL is an external NATS server; empty starts an embedded one
	// whose store is Dir/nats.
	NATSURL string
	// NATSOptions are the credentials and TLS settings for NATSURL.
	NATSOptions []nats.Option
	// NATSReplicas is how many servers of a NATS cluster keep the task
	// stream and the run directory (0: runtime.nats_replicas of Run, else
	// their current count, 1 when new).
	NATSReplicas int
	// NATSGiveUp, when positive, stops the run with [ErrNATSLost] once
	// its external NATS has been unreachable this long, at start or later
	// (0: a first connection is retried for a minute, a lost one forever).
	NATSGiveUp time.Duration
	// Endpoint, when set, is the gRPC endpoint the run shares with the
	// other runs of this process (a campaign's cells), and its NATS
	// connection, which must be to NATSURL. GRPCAddr, GRPCServerOptions
	// and Advertise are then unused. Nil: the run serves its own endpoint.
	Endpoint *Endpoint
	// GRPCAddr is where the coordinator's gRPC service listens (default
	// 127.0.0.1:0).
	GRPCAddr string
	// GRPCServerOptions add to the gRPC server's (TLS credentials).
	GRPCServerOptions []grpc.ServerOption
	// Advertise is the gRPC address workers dial (see [HubOptions]).
	Advertise string
	// AckWait is the task consumers' AckWait: 0 takes the fleet's (and
	// queue.DefaultAckWait for consumers this run creates); another value
	// than the fleet's refuses the run.
	AckWait time.Duration
	// Weight is the run's share of bulk work on a shared fleet (default 1).
	Weight float64
	// NoSync skips fsync of the result journal.
	NoSync bool

	// Workers is how many in-process workers [Deps.StartWorkers] starts;
	// negative: runtime.workers of Run. Zero waits for external workers.
	Workers int
	// Concurrency is the tasks each in-process worker runs at once (0:
	// runtime.rollout_concurrency).
	Concurrency int

	// Shared is the store shared with other processes: it holds the run's
	// leader lease, the rollout cache (unless NoRolloutCache) and the
	// run's counters. Nil: none.
	Shared *redisstore.Store
	// NoRolloutCache neither reads nor fills Shared's rollout cache.
	NoRolloutCache bool
	// LeaseWait waits for another coordinator's lease on the run instead
	// of failing with [ErrLocked].
	LeaseWait bool

	// Prices price budget.max_usd (default: the built-in table). Every
	// model of the run must have a price when that budget is set.
	Prices *pricing.Table
	// Stop is consulted with the run's own stop rules (a signal through
	// ctx, a STOP file in the run dir, the budgets) at each phase
	// boundary: an error stops the run with it (wrap trainer.ErrBudget or
	// trainer.ErrStopped).
	Stop func() error
	// Progress receives the run's progress (nil: none).
	Progress *Progress
	// OnStart, if set, is called once the hub and the trainer exist,
	// before the first task: callers attach dashboards and health
	// endpoints there. An error aborts Start.
	OnStart func(*Run) error
	// Logger (default: discard).
	Logger *slog.Logger
}

// ErrNATSLost stops a run whose NATS stayed unreachable past
// [Config.NATSGiveUp].
var ErrNATSLost = errors.New("NATS unreachable past --nats-give-up")

// EvalSplitAll is the [Eval] split that scores every split that has
// items (train, val, test), as SkillOpt's eval_only.py does by default.
const EvalSplitAll = "all"

// Eval asks a run to score skills on one split instead of training: each
// Skills[i] under the name Names[i]. The scores go to eval_summary.json in
// the run dir and to [Result.Eval].
type Eval struct {
	Split  string
	Names  []string
	Skills []string
	// WithBaselines scores the empty skill (no_skill) and the config's
	// seed skill (seed_skill) first.
	WithBaselines bool
}

// Deps are the parts a run is given rather than builds, so that package
// coordinator depends on no worker, backend or command.
type Deps struct {
	// StartWorkers starts in-process workers over the run's NATS and gRPC
	// (the path remote workers use). Required when the run has any.
	StartWorkers func(ctx context.Context, w WorkerSpec) (stop func(), err error)
	// Telemetry sets up tracing and metrics for a run id (nil: none).
	Telemetry func(ctx context.Context, runID string) (*telemetry.Telemetry, func(), error)
	// SimLLM serves the simulated model on loopback and returns its
	// OpenAI-compatible URL; runtime.sim_llm points every role at it.
	SimLLM func(ctx context.Context) (url string, stop func(), err error)
	// Observe, if set, sees every finished task: its stage and how many
	// tasks of that stage finished in this process.
	Observe func(stage string, done int)
}

// WorkerSpec is what [Deps.StartWorkers] starts.
type WorkerSpec struct {
	// N workers, each running Concurrency target tasks and
	// OptimizerConcurrency optimizer tasks at once.
	N, Concurrency, OptimizerConcurrency int
	// MaxDeliver is runtime.max_deliveries.
	MaxDeliver int
	// Connect opens one worker's NATS connection.
	Connect func(name string) (*nats.Conn, error)
	// Coordinator is the hub's gRPC address.
	Coordinator string
	// Telemetry is the run's (nil: none).
	Telemetry *telemetry.Telemetry
}

// Result is what a finished run produced.
type Result struct {
	// Summary is a training run's (nil for an evaluation).
	Summary *trainer.Summary
	// Eval is an evaluation's scores, one per skill in order.
	Eval []trainer.EvalResult
	// Cache is the rollout cache's traffic (nil without one).
	Cache *dispatch.CacheCounts
	// Totals is the spend of every task this process accounted.
	Totals usage.Totals
}

// ErrLocked fails a start whose run another coordinator holds (the run-dir
// lock on this host, or the leader lease in the shared store).
var ErrLocked = errors.New("run in use by another coordinator")

// ConfigError is a start refused for its configuration (a bad config key,
// split directory, benchmark setting or price table).
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

func configErr(err error) error {
	if err == nil {
		return nil
	}
	return &ConfigError{err}
}

// Run is a started run. Its work goes on in the background until
// [Run.Wait] returns.
type Run struct {
	id, dir  string
	settings trainer.Settings
	splits   *bench.Splits
	hub      *Hub
	tr       *trainer.Trainer
	tel      *telemetry.Telemetry
	cache    *dispatch.Cache
	log      *slog.Logger

	// nats is the run's NATS connection and natsGiveUp how long it may be
	// lost before the run stops (0: never).
	nats       *nats.Conn
	natsGiveUp time.Duration

	// cleanup runs in reverse order once the work ends.
	cleanup []func()
	// fatal receives the hub's result-journal failure.
	fatal chan error
	stop  context.CancelCauseFunc
	done  chan struct{}
	res   Result
	err   error
}

// ID is the run's id (stable across resumes).
func (r *Run) ID() string { return r.id }

// Dir is the run directory (absolute).
func (r *Run) Dir() string { return r.dir }

// Settings are the trainer's settings resolved from the config.
func (r *Run) Settings() trainer.Settings { return r.settings }

// Splits are the benchmark's items (nil for a fleet without a trainer).
func (r *Run) Splits() *bench.Splits { return r.splits }

// Hub is the run's dispatch side.
func (r *Run) Hub() *Hub { return r.hub }

// Trainer is the run's trainer (nil for a fleet without one).
func (r *Run) Trainer() *trainer.Trainer { return r.tr }

// Telemetry is the run's tracing and metrics (nil without).
func (r *Run) Telemetry() *telemetry.Telemetry { return r.tel }

// Done is closed once the run has ended and released everything.
func (r *Run) Done() <-chan struct{} { return r.done }

// Stop asks the run to stop: a training run stops at its next phase
// boundary, checkpointed, with trainer.ErrStopped.
func (r *Run) Stop() { r.stop(trainer.ErrStopped) }

// Wait waits for the run to end and returns what it produced. A stopped or
// budget-limited training run returns an error wrapping
// trainer.ErrStopped or trainer.ErrBudget; a run stopped because its run
// dir can no longer be written returns that cause.
func (r *Run) Wait() (Result, error) {
	<-r.done
	return r.res, r.err
}

func (r *Run) add(f func()) { r.cleanup = append(r.cleanup, f) }

func (r *Run) close() {
	for i := len(r.cleanup) - 1; i >= 0; i-- {
		r.cleanup[i]()
	}
	r.cleanup = nil
}

// Start starts a run: it takes the run directory (resolving the run's id,
// locking the directory and, with a shared store, taking the run's leader
// lease before anything is written), loads the splits and settings,
// connects to NATS (or embeds a server), starts the hub and the in-process
// workers, builds the trainer with its stop rules (ctx, a STOP file,
// budgets, cfg.Stop), the lease fence and a disk watchdog, calls
// cfg.OnStart, and returns with the run going on in the background.
// [Run.Wait] returns its result once the run has ended and released
// everything Start took.
//
// Start returns an error wrapping [ErrLocked] when another coordinator
// holds the run, a [*ConfigError] for a configuration the run cannot
// start with, and an error wrapping trainer.ErrStopped when ctx ends while
// it waits for the lease.
func Start(ctx context.Context, cfg Config, deps Deps) (_ *Run, err error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	r := &Run{log: log, done: make(chan struct{}), fatal: make(chan error, 1)}
	defer func() {
		if err != nil {
			r.close()
		}
	}()
	if cfg.Run == nil && cfg.Dir == "" {
		return nil, errors.New("coordinator: a run without a config needs a run directory")
	}
	if r.dir, err = runDir(cfg.Run, cfg.Dir); err != nil {
		return nil, err
	}
	// A run dir this build cannot resume is refused before any of its
	// files changes (the lock rewrites coordinator.lock's holder line);
	// under the lock it is stamped, or migrated, before anything else of
	// the run is written.
	if err := rundir.CheckReadable(r.dir); err != nil {
		return nil, err
	}
	unlock, err := lockRunDir(r.dir)
	if err != nil {
		return nil, err
	}
	r.add(unlock)
	mig, err := rundir.Prepare(r.dir)
	if err != nil {
		return nil, err
	}
	if mig != nil {
		log.Info("run dir migrated", "run_dir", mig.Dir, "from_format", mig.From, "to_format", mig.To)
	}
	if r.id, err = runID(r.dir, cfg.ID); err != nil {
		return nil, err
	}
	// The run's leader lease comes before anything is written to the run.
	var fence func() error
	if cfg.Shared != nil && cfg.Run != nil && cfg.Eval == nil {
		f, stopLease, err := leadRun(ctx, cfg.Shared, r.id, cfg.LeaseWait, log)
		if err != nil {
			return nil, err
		}
		r.add(stopLease)
		fence = f
	}
	var prices *pricing.Table
	if cfg.Run != nil {
		if prices, err = r.prepare(cfg); err != nil {
			return nil, err
		}
	}
	if cfg.Shared != nil && !cfg.NoRolloutCache && cfg.Run != nil {
		r.cache = RolloutCache(&r.settings, store.Degrading(cfg.Shared.Cache(), log))
		// Results still being stored reach the cache before the store closes.
		r.add(r.cache.Flush)
	}
	if err := r.startFleet(ctx, cfg, deps); err != nil {
		return nil, err
	}
	runCtx, stop := r.watch(ctx)
	r.stop = stop
	r.add(func() { stop(nil) })
	if cfg.Run != nil {
		if err := r.startTrainer(runCtx, cfg, deps, prices, fence); err != nil {
			return nil, err
		}
		if cfg.Shared != nil && cfg.Eval == nil {
			r.add(publishCounters(ctx, cfg.Shared.Counters(), r.id, func() usage.Totals { return r.tr.Accounting().Total() }, log))
		}
	}
	if cfg.OnStart != nil {
		if err := cfg.OnStart(r); err != nil {
			return nil, err
		}
	}
	go r.work(ctx, runCtx, cfg)
	return r, nil
}

// prepare writes the resolved config and loads the splits and settings,
// refusing what the run cannot start with; it returns the price table
// budget.max_usd is enforced with.
func (r *Run) prepare(cfg Config) (*pricing.Table, error) {
	c := cfg.Run
	if cfg.Eval == nil {
		if err := c.WriteResolved(filepath.Join(r.dir, "config.yaml")); err != nil {
			return nil, err
		}
	}
	var err error
	if r.splits, err = LoadSplits(c, r.dir); err != nil {
		return nil, err
	}
	if cfg.Eval != nil && cfg.Eval.Split != EvalSplitAll {
		if _, err := r.splits.Get(cfg.Eval.Split); err != nil {
			return nil, configErr(fmt.Errorf("eval: --split: %w (or all)", err))
		}
	}
	if r.settings, err = FromConfig(c, r.id, r.dir); err != nil {
		return nil, configErr(err)
	}
	r.settings.RetryFailed = cfg.RetryFailed
	if cfg.Eval != nil {
		return nil, nil
	}
	// The benchmark's own settings are checked before any call: with
	// in-process workers a bad one is an error; with external workers
	// (which may hold data this host does not) a warning.
	if _, err := registry.New(c.Env.Name, r.settings.BenchConfig); err != nil {
		if cfg.Workers != 0 {
			return nil, configErr(fmt.Errorf("config: %s: %w", c.File, err))
		}
		r.log.Warn("benchmark settings do not work on this host; the workers must have what they need", "benchmark", c.Env.Name, "err", err)
	}
	prices, err := budgetPrices(cfg.Prices, r.settings)
	if err != nil {
		return nil, configErr(err)
	}
	return prices, nil
}

// startFleet starts telemetry, the sim-llm when the config asks for it,
// NATS (embedded or external), the hub and the in-process workers.
func (r *Run) startFleet(ctx context.Context, cfg Config, deps Deps) error {
	log := r.log
	if deps.Telemetry != nil {
		tel, stop, err := deps.Telemetry(ctx, r.id)
		if err != nil {
			return err
		}
		r.tel = tel
		r.add(stop)
	}
	if cfg.Run != nil && cfg.Run.Runtime.SimLLM {
		if deps.SimLLM == nil {
			return errors.New("coordinator: runtime.sim_llm is set but the run was given no sim-llm to start")
		}
		url, stop, err := deps.SimLLM(ctx)
		if err != nil {
			return err
		}
		r.add(stop)
		s := &r.settings
		pointAt(s.Target, url)
		pointAt(s.Optimizer, url)
		pointAt(s.Rewriter, url)
	}

	var connect func(name string) (*nats.Conn, error)
	if cfg.Endpoint != nil && cfg.NATSURL == "" {
		return errors.New("coordinator: a run on a shared endpoint needs the endpoint's NATS (NATSURL)")
	}
	if cfg.NATSURL != "" {
		connect = func(name string) (*nats.Conn, error) {
			return queue.Connect(ctx, cfg.NATSURL, queue.ConnectOptions{Name: name, Logger: log, Extra: cfg.NATSOptions, RetryFor: cfg.NATSGiveUp})
		}
	} else {
		embedded, err := queue.StartEmbedded(queue.EmbeddedOptions{StoreDir: filepath.Join(r.dir, "nats")})
		if err != nil {
			return err
		}
		r.add(embedded.Shutdown)
		connect = func(name string) (*nats.Conn, error) { return embedded.Connect(name) }
	}
	// A run on a shared endpoint uses the endpoint's NATS connection: one
	// per process, not per run.
	var nc *nats.Conn
	var err error
	if cfg.Endpoint != nil {
		nc = cfg.Endpoint.nc
	} else {
		if nc, err = connect("skillfleet-coordinator"); err != nil {
			return err
		}
		r.add(nc.Close)
	}
	if cfg.NATSURL != "" {
		r.nats, r.natsGiveUp = nc, cfg.NATSGiveUp
	}

	var ln net.Listener
	if cfg.Endpoint == nil {
		addr := cfg.GRPCAddr
		if addr == "" {
			addr = "127.0.0.1:0"
		}
		if ln, err = net.Listen("tcp", addr); err != nil {
			return fmt.Errorf("listen %s: %w", addr, err)
		}
	}
	// A run without a config (a replay fleet) takes the fleet consumers'
	// deliveries.
	runtime := config.Runtime{OptimizerConcurrency: 1}
	if cfg.Run != nil {
		runtime = cfg.Run.Runtime
	}
	replicas := cfg.NATSReplicas
	if replicas == 0 {
		replicas = runtime.NATSReplicas
	}
	ackWait := cfg.AckWait
	ho := HubOptions{
		OnFatal: func(err error) {
			select {
			case r.fatal <- err:
			default:
			}
		},
		Logger: log, NC: nc, RunDir: r.dir, RunID: r.id, Endpoint: cfg.Endpoint, GRPCListener: ln, NoSync: cfg.NoSync,
		GRPCServerOptions: append(append([]grpc.ServerOption(nil), cfg.GRPCServerOptions...), r.tel.GRPCServerOptions()...),
		Consumer:          queue.ConsumerOptions{MaxDeliver: runtime.MaxDeliveries, AckWait: ackWait},
		Cache:             r.cache, Advertise: cfg.Advertise, Weight: cfg.Weight, Replicas: replicas,
	}
	if r.tel != nil {
		ho.Propagator, ho.Meters = r.tel.Propagator, r.tel.Meters
	}
	hub, err := NewHub(ctx, ho)
	if err != nil {
		if ln != nil {
			_ = ln.Close()
		}
		return err
	}
	if r.tel != nil && cfg.Endpoint == nil {
		// The run's own endpoint traces the recording of its results (a
		// shared endpoint is traced by whoever made it).
		hub.RPC.SetTracerProvider(r.tel.TracerProvider)
	}
	hubCtx, hubStop := context.WithCancel(context.WithoutCancel(ctx))
	hubDone := make(chan error, 1)
	go func() { hubDone <- hub.Run(hubCtx) }()
	r.add(func() {
		hubStop()
		if err := <-hubDone; err != nil {
			log.Warn("hub stopped with an error", "err", err)
		}
	})
	r.hub = hub

	workers := cfg.Workers
	if workers < 0 {
		workers = runtime.Workers
	}
	conc := cfg.Concurrency
	if conc <= 0 {
		conc = runtime.RolloutConcurrency
	}
	if workers > 0 {
		if deps.StartWorkers == nil {
			return errors.New("coordinator: in-process workers asked for, but the run was given no way to start them")
		}
		stop, err := deps.StartWorkers(ctx, WorkerSpec{
			N: workers, Concurrency: conc, OptimizerConcurrency: runtime.OptimizerConcurrency, MaxDeliver: runtime.MaxDeliveries,
			Connect: connect, Coordinator: hub.Addr(), Telemetry: r.tel,
		})
		if err != nil {
			return err
		}
		r.add(stop)
	} else {
		log.Info("waiting for external workers", "grpc_addr", hub.Addr())
	}
	return nil
}

// startTrainer builds the trainer over the hub with its progress, stop
// rules (consulted with ctx, the run's context), fence and telemetry.
func (r *Run) startTrainer(ctx context.Context, cfg Config, deps Deps, prices *pricing.Table, fence func() error) error {
	prog := cfg.Progress
	if prog == nil {
		prog = NewProgress(nil, false)
	}
	tr, err := NewTrainer(r.settings, r.hub, r.splits, r.log, prog)
	if err != nil {
		return err
	}
	r.tr = tr
	if r.tel != nil {
		// An evaluation is traced like a training run (a campaign's
		// no-skill measurement is part of its cell's trace).
		tr.SetTelemetry(r.tel.Tracer, r.tel.Meters)
	}
	if cfg.Eval != nil {
		return nil
	}
	prog.SetTokens(func() int64 { return tr.Accounting().Total().Tokens() })
	if deps.Observe != nil {
		prog.Observe(deps.Observe)
	}
	check := stopRules(ctx, r.dir, r.settings, tr, prices)
	if extra := cfg.Stop; extra != nil {
		own := check
		check = func() error {
			if err := own(); err != nil {
				return err
			}
			return extra()
		}
	}
	tr.SetStopCheck(check)
	if fence != nil {
		tr.SetFence(fence)
	}
	return nil
}

// work runs the run to its end, releases what Start took and reports.
func (r *Run) work(ctx, runCtx context.Context, cfg Config) {
	defer close(r.done)
	var err error
	switch {
	case cfg.Run == nil:
		<-runCtx.Done()
	case cfg.Eval != nil:
		r.res.Eval, err = r.evaluate(runCtx, cfg.Eval)
	default:
		r.res.Summary, err = r.tr.Run(runCtx)
	}
	cause := context.Cause(runCtx)
	r.stop(nil)
	if r.cache != nil {
		c := r.cache.Counts()
		r.res.Cache = &c
	}
	if r.tr != nil {
		r.res.Totals = r.tr.Accounting().Total()
	}
	r.close()
	switch {
	case err != nil && errors.Is(cause, ErrNATSLost):
		r.err = fmt.Errorf("run dir %s: %w; the run is checkpointed: re-run the same command to resume once NATS is back", r.dir, cause)
	case err != nil && cause != nil && ctx.Err() == nil && !errors.Is(cause, trainer.ErrStopped):
		r.err = fmt.Errorf("run dir %s: %w; the run is checkpointed: free space and re-run the same command to resume", r.dir, cause)
	case err != nil && errors.Is(cause, trainer.ErrStopped) && !errors.Is(err, trainer.ErrStopped):
		r.err = fmt.Errorf("%w (%w)", trainer.ErrStopped, err)
	default:
		r.err = err
	}
}

// watch returns ctx cancelled, with the reason as its cause, when the run
// can no longer record what it does — the hub's result journal failed, or
// the run dir's file system (which also holds the embedded NATS store) has
// less than minFreeBytes left — or when Stop is called. The trainer's
// waits all end on ctx, so the run stops with that reason instead of
// waiting for results or tasks that can no longer be written.
func (r *Run) watch(ctx context.Context) (context.Context, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		var lost time.Time // since when NATS has been unreachable
		for {
			if err := diskSpaceLeft(r.dir); err != nil {
				cancel(err)
				return
			}
			if r.natsGiveUp > 0 {
				switch {
				case r.nats.IsConnected():
					lost = time.Time{}
				case lost.IsZero():
					lost = time.Now()
				case time.Since(lost) >= r.natsGiveUp:
					cancel(ErrNATSLost)
					return
				}
			}
			select {
			case err := <-r.fatal:
				cancel(fmt.Errorf("result journal: %w", err))
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}()
	return ctx, cancel
}

// evaluate scores e's skills on its split, or on each split that has
// items for [EvalSplitAll]: then each split's stages are named for it
// (eval_skill_val, so every split keeps its own per-item results) and
// eval_summary.json holds every split's scores.
func (r *Run) evaluate(ctx context.Context, e *Eval) ([]trainer.EvalResult, error) {
	names, skills := e.Names, e.Skills
	if e.WithBaselines {
		names = append([]string{"no_skill", "seed_skill"}, names...)
		skills = append([]string{"", r.settings.SkillInit}, skills...)
	}
	if e.Split != EvalSplitAll {
		return r.tr.Evaluate(ctx, e.Split, names, skills)
	}
	var out []trainer.EvalResult
	for _, split := range []string{bench.SplitTrain, bench.SplitVal, bench.SplitTest} {
		if items, _ := r.splits.Get(split); len(items) == 0 {
			continue
		}
		named := make([]string, len(names))
		for i, n := range names {
			named[i] = n + "_" + split
		}
		res, err := r.tr.Evaluate(ctx, split, named, skills)
		if err != nil {
			return nil, err
		}
		for i := range res {
			res[i].Name = names[i]
		}
		out = append(out, res...)
	}
	if len(out) == 0 {
		return nil, errors.New("eval: --split all: no split has items")
	}
	if err := atomicfile.WriteJSON(filepath.Join(r.dir, "eval_summary.json"), out); err != nil {
		return nil, err
	}
	return out, nil
}
