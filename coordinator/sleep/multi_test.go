package sleep

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	simmodel "github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/pkg/nightly"
)

// overlapReplayer runs replays with inner and records how many skills'
// replays were in flight at once (a replay's skill is the "name:" of its
// document's front matter). A baseline wave waits, at most hold, until
// another skill's replays are in flight too: skills consolidated one
// after the other never overlap, and each of their waits runs out.
type overlapReplayer struct {
	inner Replayer
	hold  time.Duration

	mu       sync.Mutex
	inFlight map[string]int
	most     int
	changed  chan struct{}
}

func skillOf(doc string) string {
	for _, l := range strings.Split(doc, "\n") {
		if name, ok := strings.CutPrefix(l, "name: "); ok {
			return strings.TrimSpace(name)
		}
	}
	return ""
}

func (o *overlapReplayer) Replay(ctx context.Context, r ReplayRequest) ([]Replay, error) {
	name := skillOf(r.Doc)
	o.mu.Lock()
	o.inFlight[name]++
	o.most = max(o.most, len(o.inFlight))
	close(o.changed)
	o.changed = make(chan struct{})
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		if o.inFlight[name]--; o.inFlight[name] == 0 {
			delete(o.inFlight, name)
		}
		o.mu.Unlock()
	}()
	if r.Stage == "baseline" {
		deadline := time.After(o.hold)
	wait:
		for {
			o.mu.Lock()
			others, ch := len(o.inFlight) > 1, o.changed
			o.mu.Unlock()
			if others {
				break
			}
			select {
			case <-ch:
			case <-deadline:
				break wait
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
	return o.inner.Replay(ctx, r)
}

// multiSkillNight sets up a night over three skills (papers, citations,
// commits) whose tasks are the researcher persona's, split among them by
// skill hint, on a tasks file.
func multiSkillNight(t *testing.T, sim *simmodel.SleepAware) Night {
	t.Helper()
	dir := t.TempDir()
	tasks := personaTasks(t, sim)
	for i := range tasks {
		tasks[i].SkillHint = []string{"papers", "citations", "commits"}[i%3]
		tasks[i].Split = ""
	}
	file := filepath.Join(dir, "tasks.json")
	if err := nightly.WriteTasksFile(file, nightly.TasksFile{Reviewed: true, Tasks: tasks}); err != nil {
		t.Fatal(err)
	}
	root := filepath.Join(dir, "skills")
	for _, s := range []string{"papers", "citations", "commits"} {
		if err := os.MkdirAll(filepath.Join(root, s), 0o755); err != nil {
			t.Fatal(err)
		}
		text := fmt.Sprintf("---\nname: %s\ndescription: the %s skill\n---\n\n# %s\n", s, s, s)
		if err := os.WriteFile(filepath.Join(root, s, "SKILL.md"), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfg := nightly.DefaultConfig()
	cfg.Backend, cfg.SkillRoot = "sim", root
	return Night{Config: cfg, StatePath: filepath.Join(dir, "state.json"), Project: filepath.Join(dir, "proj"),
		StagingRoot: filepath.Join(dir, "proj", ".skillfleet-sleep", "staging"), TasksFile: file, SkillRoot: root,
		TargetModel: "sim", OptimizerModel: "sim"}
}

// TestMultiSkillNightConsolidatesSkillsAtOnce: a night over three skills
// runs their consolidations at once (replays of at least two skills in
// flight together, which one skill after the other never has), stages
// one proposal per skill, and its total spend is the sum of the skills'
// own spends. With a budget too small for the three, the night stops on
// the budget, and what it spent is the skills' spends added up, each
// checked against the night's one budget.
func TestMultiSkillNightConsolidatesSkillsAtOnce(t *testing.T) {
	sim := simmodel.NewSleepAware(simmodel.New(simmodel.Options{}))
	n := multiSkillNight(t, sim)
	ov := &overlapReplayer{hold: 3 * time.Second, inFlight: map[string]int{}, changed: make(chan struct{})}
	fleet := func(context.Context, int, time.Time, []byte) (Replayer, func(), error) {
		ov.inner = &LocalReplayer{Model: sim, Name: "sim", Env: nightly.NewEnv(nightly.EnvConfig{})}
		return ov, func() {}, nil
	}
	rep, err := RunNight(context.Background(), n, NightDeps{Optimizer: sim, Fleet: fleet})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Skills) != 3 || rep.Outcome.Action != ActionMultiSkill {
		t.Fatalf("%d skills, action %s (%s)", len(rep.Skills), rep.Outcome.Action, rep.Outcome.Reason)
	}
	if ov.most < 2 {
		t.Errorf("at most %d skill's replays in flight at once: the skills were consolidated one after the other", ov.most)
	}
	var sum int64
	for i, sn := range rep.Skills {
		if want := []string{"citations", "commits", "papers"}[i]; sn.Name != want || sn.Staging == "" || sn.Outcome.Baseline.N == 0 {
			t.Errorf("skill %d: %s staged at %q, want %s staged, in name order", i, sn.Name, sn.Staging, want)
		}
		sum += sn.Outcome.Spend.Tokens
	}
	if sum == 0 || rep.Outcome.Spend.Tokens != sum {
		t.Errorf("night spent %d tokens, the skills %d together", rep.Outcome.Spend.Tokens, sum)
	}
	t.Logf("%d skills at once at most; %d tokens", ov.most, sum)

	// The budget is the night's, shared by the skills running at once.
	n = multiSkillNight(t, sim)
	n.Config.MaxTokens = sum / 3
	ov = &overlapReplayer{hold: 0, inFlight: map[string]int{}, changed: make(chan struct{})}
	rep, err = RunNight(context.Background(), n, NightDeps{Optimizer: sim, Fleet: fleet})
	if !errors.Is(err, ErrBudget) || rep == nil || rep.Outcome.Action != ActionStoppedBudget {
		t.Fatalf("night under max_tokens %d: %v, report %+v", n.Config.MaxTokens, err, rep)
	}
	var got int64
	for _, sn := range rep.Skills {
		got += sn.Outcome.Spend.Tokens
	}
	if rep.Outcome.Spend.Tokens != got || got == 0 || got >= sum {
		t.Errorf("budget night spent %d tokens, the skills %d together; the whole night without a budget %d", rep.Outcome.Spend.Tokens, got, sum)
	}
}
