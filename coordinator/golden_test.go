package coordinator_test

import (
	"bytes"
	"context"
	"flag"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	simmodel "github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/registry"
	simbench "github.com/skillfleet/skillfleet/pkg/bench/sim"
	"github.com/skillfleet/skillfleet/pkg/config"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/worker"
)

var updateGolden = flag.Bool("update-golden", false, "rewrite coordinator/testdata/golden from this run")

// preset names a config and the sim world it trains on.
type preset struct {
	config, skill, world string
	worldSeed            int64
}

var (
	demoPreset  = preset{"demo.yaml", "sim_demo_seed.md", "demo", 7}
	paperPreset = preset{"sim_paper.yaml", "sim_paper_seed.md", "paper", 7}
)

// fleet is one in-process NATS server shared by the runs of a test.
// hubDir, if set, holds the hub's task journal instead of the run dir.
type fleet struct{ url, hubDir string }

func newFleet(t *testing.T) *fleet { return &fleet{url: queuetest.Start(t).URL()} }

// runPreset trains p in-process (sim model at zero latency, one worker)
// into a fresh run dir under t and returns the dir and the run's result.
func (f *fleet) runPreset(t *testing.T, p preset, m llm.Model, sets ...string) (string, *coordinator.Summary, error) {
	t.Helper()
	return f.runPresetIn(t, t.TempDir(), p, m, sets...)
}

func (f *fleet) runPresetIn(t *testing.T, runDir string, p preset, m llm.Model, sets ...string) (string, *coordinator.Summary, error) {
	t.Helper()
	root, _ := filepath.Abs("..")
	sets = append([]string{"env.skill_init=" + filepath.Join(root, "configs", "skills", p.skill), "runtime.sim_llm=false"}, sets...)
	cfg, err := config.Load(filepath.Join(root, "configs", p.config), sets)
	if err != nil {
		t.Fatal(err)
	}
	if m == nil {
		m = simmodel.New(simmodel.Options{})
	}
	splitDir := filepath.Join(t.TempDir(), "splits")
	if err := simbench.WriteSplits(splitDir, p.world, p.worldSeed); err != nil {
		t.Fatal(err)
	}
	splits, err := bench.LoadSplitDir(splitDir, bench.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	runID := "r" + filepath.Base(runDir)
	s, err := coordinator.FromConfig(cfg, runID, runDir)
	if err != nil {
		return runDir, nil, err
	}
	s.Target.Backend, s.Optimizer.Backend, s.Rewriter.Backend = "scripted", "scripted", "scripted"

	nc, err := nats.Connect(f.url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	hubDir := runDir
	if f.hubDir != "" {
		hubDir = f.hubDir
	}
	hub, err := coordinator.NewHub(ctx, coordinator.HubOptions{NC: nc, RunDir: hubDir, RunID: runID, GRPCListener: ln, NoSync: true,
		Consumer: queue.ConsumerOptions{MaxDeliver: cfg.Runtime.MaxDeliveries}})
	if err != nil {
		t.Fatal(err)
	}
	hubDone := make(chan error, 1)
	hctx, hstop := context.WithCancel(ctx)
	go func() { hubDone <- hub.Run(hctx) }()
	defer func() { hstop(); <-hubDone }()

	wnc, err := nats.Connect(f.url)
	if err != nil {
		t.Fatal(err)
	}
	defer wnc.Close()
	cc, err := worker.Dial(hub.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	cons, err := worker.Consumers(ctx, wnc)
	if err != nil {
		t.Fatal(err)
	}
	client := pb.NewCoordinatorClient(cc)
	x := worker.NewExecutor(worker.ExecutorDeps{Client: client, Prompts: prompts.New(nil),
		NewModel: func(*pb.ModelSpec) (llm.Model, error) { return m, nil },
		NewEnv:   func(name string, c []byte) (bench.Env, error) { return registry.New(name, c) }})
	w := worker.New(worker.Config{Concurrency: 64, DrainTimeout: time.Second, MaxDeliver: cfg.Runtime.MaxDeliveries}, worker.Deps{NC: wnc, Consumers: cons, Client: client, Handler: x})
	wctx, wstop := context.WithCancel(ctx)
	wdone := make(chan struct{})
	go func() { _ = w.Run(wctx); close(wdone) }()
	defer func() { wstop(); <-wdone }()

	tr, err := coordinator.NewTrainer(s, hub, splits, nil, nil)
	if err != nil {
		return runDir, nil, err
	}
	sum, err := tr.Run(ctx)
	return runDir, sum, err
}

// TestGoldenDecisions pins the decisions: events.jsonl and best_skill.md
// of the demo and of the paper preset (sim model in-process, zero
// latency) must equal the recorded goldens byte for byte. A change that
// is meant to change decisions regenerates them with
//
//	go test ./coordinator -run TestGoldenDecisions -update-golden
func TestGoldenDecisions(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the demo and the paper preset")
	}
	f := newFleet(t)
	for _, c := range []struct {
		name string
		p    preset
	}{{"demo", demoPreset}, {"sim_paper", paperPreset}} {
		t.Run(c.name, func(t *testing.T) {
			dir, _, err := f.runPreset(t, c.p, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, file := range []string{"events.jsonl", "best_skill.md"} {
				got, err := os.ReadFile(filepath.Join(dir, file))
				if err != nil {
					t.Fatal(err)
				}
				golden := filepath.Join("testdata", "golden", c.name+"."+file)
				if *updateGolden {
					if err := os.WriteFile(golden, got, 0o644); err != nil {
						t.Fatal(err)
					}
					continue
				}
				want, err := os.ReadFile(golden)
				if err != nil {
					t.Fatalf("%v (record it with -update-golden)", err)
				}
				if !bytes.Equal(got, want) {
					t.Errorf("%s differs from %s:\n got: %s\nwant: %s", file, golden, firstDiff(got, want), firstDiff(want, got))
				}
			}
		})
	}
}

// firstDiff is the line of a where a and b first differ.
func firstDiff(a, b []byte) string {
	al, bl := bytes.Split(a, []byte("\n")), bytes.Split(b, []byte("\n"))
	for i := range al {
		if i >= len(bl) || !bytes.Equal(al[i], bl[i]) {
			return string(al[i])
		}
	}
	return "(prefix of the other)"
}
