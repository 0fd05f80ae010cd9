package officeqa_test

import (
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/benchtest"
	"github.com/skillfleet/skillfleet/pkg/bench/officeqa"
	"github.com/skillfleet/skillfleet/pkg/bench/registry"
)

func TestNormaliseLikeSkillOpt(t *testing.T) {
	for in, want := range map[string]string{
		// Only ASCII punctuation goes: a Unicode minus, quotes and
		// currency signs stay.
		"−5.2":           "−5.2",
		"“Yes”":          "“yes”",
		"€1.2 billion":   "€1.2",
		"$1,234 Million": "1234",
		// Word boundaries know Unicode letters: "nominalé" is one word.
		"nominalé 5": "nominalé 5",
		"ΟΔΟΣ":       "οδος",
		" a\u001fb ": "a b",
	} {
		if got := officeqa.Normalise(in); got != want {
			t.Errorf("Normalise(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestEvaluateOptions(t *testing.T) {
	for _, tc := range []struct {
		reply, gold string
		opt         officeqa.ScoreOptions
		answer      string
		hard, soft  float64
	}{
		{"<answer>5.2</answer>", "5.2", officeqa.ScoreOptions{}, "5.2", 1, 1},
		// An empty answer scores 0 even against a gold that normalises
		// to nothing.
		{"", "$", officeqa.ScoreOptions{}, "", 0, 0},
		{"<answer> </answer>", "$", officeqa.ScoreOptions{}, "", 0, 0},
		// Without a tag the last line is scored, unless the deviation
		// require_answer_tag is on.
		{"I think\n5.2", "5.2", officeqa.ScoreOptions{}, "5.2", 1, 1},
		{"I think\n5.2", "5.2", officeqa.ScoreOptions{RequireAnswerTag: true}, "", 0, 0},
		{"<ANSWER>5.2</answer>", "5.2", officeqa.ScoreOptions{RequireAnswerTag: true}, "5.2", 1, 1},
	} {
		answer, hard, soft := officeqa.Evaluate(tc.reply, tc.gold, tc.opt)
		if answer != tc.answer || hard != tc.hard || math.Abs(soft-tc.soft) > 1e-9 {
			t.Errorf("Evaluate(%q, %q, %+v) = %q %v %v, want %q %v %v", tc.reply, tc.gold, tc.opt, answer, hard, soft, tc.answer, tc.hard, tc.soft)
		}
	}
}

func TestRequireAnswerTagInEpisode(t *testing.T) {
	docs, _ := filepath.Abs("testdata/docs")
	s, err := registry.LoadSplits(officeqa.Name, "testdata/split", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		require bool
		hard    float64
	}{{false, 1}, {true, 0}} {
		cfg, _ := json.Marshal(map[string]any{"docs_dir": docs, "max_tool_turns": 5, "require_answer_tag": tc.require})
		env, err := registry.New(officeqa.Name, cfg)
		if err != nil {
			t.Fatal(err)
		}
		ep, err := env.Episode(context.Background(), benchtest.Text("I believe it is\n21,516,058"), bench.EpisodeRequest{Item: s.Val[0]})
		if err != nil {
			t.Fatal(err)
		}
		if ep.Hard != tc.hard {
			t.Errorf("require_answer_tag %v: hard %v, want %v", tc.require, ep.Hard, tc.hard)
		}
	}
}
