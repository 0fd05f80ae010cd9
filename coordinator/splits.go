package coordinator

import (
	"fmt"
	"path/filepath"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/registry"
	"github.com/skillfleet/skillfleet/pkg/config"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// LoadSplits loads the run's benchmark items: env.split_dir; else, for a
// benchmark that generates its own world, that world written under
// runDir/_generated_splits; else env.data_path split by ratio there.
func LoadSplits(cfg *config.Config, runDir string) (*bench.Splits, error) {
	dir := cfg.Env.SplitDir
	if dir == "" {
		bc, err := BenchConfig(cfg)
		if err != nil {
			return nil, configErr(err)
		}
		gen, err := registry.GenerateSplits(cfg.Env.Name, bc, filepath.Join(runDir, "_generated_splits"))
		if err != nil {
			return nil, fmt.Errorf("config: %s: env: %w", cfg.File, err)
		}
		dir = gen
	}
	if dir == "" && cfg.Env.DataPath != "" && cfg.Env.SplitMode != "split_dir" {
		out := cfg.Env.SplitOutputDir
		if out == "" {
			out = filepath.Join(runDir, "_generated_splits", bench.RatioDirName(cfg.Env.Name, cfg.Env.SplitRatio, cfg.Env.SplitSeed))
		}
		if _, err := bench.WriteRatioSplit(bench.RatioOptions{DataPath: cfg.Env.DataPath, Ratio: cfg.Env.SplitRatio, Seed: cfg.Env.SplitSeed, OutDir: out}); err != nil {
			return nil, fmt.Errorf("config: %s: env.data_path: %w", cfg.File, err)
		}
		dir = out
	}
	if dir == "" {
		return nil, configErr(fmt.Errorf("config: %s: env.split_dir: required (a directory with train/, val/ and test/), or env.data_path with split_mode: ratio", cfg.File))
	}
	return registry.LoadSplitsIDField(cfg.Env.Name, dir, cfg.Env.Limit, cfg.Env.IDField)
}

// pointAt sends a role's calls to an OpenAI-compatible server at url (the
// sim-llm the run started); an agent CLI keeps its backend and reaches the
// server through its own API.
func pointAt(m *pb.ModelSpec, url string) {
	if m == nil {
		return
	}
	m.BaseUrl = url
	m.ApiKeyEnv = ""
	if m.Backend == backends.BackendExec {
		return
	}
	m.Backend = backends.BackendOpenAI
}
