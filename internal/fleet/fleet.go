// Package fleet assembles this binary's workers and reads its fleet: the
// task executor over the model backends, the benchmarks and the prompts;
// in-process workers for a run ([coordinator.Deps.StartWorkers]); a worker
// process ([RunProcess]); the rate limits workers report, and the fleet
// status the dashboard shows ([Status]).
package fleet

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/registry"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
	"github.com/skillfleet/skillfleet/pkg/telemetry"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/worker"
)

// ModelFactory builds a model for a task's spec: the backend, wrapped with
// retries (backends' table, sim included), then with telemetry (tel may be
// nil): a GenAI span and metrics per call.
//
// limiter, shared by every model the factory builds (and by every factory
// given the same one), holds the rate limits and adaptive concurrency of
// each (backend, endpoint, model).
func ModelFactory(tel *telemetry.Telemetry, limiter *backends.Limiter) func(ctx context.Context, spec *pb.ModelSpec) (llm.Model, error) {
	return func(ctx context.Context, spec *pb.ModelSpec) (llm.Model, error) {
		m, err := backends.New(ctx, backends.SpecFromProto(spec), backends.Deps{Limiter: limiter})
		if err != nil || tel == nil {
			return m, err
		}
		return tel.WrapModel(m, backends.Provider(spec.GetBackend())), nil
	}
}

// executor runs tasks with the backends, every benchmark (by name) and the
// optimizer prompts with every benchmark's analyst notes.
func executor(log *slog.Logger, tel *telemetry.Telemetry, limiter *backends.Limiter) *worker.Executor {
	ps := prompts.New(nil)
	for name, notes := range registry.AnalystNotes() {
		ps.WithAnalystNotes(name, notes)
	}
	newEnv := func(name string, cfg []byte) (bench.Env, error) { return registry.New(name, json.RawMessage(cfg)) }
	return worker.NewExecutor(worker.ExecutorDeps{Logger: log, NewModel: ModelFactory(tel, limiter), NewEnv: newEnv, Prompts: ps})
}

// traced adds what a worker needs to trace its tasks (tel may be nil).
func traced(tel *telemetry.Telemetry, d worker.Deps) worker.Deps {
	if tel != nil {
		d.Propagator, d.Tracer, d.Meters = tel.Propagator, tel.Tracer, tel.Meters
	}
	return d
}

// StartLocal runs w.N workers in this process over the same NATS and gRPC
// path remote workers use: the in-process workers of a run or a campaign.
// They serve every run on the NATS server, and report to w.Coordinator
// when it is set (else to each task's run, found in the run directory).
// stop ends them and waits for them.
func StartLocal(ctx context.Context, log *slog.Logger, w coordinator.WorkerSpec) (stop func(), err error) {
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	var closers []func()
	stop = func() {
		cancel()
		wg.Wait()
		for _, c := range closers {
			c()
		}
	}
	// In-process workers share one limiter: the limits of a (backend,
	// endpoint, model) hold for the whole process.
	limiter := backends.NewLimiter(nil, nil)
	dial := func(addr string) (*grpc.ClientConn, error) {
		return worker.Dial(addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, w.Telemetry.GRPCDialOptions()...)...)
	}
	for i := range w.N {
		nc, err := w.Connect("skillfleet-worker")
		if err != nil {
			stop()
			return nil, err
		}
		closers = append(closers, nc.Close)
		cons, err := worker.Consumers(wctx, nc)
		if err != nil {
			stop()
			return nil, err
		}
		runs, err := worker.WatchRuns(wctx, nc, 0)
		if err != nil {
			stop()
			return nil, err
		}
		wg.Go(func() { _ = runs.Run(wctx) })
		x := executor(log, w.Telemetry, limiter)
		wk := worker.New(worker.Config{ID: fmt.Sprintf("local-%d-%d", os.Getpid(), i), Concurrency: w.Concurrency, OptimizerConcurrency: w.OptimizerConcurrency, MaxDeliver: w.MaxDeliver, DrainTimeout: 5 * time.Second},
			traced(w.Telemetry, worker.Deps{Logger: log, NC: nc, Consumers: cons, Handler: x, Limits: limiterStatus(limiter),
				Coordinators: worker.CoordinatorsConfig{Override: w.Coordinator, Runs: runs.Table, Dial: dial}}))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := wk.Run(wctx); err != nil {
				log.Error("worker stopped", "err", err)
			}
			// The benchmarks' connections end with the worker.
			if err := x.Close(); err != nil {
				log.Warn("worker stopped", "err", err)
			}
		}()
	}
	return stop, nil
}

// Deps are a run's in-process workers and its simulated model
// (runtime.sim_llm); the caller adds telemetry.
func Deps(log *slog.Logger) coordinator.Deps {
	return coordinator.Deps{
		StartWorkers: func(ctx context.Context, w coordinator.WorkerSpec) (func(), error) { return StartLocal(ctx, log, w) },
		SimLLM: func(ctx context.Context) (string, func(), error) {
			sctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
			m := sim.NewServer(sim.New(sim.Options{}), sim.ServerOptions{})
			bound, wait, err := sim.ListenAndServe(sctx, "127.0.0.1:0", m)
			if err != nil {
				cancel()
				return "", nil, fmt.Errorf("sim-llm: %w", err)
			}
			url := "http://" + bound + "/v1"
			log.Info("sim-llm (test double) listening", "url", url)
			return url, func() { cancel(); _ = wait() }, nil
		},
	}
}
