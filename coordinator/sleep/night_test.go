package sleep

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	simmodel "github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/nightly"
)

// personaTasks harvests and mines the researcher persona's sessions.
func personaTasks(t *testing.T, m *simmodel.SleepAware) []nightly.Task {
	t.Helper()
	home := filepath.Join(t.TempDir(), ".claude")
	now := time.Now()
	if err := nightly.WritePersonaTranscripts("researcher", home, "/home/r/papers", now); err != nil {
		t.Fatal(err)
	}
	ds, _, err := nightly.Harvest(nightly.HarvestOptions{Source: "claude", ClaudeHome: home, Now: now})
	if err != nil || len(ds) != 12 {
		t.Fatalf("Harvest = %d digests, %v", len(ds), err)
	}
	res, err := nightly.MineLLM(context.Background(), m, "sim", ds, nil)
	if err != nil {
		t.Fatal(err)
	}
	tasks := nightly.Dedup(res.Tasks)
	nightly.AssignSplits(tasks, 42, 0.34, 0)
	return tasks
}

func TestConsolidatePersona(t *testing.T) {
	m := simmodel.NewSleepAware(simmodel.New(simmodel.Options{}))
	tasks := personaTasks(t, m)
	if len(tasks) != 12 || tasks[0].Judge.Kind != nightly.JudgeExact {
		t.Fatalf("mined %d tasks, first %+v", len(tasks), tasks[0])
	}
	rep := &LocalReplayer{Model: m, Name: "sim", Env: nightly.NewEnv(nightly.EnvConfig{})}
	s := Settings{EvolveSkill: true, EvolveMemory: true, NoRegression: true}
	d := Deps{Replayer: rep, Optimizer: m, OptimizerName: "sim"}
	out, err := Consolidate(context.Background(), s, d, Input{Tasks: tasks, Skill: nightly.ScaffoldSkill(), Memory: nightly.ScaffoldMemory()})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Accepted || out.Final == nil || !(out.Final.Value > out.Baseline.Value) {
		t.Fatalf("outcome %s (%s): baseline %+v final %+v", out.Action, out.Reason, out.Baseline, out.Final)
	}
	t.Logf("baseline %.3f → fresh final %.3f; trials %+v", out.Baseline.Value, out.Final.Value, out.Trials)
	lines := nightly.LearnedLines(out.ProposedSkill)
	if strings.Contains(out.ProposedSkill, nightly.HabitHarmful) || len(lines) != 2 {
		t.Fatalf("learned lines %q: want the two habits and not the lure", lines)
	}
	harmfulTried := false
	for _, tr := range out.Trials {
		if tr.Edit.Content == nightly.HabitHarmful {
			harmfulTried = true
			if tr.Accepted {
				t.Fatal("the gate let the harmful rule in")
			}
		}
	}
	if !harmfulTried {
		t.Fatal("the harmful lure was never proposed: the gate was not exercised")
	}
	for _, r := range out.Replays {
		if r.Stage == "final_fresh" && (r.Sample != FreshSample || !r.Fresh) {
			t.Fatalf("final replay %+v is not a fresh sample", r)
		}
	}
	// Same input, same proposal.
	out2, err := Consolidate(context.Background(), s, d, Input{Tasks: tasks, Skill: nightly.ScaffoldSkill(), Memory: nightly.ScaffoldMemory()})
	if err != nil || out2.ProposedSkill != out.ProposedSkill {
		t.Fatalf("second consolidation differs: %v", err)
	}
}

func TestConsolidateStopsAtTokenBudget(t *testing.T) {
	m := simmodel.NewSleepAware(simmodel.New(simmodel.Options{}))
	tasks := personaTasks(t, m)
	rep := &LocalReplayer{Model: m, Name: "sim", Env: nightly.NewEnv(nightly.EnvConfig{})}
	s := Settings{EvolveSkill: true, MaxTokens: 2500}
	out, err := Consolidate(context.Background(), s, Deps{Replayer: rep, Optimizer: m, OptimizerName: "sim"},
		Input{Tasks: tasks, Skill: nightly.ScaffoldSkill(), Memory: nightly.ScaffoldMemory()})
	if !errors.Is(err, ErrBudget) {
		t.Fatalf("Consolidate = %v, want ErrBudget", err)
	}
	if out.Accepted || out.Action != ActionStoppedBudget || out.ProposedSkill != nightly.ScaffoldSkill() || !strings.Contains(out.Reason, "max_tokens_per_night") {
		t.Fatalf("outcome %+v", out)
	}
	if out.Spend.Tokens > 2500 {
		t.Fatalf("spent %d tokens, budget 2500", out.Spend.Tokens)
	}
	t.Logf("stopped: %s", out.Reason)
}

func TestConsolidateEvolvesOnlyTheMemoryWhenAsked(t *testing.T) {
	m := simmodel.NewSleepAware(simmodel.New(simmodel.Options{}))
	tasks := personaTasks(t, m)
	rep := &LocalReplayer{Model: m, Name: "sim", Env: nightly.NewEnv(nightly.EnvConfig{})}
	skill := "# My own skill\n\nNever touched.\n"
	memory := "# Project notes\n\nUser text stays.\n\n" + nightly.LearnedStart + "\n" + nightly.LearnedEnd + "\n"
	out, err := Consolidate(context.Background(), Settings{EvolveMemory: true}, Deps{Replayer: rep, Optimizer: m, OptimizerName: "sim"},
		Input{Tasks: tasks, Skill: skill, Memory: memory})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Accepted || out.SkillChanged || !out.MemoryChanged || out.ProposedSkill != skill {
		t.Fatalf("outcome %s (%s): skill changed %t, memory changed %t", out.Action, out.Reason, out.SkillChanged, out.MemoryChanged)
	}
	if nightly.OutsideBlock(out.ProposedMemory) != nightly.OutsideBlock(memory) || len(nightly.LearnedLines(out.ProposedMemory)) != 2 {
		t.Fatalf("memory:\n%s", out.ProposedMemory)
	}
}

func TestConsolidateStopsAtDollarBudget(t *testing.T) {
	m := simmodel.NewSleepAware(simmodel.New(simmodel.Options{}))
	tasks := personaTasks(t, m)
	rep := &LocalReplayer{Model: m, Name: "sim", Env: nightly.NewEnv(nightly.EnvConfig{})}
	// $1 per thousand tokens, a $5 budget.
	cost := func(_ string, u llm.Usage) float64 { return float64(u.InputTokens+u.OutputTokens) / 1000 }
	out, err := Consolidate(context.Background(), Settings{EvolveSkill: true, MaxUSD: 5, Cost: cost}, Deps{Replayer: rep, Optimizer: m, OptimizerName: "sim"},
		Input{Tasks: tasks, Skill: nightly.ScaffoldSkill(), Memory: nightly.ScaffoldMemory()})
	if !errors.Is(err, ErrBudget) || out.Accepted || out.Action != ActionStoppedBudget || !strings.Contains(out.Reason, "max_usd_per_night") {
		t.Fatalf("Consolidate = %v, outcome %s (%s)", err, out.Action, out.Reason)
	}
	if out.Spend.USD == 0 || out.Spend.USD > 5 {
		t.Fatalf("spent $%.3f with a $5 budget", out.Spend.USD)
	}
}

func TestRegressedNamesADroppedOrMissingTask(t *testing.T) {
	before := map[string]float64{"a": 1, "b": 0.5}
	for _, c := range []struct {
		after map[string]float64
		want  string
	}{
		{map[string]float64{"a": 1, "b": 0.75}, ""},
		{map[string]float64{"a": 0.5, "b": 1}, "a"},
		{map[string]float64{"b": 1}, "a"},
	} {
		if got := regressed(before, c.after); got != c.want {
			t.Errorf("regressed(%v, %v) = %q, want %q", before, c.after, got, c.want)
		}
	}
}
