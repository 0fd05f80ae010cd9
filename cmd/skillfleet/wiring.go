package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/skillfleet/skillfleet/backends"
	simmodel "github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/registry"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
	"github.com/skillfleet/skillfleet/pkg/telemetry"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/worker"
)

// modelFactory builds a model for a task's spec: the backend, wrapped with
// retries (backends' table, sim included), then with telemetry: a
// GenAI span and metrics per call.
//
// limiter, shared by every model the factory builds (and by every factory
// given the same one), holds the rate limits and adaptive concurrency of
// each (backend, endpoint, model).
func modelFactory(tel *telemetry.Telemetry, limiter *backends.Limiter) func(spec *pb.ModelSpec) (llm.Model, error) {
	return func(spec *pb.ModelSpec) (llm.Model, error) {
		m, err := backends.New(backends.SpecFromProto(spec), backends.Deps{Limiter: limiter})
		if err != nil || tel == nil {
			return m, err
		}
		return tel.WrapModel(m, backends.Provider(spec.GetBackend())), nil
	}
}

func newEnv(name string, cfg []byte) (bench.Env, error) {
	return registry.New(name, json.RawMessage(cfg))
}

// startSimLLM serves the simulated model on a loopback port.
func startSimLLM(ctx context.Context, log *slog.Logger) (url string, stop func(), err error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, fmt.Errorf("sim-llm: %w", err)
	}
	srv := &http.Server{Handler: simmodel.NewServer(simmodel.New(simmodel.Options{}), simmodel.ServerOptions{}), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("sim-llm stopped", "err", err)
		}
	}()
	url = "http://" + ln.Addr().String() + "/v1"
	log.Info("sim-llm (test double) listening", "url", url)
	return url, func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}, nil
}

type workerSetup struct {
	nc func() (*nats.Conn, error)
	// coordinator, when set, is where every result goes; otherwise each
	// task's run is looked up in the run directory.
	coordinator    string
	n              int
	tel            *telemetry.Telemetry
	concurrency    int
	optConcurrency int
	maxDeliver     int
}

// startLocalWorkers runs n workers in this process over the same NATS and
// gRPC path remote workers use. They serve every run on the NATS server.
func startLocalWorkers(ctx context.Context, log *slog.Logger, ws workerSetup) (stop func(), err error) {
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
	for i := range ws.n {
		nc, err := ws.nc()
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
		x := worker.NewExecutor(worker.ExecutorDeps{Logger: log, NewModel: modelFactory(ws.tel, limiter), NewEnv: newEnv, Prompts: promptSet()})
		dial := func(addr string) (*grpc.ClientConn, error) {
			return worker.Dial(addr, append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, grpcClientTracing(ws.tel)...)...)
		}
		w := worker.New(worker.Config{ID: fmt.Sprintf("local-%d-%d", os.Getpid(), i), Concurrency: ws.concurrency, OptimizerConcurrency: ws.optConcurrency, MaxDeliver: ws.maxDeliver, DrainTimeout: 5 * time.Second},
			workerTracing(ws.tel, worker.Deps{Logger: log, NC: nc, Consumers: cons, Handler: x, Limits: limiterStatus(limiter),
				Coordinators: worker.CoordinatorsConfig{Override: ws.coordinator, Runs: runs, Dial: dial}}))
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := w.Run(wctx); err != nil {
				log.Error("worker stopped", "err", err)
			}
		}()
	}
	return stop, nil
}

// promptSet is the optimizer prompts with every benchmark's analyst notes.
func promptSet() *prompts.Set {
	s := prompts.New(nil)
	for name, notes := range registry.AnalystNotes() {
		s.WithAnalystNotes(name, notes)
	}
	return s
}
