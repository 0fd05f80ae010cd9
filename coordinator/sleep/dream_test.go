package sleep

import (
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	simmodel "github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/nightly"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// recordingModel passes every call to the sim and keeps the reflection
// payloads it was sent.
type recordingModel struct {
	llm.Model
	mu       sync.Mutex
	reflects []nightly.ReflectInput
}

func (r *recordingModel) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if req.Stage == "sleep_reflect" {
		for _, msg := range req.Messages {
			if kind, payload, err := prompts.ExtractPayload(msg.Text()); err == nil && kind == nightly.KindReflect {
				var in nightly.ReflectInput
				if err := json.Unmarshal(payload, &in); err == nil {
					r.mu.Lock()
					r.reflects = append(r.reflects, in)
					r.mu.Unlock()
				}
			}
		}
	}
	return r.Model.Chat(ctx, req)
}

// luckyReplayer replays on the sim, but a train attempt after a task's
// first (sample ≥ 1) answers in the user's form and passes: the spread a
// real model's sampling gives between attempts.
type luckyReplayer struct{ LocalReplayer }

func (l *luckyReplayer) Replay(ctx context.Context, r ReplayRequest) ([]Replay, error) {
	rs, err := l.LocalReplayer.Replay(ctx, r)
	if err != nil || !strings.HasPrefix(r.Stage, "train_") || r.Sample == 0 {
		return rs, err
	}
	for i := range rs {
		if ref := r.Tasks[i].Judge.Reference; ref != "" {
			rs[i].Answer, rs[i].Hard, rs[i].Soft, rs[i].FailReason = "<answer>"+ref+"</answer>", 1, 1, ""
		}
	}
	return rs, nil
}

func TestDreamRolloutsShowTheReflectorTheBestAndTheWorstAttempt(t *testing.T) {
	sim := simmodel.NewSleepAware(simmodel.New(simmodel.Options{}))
	m := &recordingModel{Model: sim}
	tasks := personaTasks(t, sim)
	rep := &luckyReplayer{LocalReplayer{Model: sim, Name: "sim", Env: nightly.NewEnv(nightly.EnvConfig{})}}
	s := Settings{EvolveSkill: true, DreamRollouts: 3}
	out, err := Consolidate(context.Background(), s, Deps{Replayer: rep, Optimizer: m, OptimizerName: "sim"},
		Input{Tasks: tasks, Skill: nightly.ScaffoldSkill(), Memory: nightly.ScaffoldMemory()})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.reflects) == 0 || len(m.reflects[0].Failures) == 0 {
		t.Fatalf("no reflection with failures: %s (%s)", out.Action, out.Reason)
	}
	for _, f := range m.reflects[0].Failures {
		if f.Attempts != 3 || f.Passed != 2 || f.Best == nil || f.Best.Score != 1 || !(f.Score < 1) || !strings.Contains(f.Best.Reply, "<answer>arXiv:") {
			t.Fatalf("failure shown to the reflector: %+v (best %+v)", f, f.Best)
		}
		if strings.Contains(f.Got, "<answer>") {
			t.Fatalf("got is not the worst attempt: %q", f.Got)
		}
	}
	samples := map[int]int{}
	for _, r := range out.Replays {
		if r.Stage == "train_skill" {
			samples[r.Sample]++
		}
	}
	if len(samples) != 3 || samples[0] != samples[2] || samples[0] == 0 {
		t.Fatalf("train attempts by sample: %v", samples)
	}
	ro := out.Extra["rollouts"]
	if ro.Tokens == 0 || ro.Tokens >= out.Spend.Tokens || ro.Calls != 2*samples[0] {
		t.Fatalf("rollouts spend %+v of %+v (train tasks %d)", ro, out.Spend, samples[0])
	}
}

func TestDreamAndRecalledTasksNeverReachValOrTest(t *testing.T) {
	sim := simmodel.NewSleepAware(simmodel.New(simmodel.Options{}))
	tasks := personaTasks(t, sim)
	var train []nightly.Task
	for i := range tasks {
		if tasks[i].Split == nightly.SplitTrain {
			train = append(train, tasks[i])
		}
	}
	// One real task goes to test, so a test wave runs too.
	tasks[0].Split = nightly.SplitTest
	dreams := nightly.DreamTasks(train, 2)
	dreams[0].Split = nightly.SplitVal // mislabelled: the night must still keep it in train
	recalled := nightly.Recall(train[:1], []nightly.Task{{ID: "archived", Intent: tasks[1].Intent + " again", Origin: nightly.OriginReal,
		Judge: tasks[1].Judge}}, 1)
	if len(recalled) != 1 {
		t.Fatalf("recalled %d", len(recalled))
	}
	recalled[0].Task.Split = nightly.SplitTest
	in := append(append(append([]nightly.Task{}, tasks...), dreams...), recalled[0].Task)
	rep := &LocalReplayer{Model: sim, Name: "sim", Env: nightly.NewEnv(nightly.EnvConfig{})}
	out, err := Consolidate(context.Background(), Settings{EvolveSkill: true, EvolveMemory: true}, Deps{Replayer: rep, Optimizer: sim, OptimizerName: "sim"},
		Input{Tasks: in, Skill: nightly.ScaffoldSkill(), Memory: nightly.ScaffoldMemory()})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Accepted || out.Test == nil {
		t.Fatalf("outcome %s (%s), test %v", out.Action, out.Reason, out.Test)
	}
	trained := map[string]bool{}
	for _, r := range out.Replays {
		synthetic := strings.Contains(r.TaskID, "~dream") || strings.HasPrefix(r.TaskID, "recall:")
		if synthetic && !strings.HasPrefix(r.Stage, "train_") {
			t.Fatalf("task %s replayed in stage %s", r.TaskID, r.Stage)
		}
		if synthetic {
			trained[r.TaskID] = true
		}
	}
	if len(trained) != len(dreams)+1 {
		t.Fatalf("train replays of %d dream and recalled tasks, want %d", len(trained), len(dreams)+1)
	}
	if out.Extra["dream"].Tokens == 0 || out.Extra["recall"].Tokens == 0 {
		t.Fatalf("extra spend %+v", out.Extra)
	}

	// With no val task at all the train tasks stand in for val (a leaked
	// night): the real ones only.
	var noVal []nightly.Task
	for _, t := range in {
		if t.Split != nightly.SplitVal {
			noVal = append(noVal, t)
		}
	}
	out, err = Consolidate(context.Background(), Settings{EvolveSkill: true}, Deps{Replayer: rep, Optimizer: sim, OptimizerName: "sim"},
		Input{Tasks: noVal, Skill: nightly.ScaffoldSkill(), Memory: nightly.ScaffoldMemory()})
	if err != nil || !out.Leaked {
		t.Fatalf("leaked night: %v, leaked %t", err, out.Leaked)
	}
	for _, r := range out.Replays {
		if (strings.Contains(r.TaskID, "~dream") || strings.HasPrefix(r.TaskID, "recall:")) && !strings.HasPrefix(r.Stage, "train_") {
			t.Fatalf("leaked night: task %s replayed in stage %s", r.TaskID, r.Stage)
		}
	}
}

func TestGateOffKeepsEveryEditAndSaysSoLoudly(t *testing.T) {
	sim := simmodel.NewSleepAware(simmodel.New(simmodel.Options{}))
	tasks := personaTasks(t, sim)
	rep := &LocalReplayer{Model: sim, Name: "sim", Env: nightly.NewEnv(nightly.EnvConfig{})}
	var logs strings.Builder
	log := slog.New(slog.NewTextHandler(&logs, nil))
	out, err := Consolidate(context.Background(), Settings{EvolveSkill: true, GateOff: true}, Deps{Replayer: rep, Optimizer: sim, OptimizerName: "sim", Logger: log},
		Input{Tasks: tasks, Skill: nightly.ScaffoldSkill(), Memory: nightly.ScaffoldMemory()})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Accepted || out.Action != ActionAcceptUngated || !out.GateOff || !strings.Contains(out.Reason, "not verified") {
		t.Fatalf("outcome %s (%s)", out.Action, out.Reason)
	}
	// The lure the gate keeps out goes in ungated.
	if !strings.Contains(out.ProposedSkill, nightly.HabitHarmful) {
		t.Fatalf("gate off: the proposal lacks the edit the gate would reject:\n%s", out.ProposedSkill)
	}
	for _, tr := range out.Trials {
		if !tr.Accepted || !strings.Contains(tr.Why, "gate_mode off") {
			t.Fatalf("trial %+v", tr)
		}
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "GATE OFF") {
		t.Fatalf("no warning logged:\n%s", logs.String())
	}
	r := &Report{Outcome: out, Splits: map[string]int{}}
	if !strings.Contains(r.Summary(), "WARNING: gate_mode off") || !strings.Contains(r.Markdown(), "WARNING: gate_mode off") {
		t.Fatalf("the report does not warn:\n%s", r.Summary())
	}
}

func TestSlowMemoryReachesTheReflector(t *testing.T) {
	sim := simmodel.NewSleepAware(simmodel.New(simmodel.Options{}))
	m := &recordingModel{Model: sim}
	tasks := personaTasks(t, sim)
	rep := &LocalReplayer{Model: sim, Name: "sim", Env: nightly.NewEnv(nightly.EnvConfig{})}
	lure := nightly.NewLesson(1, "skill", nightly.Edit{Op: "add", Content: nightly.HabitHarmful}, false, "val score 0.4167 does not beat 1.0000")
	out, err := Consolidate(context.Background(), Settings{EvolveSkill: true, Lessons: []string{lure.Text()}}, Deps{Replayer: rep, Optimizer: m, OptimizerName: "sim"},
		Input{Tasks: tasks, Skill: nightly.ScaffoldSkill(), Memory: nightly.ScaffoldMemory()})
	if err != nil || !out.Accepted {
		t.Fatalf("Consolidate: %v, %s", err, out.Action)
	}
	if len(m.reflects) == 0 || len(m.reflects[0].Lessons) != 1 || m.reflects[0].Lessons[0] != lure.Text() {
		t.Fatalf("reflection payloads %+v", m.reflects)
	}
	// The sim's reflector heeds the lesson: the lure is not tried again.
	for _, tr := range out.Trials {
		if tr.Edit.Content == nightly.HabitHarmful {
			t.Fatalf("the rejected lure was proposed again: %+v", tr)
		}
	}
}
