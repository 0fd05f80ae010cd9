package livemath_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/internal/pyrand"
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/benchtest"
	"github.com/skillfleet/skillfleet/pkg/bench/livemath"
	"github.com/skillfleet/skillfleet/pkg/bench/registry"
	"github.com/skillfleet/skillfleet/pkg/bench/score"
)

func TestPermuteFollowsCPythonShuffle(t *testing.T) {
	ch := []score.Choice{{Label: "A", Text: "a"}, {Label: "B", Text: "b"}, {Label: "C", Text: "c"}, {Label: "D", Text: "d"}}
	seed := livemath.PermutationSeed(7, "2025-03:0001")
	// The order is random.Random(seed).shuffle of the indices; the correct
	// text "b" (index 1) lands wherever index 1 lands.
	idx := []int{0, 1, 2, 3}
	pyrand.NewUint64(seed).Shuffle(4, func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
	got, correct := livemath.Permute(ch, score.Choice{Label: "B", Text: "b"}, seed)
	for k, i := range idx {
		if got[k].Text != ch[i].Text || got[k].Label != string(rune('A'+k)) {
			t.Fatalf("position %d = %+v, want text %q label %c", k, got[k], ch[i].Text, 'A'+k)
		}
		if i == 1 && correct != got[k].Label {
			t.Errorf("correct label %q, want %q", correct, got[k].Label)
		}
	}
}

func TestEpisodeWithPermutedChoices(t *testing.T) {
	s, err := registry.LoadSplits(livemath.Name, "testdata/split", 0)
	if err != nil {
		t.Fatal(err)
	}
	env, err := registry.New(livemath.Name, []byte(`{"include_theorem": true}`))
	if err != nil {
		t.Fatal(err)
	}
	it := s.Train[0]
	var raw struct {
		Choices []score.Choice `json:"choices"`
	}
	_ = json.Unmarshal(it.Raw, &raw)
	// Find two batch seeds that put "It is abelian" under different letters.
	labelAt := func(seed int64) string {
		_, l := livemath.Permute(raw.Choices, score.Choice{Text: "It is abelian"}, livemath.PermutationSeed(seed, it.ID))
		return l
	}
	s1, s2 := int64(1), int64(2)
	for labelAt(s2) == labelAt(s1) {
		s2++
	}
	for _, seed := range []int64{s1, s2} {
		correct := labelAt(seed)
		// Answering with the correct letter scores 1; with the old letter
		// B only when the shuffle left it there.
		m := benchtest.Text("Reasoning...\n<answer>" + correct + "</answer>")
		ep, err := env.Episode(context.Background(), m, bench.EpisodeRequest{Item: it, Skill: "s", BatchSeed: seed})
		if err != nil {
			t.Fatal(err)
		}
		if ep.Hard != 1 || ep.Soft != 1 || ep.Answer != correct {
			t.Errorf("seed %d: answered %s, hard %v", seed, correct, ep.Hard)
		}
		user := m.Last().Messages[1].Content
		if !strings.Contains(user, correct+". It is abelian") || !strings.Contains(user, "Theorem:") {
			t.Errorf("seed %d: prompt does not list the permuted choice %s or the theorem:\n%s", seed, correct, user)
		}
		// The text of the correct choice is accepted too.
		ep, _ = env.Episode(context.Background(), benchtest.Text("<answer>it is ABELIAN</answer>"), bench.EpisodeRequest{Item: it, BatchSeed: seed})
		if ep.Hard != 1 {
			t.Errorf("seed %d: choice text not accepted", seed)
		}
	}
	// An invalid label scores 0 with a reason.
	ep, _ := env.Episode(context.Background(), benchtest.Text("<answer>Z</answer>"), bench.EpisodeRequest{Item: it, BatchSeed: 1})
	if ep.Hard != 0 || !strings.Contains(ep.FailReason, "invalid answer") {
		t.Errorf("invalid label: %+v", ep)
	}
	// Task types: the sorted theorem types.
	ep, _ = env.Episode(context.Background(), benchtest.Text("<answer>A</answer>"), bench.EpisodeRequest{Item: s.Val[0]})
	if ep.TaskType != "analysis+inequalities" {
		t.Errorf("task type %q", ep.TaskType)
	}
}

func TestNoPermutation(t *testing.T) {
	s, _ := registry.LoadSplits(livemath.Name, "testdata/split", 0)
	env, _ := registry.New(livemath.Name, []byte(`{"permute_choices": false}`))
	// Unpermuted, the correct choice keeps its label C.
	ep, err := env.Episode(context.Background(), benchtest.Text("<answer>C</answer>"), bench.EpisodeRequest{Item: s.Test[0], BatchSeed: 99})
	if err != nil || ep.Hard != 1 {
		t.Errorf("hard %v err %v", ep.Hard, err)
	}
}
