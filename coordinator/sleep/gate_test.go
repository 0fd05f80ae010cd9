package sleep_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/coordinator/gate"
	"github.com/skillfleet/skillfleet/coordinator/sleep"
	"github.com/skillfleet/skillfleet/pkg/config"
	"github.com/skillfleet/skillfleet/pkg/nightly"
)

// scripted replays every task with a fixed record, whatever the document.
type scripted map[string]sleep.Replay

func (s scripted) Replay(_ context.Context, r sleep.ReplayRequest) ([]sleep.Replay, error) {
	out := make([]sleep.Replay, len(r.Tasks))
	for i, t := range r.Tasks {
		rp := s[t.ID]
		rp.TaskID, rp.Stage, rp.Sample, rp.Fresh = t.ID, r.Stage, r.Sample, true
		out[i] = rp
	}
	return out, nil
}

// TestNightScoresAsTheTrainer: the same gate_metric and gate_mixed_weight,
// in a sleep config and in a training config, score the same val records
// the same: the night's baseline is the trainer's selection score of
// those records (coordinator.FromConfig's metric and weight, gate.Measure's
// means, gate.Score).
func TestNightScoresAsTheTrainer(t *testing.T) {
	root, _ := filepath.Abs(filepath.Join("..", ".."))
	// Val records in task order: a pass, two partial failures, and an
	// infrastructure failure (no score, left out of both means).
	records := []struct {
		id         string
		hard, soft float64
		infra      bool
	}{{"a", 1, 1, false}, {"b", 0, 0.75, false}, {"c", 0, 0.25, false}, {"d", 0, 0, true}, {"e", 1, 0.5, false}}
	var tasks []nightly.Task
	replays := scripted{}
	var items []gate.Item
	for _, r := range records {
		tasks = append(tasks, nightly.Task{ID: r.id, Intent: "task " + r.id, Split: nightly.SplitVal})
		rp := sleep.Replay{Hard: r.hard, Soft: r.soft}
		it := gate.Item{Status: gate.Scored, Hard: r.hard, Soft: r.soft}
		if r.infra {
			rp, it = sleep.Replay{Err: "OUTCOME_TIMEOUT: no reply"}, gate.Item{Status: gate.Failed}
		}
		replays[r.id] = rp
		items = append(items, it)
	}
	// One train task that passes: the night has nothing to learn and ends
	// after its baseline.
	tasks = append(tasks, nightly.Task{ID: "t", Intent: "train task", Split: nightly.SplitTrain})
	replays["t"] = sleep.Replay{Hard: 1, Soft: 1}

	for _, c := range []struct {
		metric string
		weight float64
	}{{"mixed", 0.8}, {"mixed", 0.2}, {"mixed", 0}, {"mixed", 1}, {"mixed", 0.5}, {"hard", 0.8}, {"soft", 0.8}} {
		t.Run(fmt.Sprintf("%s_%v", c.metric, c.weight), func(t *testing.T) {
			// The trainer's path.
			cfg, err := config.Load(filepath.Join(root, "configs", "demo.yaml"), []string{
				"env.skill_init=" + filepath.Join(root, "configs", "skills", "sim_demo_seed.md"),
				"evaluation.gate_metric=" + c.metric,
				fmt.Sprintf("evaluation.gate_mixed_weight=%v", c.weight),
			})
			if err != nil {
				t.Fatal(err)
			}
			ts, err := coordinator.FromConfig(cfg, "r", t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			ms := gate.Measure(items)
			want := gate.Score(ms.Hard, ms.Soft, ts.GateMetric, ts.MixedWeight)

			// The night's path: the same keys in a sleep config.
			path := filepath.Join(t.TempDir(), "config.yaml")
			yaml := fmt.Sprintf("gate_metric: %s\ngate_mixed_weight: %v\n", c.metric, c.weight)
			if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			sc, err := nightly.LoadConfig(path, true)
			if err != nil {
				t.Fatal(err)
			}
			s := sleep.SettingsFromConfig(sc)
			s.EvolveMemory = false
			out, err := sleep.Consolidate(t.Context(), s, sleep.Deps{Replayer: replays},
				sleep.Input{Tasks: tasks, Skill: nightly.ScaffoldSkill(), Memory: nightly.ScaffoldMemory()})
			if err != nil {
				t.Fatal(err)
			}
			if out.Action != sleep.ActionNoFailures {
				t.Fatalf("action %s (%s), want %s", out.Action, out.Reason, sleep.ActionNoFailures)
			}
			b := out.Baseline
			if b.Value != want || b.Hard != ms.Hard || b.Soft != ms.Soft || b.N != ms.Scored || b.Infra != ms.Total-ms.Scored {
				t.Fatalf("night baseline %+v; the trainer scores the same records %v (hard %v soft %v over %d of %d)",
					b, want, ms.Hard, ms.Soft, ms.Scored, ms.Total)
			}
		})
	}
}
