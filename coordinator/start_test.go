package coordinator_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	simmodel "github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/internal/fleettest"
	"github.com/skillfleet/skillfleet/pkg/config"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/worker"
)

// demoConfig is the demo preset as Start gets it from a command: the sim
// model is served by the test's workers, not by a sim-llm.
func demoConfig(t *testing.T, sets ...string) *config.Config {
	t.Helper()
	root := fleettest.RepoRoot(t)
	sets = append([]string{"env.skill_init=" + filepath.Join(root, "configs", "skills", "sim_demo_seed.md"), "runtime.sim_llm=false"}, sets...)
	cfg, err := config.Load(filepath.Join(root, "configs", "demo.yaml"), sets)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// simWorkers starts in-process workers that answer every task with the
// sim model, over the run's NATS and gRPC.
func simWorkers(ctx context.Context, w coordinator.WorkerSpec) (func(), error) {
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	for range w.N {
		nc, err := w.Connect("test-worker")
		if err != nil {
			stop()
			return nil, err
		}
		stops = append(stops, nc.Close)
		cc, err := worker.Dial(w.Coordinator)
		if err != nil {
			stop()
			return nil, err
		}
		stops = append(stops, func() { _ = cc.Close() })
		wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		cons, err := worker.Consumers(wctx, nc)
		if err != nil {
			cancel()
			stop()
			return nil, err
		}
		wk := worker.New(worker.Config{Concurrency: 64, MaxDeliver: w.MaxDeliver, DrainTimeout: time.Second},
			worker.Deps{NC: nc, Consumers: cons, Client: pb.NewCoordinatorClient(cc), Handler: fleettest.Executor(simmodel.New(simmodel.Options{}))})
		done := make(chan struct{})
		go func() { _ = wk.Run(wctx); close(done) }()
		stops = append(stops, func() { cancel(); <-done })
	}
	return stop, nil
}

// TestStartTrainsTheGoldenDemo: a run started with Start (embedded NATS,
// hub, in-process workers) makes the golden decisions, and a run stopped
// with Run.Stop mid-run resumes to the same ones. While a run holds its
// directory a second Start on it is refused with ErrLocked.
func TestStartTrainsTheGoldenDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the demo")
	}
	dir := filepath.Join(t.TempDir(), "run")
	stopAt := make(chan struct{})
	stopped := false
	deps := coordinator.Deps{StartWorkers: simWorkers, Observe: func(stage string, done int) {
		if strings.HasPrefix(stage, "gate") && done >= 3 && !stopped {
			stopped = true
			close(stopAt)
		}
	}}
	cfg := coordinator.Config{Run: demoConfig(t), Dir: dir, Workers: 1, NoSync: true}
	r, err := coordinator.Start(t.Context(), cfg, deps)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := coordinator.Start(t.Context(), cfg, coordinator.Deps{StartWorkers: simWorkers}); !errors.Is(err, coordinator.ErrLocked) {
		t.Errorf("a second Start on a run dir in use: got %v, want ErrLocked", err)
	}
	select {
	case <-stopAt:
		r.Stop()
	case <-r.Done():
	}
	if _, err := r.Wait(); !errors.Is(err, trainer.ErrStopped) {
		t.Fatalf("stopped run: got %v, want ErrStopped", err)
	}

	r, err = coordinator.Start(t.Context(), cfg, coordinator.Deps{StartWorkers: simWorkers})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Wait()
	if err != nil {
		t.Fatal(err)
	}
	if res.Summary == nil || res.Totals.Calls == 0 {
		t.Errorf("result %+v: want a summary and the calls made", res)
	}
	checkGolden(t, dir, "demo", false)
}

// TestStartEvaluates scores skills on a split instead of training.
func TestStartEvaluates(t *testing.T) {
	cfg := coordinator.Config{Run: demoConfig(t), Dir: t.TempDir(), Workers: 1, NoSync: true,
		Eval: &coordinator.Eval{Split: "val", Names: []string{"skill"}, Skills: []string{"# A skill\n"}, WithBaselines: true}}
	r, err := coordinator.Start(t.Context(), cfg, coordinator.Deps{StartWorkers: simWorkers})
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Wait()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range res.Eval {
		names = append(names, e.Name)
	}
	if len(names) != 3 || names[0] != "no_skill" || names[1] != "seed_skill" || names[2] != "skill" {
		t.Errorf("evaluated %v, want [no_skill seed_skill skill]", names)
	}
}

// TestStartFleetWithoutConfig starts NATS, the hub and no trainer: the
// caller drives tasks through the hub and stops it.
func TestStartFleetWithoutConfig(t *testing.T) {
	r, err := coordinator.Start(t.Context(), coordinator.Config{Dir: t.TempDir(), ID: "fleet-1", NoSync: true}, coordinator.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Hub() == nil || r.Trainer() != nil || r.ID() != "fleet-1" {
		t.Errorf("hub %v, trainer %v, id %q: want a hub, no trainer, id fleet-1", r.Hub(), r.Trainer(), r.ID())
	}
	r.Stop()
	if _, err := r.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestStartRefusesABadRunConfig: a benchmark read from files with no
// split directory is a ConfigError naming the key, and nothing is left
// running or locked.
func TestStartRefusesABadRunConfig(t *testing.T) {
	dir := t.TempDir()
	cfg := coordinator.Config{Run: demoConfig(t, "env.name=searchqa"), Dir: dir, Workers: 1}
	_, err := coordinator.Start(t.Context(), cfg, coordinator.Deps{StartWorkers: simWorkers})
	var ce *coordinator.ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("got %v, want a ConfigError", err)
	}
	unlock, err := coordinator.LockRunDir(dir)
	if err != nil {
		t.Fatalf("the refused start left the run dir locked: %v", err)
	}
	unlock()
}
