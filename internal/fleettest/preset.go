package fleettest

import (
	"cmp"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	simmodel "github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/coordinator/trainer"
	"github.com/skillfleet/skillfleet/internal/memdispatch"
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/config"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/worker"
)

// Preset names a config under configs/, its seed skill under
// configs/skills/, and the sim world (and world seed) it trains on.
type Preset struct {
	Config, Skill, World string
	WorldSeed            int64
}

// The presets the coordinator's and the trainer's tests train.
var (
	Demo  = Preset{"demo.yaml", "sim_demo_seed.md", "demo", 7}
	Paper = Preset{"sim_paper.yaml", "sim_paper_seed.md", "paper", 7}
)

// Runner trains presets in-process with the sim model at zero latency. By
// default its trainers dispatch to an in-memory executor (memdispatch: no
// NATS, no gRPC); with NATS set they run the production way, through a hub
// and a worker on that server (shared by the runs of a test).
type Runner struct {
	// NATS, if set, carries the runs' tasks.
	NATS *queue.Embedded
	// HubDir, if set, holds a NATS run's task journal instead of the run dir.
	HubDir string
	// Wrap, if set, wraps the in-memory dispatcher (runs without NATS), for
	// tests that watch what the trainer submits.
	Wrap func(trainer.Dispatcher) trainer.Dispatcher
}

// Run trains p into runDir with model m (nil: the sim model) and config
// overrides sets. A config that does not load fails t; settings the
// coordinator refuses (FromConfig), a run dir that cannot be opened and
// the run's own error are returned. Wave hedging is off unless sets turn
// it on: a copy's calls would make the counts of a loaded test machine's
// runs differ (never their decisions).
func (r *Runner) Run(t *testing.T, runDir string, p Preset, m llm.Model, sets ...string) (*trainer.Summary, error) {
	t.Helper()
	root := RepoRoot(t)
	sets = append([]string{"env.skill_init=" + filepath.Join(root, "configs", "skills", p.Skill), "runtime.sim_llm=false", "runtime.hedge=false"}, sets...)
	cfg, err := config.Load(filepath.Join(root, "configs", p.Config), sets)
	if err != nil {
		t.Fatal(err)
	}
	if m == nil {
		m = simmodel.New(simmodel.Options{})
	}
	splits := Splits(t, p)
	runID := "r" + filepath.Base(runDir)
	s, err := coordinator.FromConfig(cfg, runID, runDir)
	if err != nil {
		return nil, err
	}
	s.Target.Backend, s.Optimizer.Backend, s.Rewriter.Backend = "scripted", "scripted", "scripted"

	var tr *trainer.Trainer
	if r.NATS == nil {
		var d trainer.Dispatcher = memdispatch.NewModel(m, 64)
		if r.Wrap != nil {
			d = r.Wrap(d)
		}
		tr, err = coordinator.NewTrainerWith(s, d, nil, splits, nil, nil)
	} else {
		hub := StartHub(t, r.NATS, coordinator.HubOptions{RunDir: cmp.Or(r.HubDir, runDir), RunID: runID,
			Consumer: queue.ConsumerOptions{MaxDeliver: cfg.Runtime.MaxDeliveries}})
		defer hub.Stop()
		stopWorker := StartWorker(t, r.NATS, hub.Addr(), worker.Config{Concurrency: 64, MaxDeliver: cfg.Runtime.MaxDeliveries}, Executor(m))
		defer stopWorker()
		tr, err = coordinator.NewTrainer(s, hub.Hub, splits, nil, nil)
	}
	if err != nil {
		return nil, err
	}
	return tr.Run(t.Context())
}

// RunDemo trains the demo preset in memory into a fresh run dir and
// returns the dir with the run's result.
func RunDemo(t *testing.T, m llm.Model, sets ...string) (string, *trainer.Summary, error) {
	t.Helper()
	dir := t.TempDir()
	sum, err := new(Runner).Run(t, dir, Demo, m, sets...)
	return dir, sum, err
}

// RepoRoot is the module's root directory (it holds configs/), found
// from the test's working directory upwards.
func RepoRoot(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return d
		}
		if filepath.Dir(d) == d {
			t.Fatalf("no go.mod in %s or above", dir)
		}
	}
}

// splitCache holds each preset's sim world, written and parsed once per
// test binary (it was a fifth of a paper run's CPU when every run did it).
var splitCache struct {
	mu sync.Mutex
	m  map[Preset]*bench.Splits
}

// Splits are p's train, selection and test items as bench.LoadSplitDir
// reads them from the files simbench.WriteSplits writes. The trainer only
// reads its splits; each call still returns its own slices.
func Splits(t testing.TB, p Preset) *bench.Splits {
	t.Helper()
	splitCache.mu.Lock()
	defer splitCache.mu.Unlock()
	s, ok := splitCache.m[p]
	if !ok {
		dir := filepath.Join(t.TempDir(), "splits")
		if err := simbench.WriteSplits(dir, p.World, p.WorldSeed); err != nil {
			t.Fatal(err)
		}
		var err error
		if s, err = bench.LoadSplitDir(dir, bench.LoadOptions{}); err != nil {
			t.Fatal(err)
		}
		if splitCache.m == nil {
			splitCache.m = map[Preset]*bench.Splits{}
		}
		splitCache.m[p] = s
	}
	return &bench.Splits{Train: slices.Clone(s.Train), Val: slices.Clone(s.Val), Test: slices.Clone(s.Test), Files: maps.Clone(s.Files)}
}

// Events reads a run dir's events.jsonl.
func Events(t testing.TB, dir string) []trainer.Event {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var out []trainer.Event
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var e trainer.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("%s line %d: %v", filepath.Join(dir, "events.jsonl"), i+1, err)
		}
		out = append(out, e)
	}
	return out
}
