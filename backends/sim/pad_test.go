package sim

import (
	"reflect"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/internal/testrace"
	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// TestTrajectoryPadKeepsDecisions trains a few steps with and without
// 50 KB padding side by side: every rollout scores the same and carries
// a trajectory of at least 50 KB, and every analyst reply (drawn from the
// payload bytes, which quote the padded trajectories) is the same.
func TestTrajectoryPadKeepsDecisions(t *testing.T) {
	testrace.SkipExperiment(t, "trains with and without 50 KB trajectories")
	t.Parallel()
	const size = 50 << 10
	p, _ := simbench.LookupPreset(simbench.PresetDemo)
	w, _ := simbench.Generate(simbench.PresetDemo, 0)
	skill, _ := simbench.SeedSkill(simbench.PresetDemo, 0)
	plain, padded := New(Options{}), New(Options{TrajectoryPad: size})
	for step := range 3 {
		at := step * p.BatchSize % len(w.Train)
		var fails, padFails []prompts.Trajectory
		for _, it := range w.Train[at : at+p.BatchSize] {
			a, b := rollout(t, plain, it, skill), rollout(t, padded, it, skill)
			if a.Hard != b.Hard || a.Soft != b.Soft || a.Answer != b.Answer || a.FailReason != b.FailReason {
				t.Fatalf("item %s: padded rollout scored %v %q, plain %v %q", it.ID, b.Hard, b.Answer, a.Hard, a.Answer)
			}
			if n := len(b.Messages[2].Text()); n < size || !strings.HasPrefix(b.Messages[2].Text(), padOpen) {
				t.Fatalf("item %s: padded reply is %d bytes, want at least %d", it.ID, n, size)
			}
			if a.Hard < 1 {
				fails, padFails = append(fails, trajectory(it.ID, a)), append(padFails, trajectory(it.ID, b))
			}
		}
		if len(fails) == 0 {
			t.Fatalf("step %d: no failure to analyse", step)
		}
		var want, got prompts.AnalystReply
		in := prompts.AnalystInput{Mode: prompts.ModePatch, Skill: skill, Budget: p.LR, BatchSize: len(fails), Trajectories: fails}
		ask(t, plain, prompts.AnalystFailure, prompts.ModePatch, in, &want)
		in.Trajectories = padFails
		ask(t, padded, prompts.AnalystFailure, prompts.ModePatch, in, &got)
		if !reflect.DeepEqual(want, got) {
			t.Fatalf("step %d: the analyst answered padded trajectories differently:\n%+v\n%+v", step, got, want)
		}
		for _, e := range want.Patch.Edits {
			if e.Op == "delete" {
				skill = strings.Replace(skill, e.Target, "", 1)
			} else {
				skill += "\n" + e.Content
			}
		}
	}
}

func TestParseSize(t *testing.T) {
	for in, want := range map[string]int{"0": 0, "512": 512, "50KB": 50 << 10, "50kb": 50 << 10, "2MiB": 2 << 20, "1 MB": 1 << 20} {
		if got, err := ParseSize(in); err != nil || got != want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "50GB", "x", "65MB"} {
		if _, err := ParseSize(in); err == nil {
			t.Errorf("ParseSize(%q) accepted", in)
		}
	}
}
