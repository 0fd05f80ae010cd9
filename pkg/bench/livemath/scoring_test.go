package livemath_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/benchtest"
	"github.com/skillfleet/skillfleet/pkg/bench/livemath"
	"github.com/skillfleet/skillfleet/pkg/bench/registry"
	"github.com/skillfleet/skillfleet/pkg/bench/score"
)

func TestEvaluate(t *testing.T) {
	choices := []score.Choice{{Label: "A", Text: "finite"}, {Label: "B", Text: "infinite"}, {Label: "C", Text: "ΟΔΟΣ"}}
	for _, tc := range []struct {
		reply, correct string
		label          string
		valid          bool
		hard           float64
	}{
		{"<answer>b.</answer>", "B", "B", true, 1},
		{"<answer>B (infinite)</answer>", "B", "B", true, 1},
		// The choice text through str.lower(): final sigma.
		{"<answer>οδος</answer>", "C", "C", true, 1},
		{"<answer>Z</answer>", "C", "", false, 0},
		// A decorated correct label is normalised like the answer.
		{"<answer>C</answer>", "C)", "C", true, 1},
	} {
		_, label, valid, hard := livemath.Evaluate(tc.reply, choices, tc.correct)
		if label != tc.label || valid != tc.valid || hard != tc.hard {
			t.Errorf("Evaluate(%q, correct %q) = %q %v %v, want %q %v %v", tc.reply, tc.correct, label, valid, hard, tc.label, tc.valid, tc.hard)
		}
	}
}

// TestDecoratedLabelsWithoutPermutation: with permute_choices false and
// labels written "A)", "B)", the answer "B)" is right (issue 23, cause 8).
func TestDecoratedLabelsWithoutPermutation(t *testing.T) {
	raw, _ := json.Marshal(map[string]any{
		"id": "m:1", "question": "Which?",
		"choices":        []score.Choice{{Label: "A)", Text: "x"}, {Label: "B)", Text: "y"}},
		"correct_choice": score.Choice{Label: "B)", Text: "y"},
	})
	env, err := registry.New(livemath.Name, []byte(`{"permute_choices": false}`))
	if err != nil {
		t.Fatal(err)
	}
	for reply, want := range map[string]float64{"<answer>B)</answer>": 1, "<answer>(B)</answer>": 0, "<answer>b</answer>": 1, "<answer>A)</answer>": 0} {
		ep, err := env.Episode(context.Background(), benchtest.Text(reply), bench.EpisodeRequest{Item: bench.Item{ID: "m:1", Raw: raw}})
		if err != nil {
			t.Fatal(err)
		}
		if ep.Hard != want {
			t.Errorf("%s: hard %v, want %v (%s)", reply, ep.Hard, want, ep.FailReason)
		}
	}
}
