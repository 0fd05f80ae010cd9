package simbench

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// replyModel answers every request with a fixed reply and records the
// request. The real simulated model lives in backends/sim and is tested
// with this environment there.
type replyModel struct {
	reply string
	err   error
	got   *llm.Request
}

func (m *replyModel) Chat(_ context.Context, req *llm.Request) (*llm.Response, error) {
	m.got = req
	if m.err != nil {
		return nil, m.err
	}
	return &llm.Response{Content: m.reply, Model: req.Model, Attempts: 2, RateLimited: 1,
		Usage: llm.Usage{InputTokens: 100, OutputTokens: 10}, FailedUsage: llm.Usage{InputTokens: 100}}, nil
}

func item(t *testing.T, it Item) bench.Item {
	t.Helper()
	raw, err := json.Marshal(it)
	if err != nil {
		t.Fatal(err)
	}
	return bench.Item{ID: it.ID, TaskType: it.TaskType, Raw: raw}
}

func TestEpisode(t *testing.T) {
	t.Parallel()
	it := Item{ID: "sim-test-0001", Question: "Note the route length. " + RecordMarker + "4821.", Answer: "4821", TaskType: "units", Pitfalls: []string{"units_km"}}
	tests := []struct {
		name       string
		reply      string
		hard, soft float64
		answer     string
		reason     string
	}{
		{"right", "Done.\n<answer>4821</answer>", 1, 1, "4821", ""},
		{"dressed", "Hmm.\n<answer> 4821 mi </answer>", 0, 0.5, "4821 mi", "wrong_answer: predicted '4821 mi' but expected '4821'"},
		{"changed digits", "<answer>4820</answer>", 0, 0, "4820", "wrong_answer: predicted '4820' but expected '4821'"},
		{"no tags", "I think\n4821\n\n", 1, 1, "4821", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := &replyModel{reply: tc.reply}
			ep, err := New(Config{}).Episode(t.Context(), m, bench.EpisodeRequest{Item: item(t, it), Skill: "# S\n- rule", Sample: 3, Model: "tgt"})
			if err != nil {
				t.Fatal(err)
			}
			if ep.Hard != tc.hard || ep.Soft != tc.soft || ep.Answer != tc.answer || ep.FailReason != tc.reason {
				t.Errorf("episode = hard %v soft %v answer %q reason %q; want %v %v %q %q", ep.Hard, ep.Soft, ep.Answer, ep.FailReason, tc.hard, tc.soft, tc.answer, tc.reason)
			}
			if m.got.Seed == nil || *m.got.Seed != 3 || m.got.Model != "tgt" {
				t.Errorf("request seed/model = %v/%q, want 3/tgt", m.got.Seed, m.got.Model)
			}
			if skill, ok := SkillOf(m.got.Messages[0].Content); !ok || skill != "# S\n- rule" {
				t.Errorf("SkillOf(system) = %q, %v", skill, ok)
			}
			if q := QuestionOf(m.got.Messages[1].Content); q != it.Question {
				t.Errorf("QuestionOf(user) = %q", q)
			}
			if n := len(ep.Messages); n != 4 || ep.Messages[3].Role != llm.RoleSystem || !strings.Contains(ep.Messages[3].Content, "gold answer '4821'") {
				t.Errorf("messages = %+v, want the conversation and an evaluation message naming the gold", ep.Messages)
			}
			if g, ok := GoldFromFeedback(ep.Messages[3].Content); !ok || g != "4821" {
				t.Errorf("GoldFromFeedback(evaluation) = %q, %v", g, ok)
			}
			want := bench.Episode{Usage: llm.Usage{InputTokens: 200, OutputTokens: 10}, Calls: 2, FailedCalls: 1, Retries: 1, RateLimited: 1, NTurns: 1, TaskType: "units", TaskDescription: it.Question}
			got := bench.Episode{Usage: ep.Usage, Calls: ep.Calls, FailedCalls: ep.FailedCalls, Retries: ep.Retries, RateLimited: ep.RateLimited, NTurns: ep.NTurns, TaskType: ep.TaskType, TaskDescription: ep.TaskDescription}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("accounting (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEpisodeErrors(t *testing.T) {
	t.Parallel()
	env := New(Config{})
	boom := &llm.Error{Kind: llm.KindServer, Msg: "boom"}
	good := item(t, Item{ID: "a", Question: "q " + RecordMarker + "1234.", Answer: "1234"})
	if _, err := env.Episode(t.Context(), &replyModel{err: boom}, bench.EpisodeRequest{Item: good}); !errors.Is(err, boom) {
		t.Errorf("model error: Episode = %v, want it wrapped", err)
	}
	for _, raw := range []string{`[1]`, `{"id":"x","question":"","answer":"1"}`, `{"id":"x","question":"q"}`} {
		if _, err := env.Episode(t.Context(), &replyModel{}, bench.EpisodeRequest{Item: bench.Item{ID: "x", Raw: json.RawMessage(raw)}}); err == nil {
			t.Errorf("item %s: Episode succeeded, want an error", raw)
		}
	}
	if env.Name() != "sim" {
		t.Errorf("Name() = %q", env.Name())
	}
}

func TestExtractAnswer(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"<answer>1</answer> then <answer> 2 </answer>": "2",
		"reasoning\n\nfinal line  \n\n":                "final line",
		"":                                             "",
		"<answer>unclosed":                             "<answer>unclosed",
	} {
		if got := ExtractAnswer(in); got != want {
			t.Errorf("ExtractAnswer(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestGoldFromFeedback(t *testing.T) {
	t.Parallel()
	if g, ok := GoldFromFeedback("", "wrong_answer: predicted '\"4821\"' but expected '4821'"); !ok || g != "4821" {
		t.Errorf("GoldFromFeedback = %q, %v", g, ok)
	}
	if _, ok := GoldFromFeedback("no gold here"); ok {
		t.Error("GoldFromFeedback found a gold in text without one")
	}
}

func TestSkillOfRejectsOtherPrompts(t *testing.T) {
	t.Parallel()
	if _, ok := SkillOf("no tags"); ok {
		t.Error("SkillOf found a skill in a message without tags")
	}
	if s, ok := SkillOf(SystemPrompt("")); !ok || s != "" {
		t.Errorf("SkillOf(empty skill prompt) = %q, %v", s, ok)
	}
}
