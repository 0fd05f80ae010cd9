package coordinator_test

import (
	"bytes"
	"cmp"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	simmodel "github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/coordinator/fleettest"
	"github.com/skillfleet/skillfleet/coordinator/trainer/memdispatch"
	"github.com/skillfleet/skillfleet/pkg/bench"
	simbench "github.com/skillfleet/skillfleet/pkg/bench/sim"
	"github.com/skillfleet/skillfleet/pkg/config"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/queue"
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

// fleet runs presets in-process. By default its trainers dispatch to an
// in-memory executor (memdispatch: no NATS, no gRPC); a NATS fleet runs
// them the production way, over one embedded nats-server shared by the
// runs of a test, a hub and a worker. hubDir, if set, holds a NATS run's
// task journal instead of the run dir.
type fleet struct {
	ns     *queue.Embedded
	hubDir string
}

// newFleet runs presets in memory.
func newFleet(*testing.T) *fleet { return &fleet{} }

// newNATSFleet runs presets through NATS, a hub and a worker.
func newNATSFleet(t *testing.T) *fleet { return &fleet{ns: fleettest.NATS(t)} }

// runPreset trains p in-process (sim model at zero latency) into a fresh
// run dir under t and returns the dir and the run's result.
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
	splits := presetSplits(t, p)
	runID := "r" + filepath.Base(runDir)
	s, err := coordinator.FromConfig(cfg, runID, runDir)
	if err != nil {
		return runDir, nil, err
	}
	s.Target.Backend, s.Optimizer.Backend, s.Rewriter.Backend = "scripted", "scripted", "scripted"

	var tr *coordinator.Trainer
	if f.ns == nil {
		tr, err = coordinator.NewTrainerWith(s, memdispatch.NewModel(m, 64), nil, splits, nil, nil)
	} else {
		hubDir := cmp.Or(f.hubDir, runDir)
		hub := fleettest.StartHub(t, f.ns, coordinator.HubOptions{RunDir: hubDir, RunID: runID,
			Consumer: queue.ConsumerOptions{MaxDeliver: cfg.Runtime.MaxDeliveries}})
		defer hub.Stop()
		stopWorker := fleettest.StartWorker(t, f.ns, hub.Addr(), worker.Config{Concurrency: 64, MaxDeliver: cfg.Runtime.MaxDeliveries}, fleettest.Executor(m))
		defer stopWorker()
		tr, err = coordinator.NewTrainer(s, hub.Hub, splits, nil, nil)
	}
	if err != nil {
		return runDir, nil, err
	}
	sum, err := tr.Run(t.Context())
	return runDir, sum, err
}

// splitCache holds each preset's sim world, written and parsed once per
// test binary (it was a fifth of a paper run's CPU when every run did it).
// The trainer only reads its splits; each run still gets its own slices.
var splitCache struct {
	mu sync.Mutex
	m  map[preset]*bench.Splits
}

// presetSplits are p's train, selection and test items, as
// bench.LoadSplitDir reads them from the files simbench.WriteSplits writes.
func presetSplits(t *testing.T, p preset) *bench.Splits {
	t.Helper()
	splitCache.mu.Lock()
	defer splitCache.mu.Unlock()
	s, ok := splitCache.m[p]
	if !ok {
		dir := filepath.Join(t.TempDir(), "splits")
		if err := simbench.WriteSplits(dir, p.world, p.worldSeed); err != nil {
			t.Fatal(err)
		}
		var err error
		if s, err = bench.LoadSplitDir(dir, bench.LoadOptions{}); err != nil {
			t.Fatal(err)
		}
		if splitCache.m == nil {
			splitCache.m = map[preset]*bench.Splits{}
		}
		splitCache.m[p] = s
	}
	return &bench.Splits{Train: slices.Clone(s.Train), Val: slices.Clone(s.Val), Test: slices.Clone(s.Test), Files: maps.Clone(s.Files)}
}

// TestGoldenDecisions pins the decisions: events.jsonl and best_skill.md
// of the demo and of the paper preset (sim model in-process, zero
// latency) must equal the recorded goldens byte for byte, both with the
// in-memory dispatcher and the production path (NATS, hub, worker). A
// change that is meant to change decisions regenerates them with
//
//	go test ./coordinator -run TestGoldenDecisions -update-golden
func TestGoldenDecisions(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the demo and the paper preset")
	}
	t.Parallel()
	for _, path := range []string{"memory", "nats"} {
		t.Run(path, func(t *testing.T) {
			t.Parallel()
			f := newFleet(t)
			if path == "nats" {
				f = newNATSFleet(t)
			}
			for _, c := range []struct {
				name string
				p    preset
			}{{"demo", demoPreset}, {"sim_paper", paperPreset}} {
				t.Run(c.name, func(t *testing.T) {
					dir, _, err := f.runPreset(t, c.p, nil)
					if err != nil {
						t.Fatal(err)
					}
					checkGolden(t, dir, c.name, path == "memory" && *updateGolden)
				})
			}
		})
	}
}

// checkGolden compares a run dir's decisions with the goldens of name
// (or records them when update is set).
func checkGolden(t *testing.T, dir, name string, update bool) {
	t.Helper()
	for _, file := range []string{"events.jsonl", "best_skill.md"} {
		got, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", "golden", name+"."+file)
		if update {
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
