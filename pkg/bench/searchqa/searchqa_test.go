package searchqa_test

import (
	"context"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/benchtest"
	"github.com/skillfleet/skillfleet/pkg/bench/registry"
	"github.com/skillfleet/skillfleet/pkg/bench/searchqa"
)

func TestTruncateContext(t *testing.T) {
	doc := func(n int) string { return "[DOC] " + strings.Repeat("x", n) + " " }
	// Three docs of 2,007 chars each: the first two fit in 6,000, the
	// third would not, so the cut falls at the third "[DOC]".
	ctx := doc(2000) + doc(2000) + doc(2000)
	got := searchqa.TruncateContext(ctx, 6000)
	if strings.Count(got, "[DOC]") != 2 || len(got) > 6000 {
		t.Errorf("kept %d docs, %d chars", strings.Count(got, "[DOC]"), len(got))
	}
	// Short contexts are untouched.
	if got := searchqa.TruncateContext("[DOC] a [DOC] b", 6000); got != "[DOC] a [DOC] b" {
		t.Errorf("short context changed: %q", got)
	}
	// A first document longer than the budget is cut hard and marked.
	got = searchqa.TruncateContext(doc(7000)+doc(10), 6000)
	if len(got) != 6000 || !strings.HasSuffix(got, searchqa.TruncMarker) {
		t.Errorf("hard cut: %d chars, suffix %q", len(got), got[len(got)-30:])
	}
}

func TestEpisode(t *testing.T) {
	s, err := registry.LoadSplits(searchqa.Name, "testdata/split", 0)
	if err != nil {
		t.Fatal(err)
	}
	env, err := registry.New(searchqa.Name, []byte(`{"max_turns":0}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		reply      string
		hard, soft float64
		reason     string
	}{
		// Exact match against the second gold after normalisation.
		{"It is on a river.\n<answer>The river Osk.</answer>", 1, 1, ""},
		// "river osk flows" vs "osk": P 1/3, R 1 → F1 0.5; vs "river osk": P 2/3, R 1 → 0.8.
		{"<answer>River Osk flows</answer>", 0, 0.8, "EM=0: predicted 'River Osk flows' but expected ['Osk', 'the river Osk']"},
		// No tags: the last line is the answer.
		{"I think\nOsk\n", 1, 1, ""},
		{"", 0, 0, "EM=0: predicted '' but expected ['Osk', 'the river Osk']"},
	} {
		m := benchtest.Text(tc.reply)
		ep, err := env.Episode(context.Background(), m, bench.EpisodeRequest{Item: s.Train[0], Skill: "PREFER the shortest answer.", Model: "t"})
		if err != nil {
			t.Fatal(err)
		}
		if ep.Hard != tc.hard || abs(ep.Soft-tc.soft) > 1e-9 || ep.FailReason != tc.reason {
			t.Errorf("reply %q: hard %v soft %v reason %q; want %v %v %q", tc.reply, ep.Hard, ep.Soft, ep.FailReason, tc.hard, tc.soft, tc.reason)
		}
		req := m.Last()
		if !strings.Contains(req.Messages[0].Content, "PREFER the shortest answer.") || !strings.Contains(req.Messages[1].Content, "Which river flows") {
			t.Errorf("prompt lacks the skill or the question: %+v", req.Messages)
		}
		if ep.Calls != 1 || ep.Usage.InputTokens != 10 || ep.TaskType != "geography" || ep.NTurns != 1 {
			t.Errorf("episode accounting: %+v", ep)
		}
		last := ep.Messages[len(ep.Messages)-1]
		if !strings.Contains(last.Content, "gold answer") {
			t.Errorf("trajectory does not end with the evaluation: %q", last.Content)
		}
	}
}

func TestSelfReviewTurns(t *testing.T) {
	s, _ := registry.LoadSplits(searchqa.Name, "testdata/split", 0)
	env, _ := registry.New(searchqa.Name, []byte(`{"max_turns":2}`))
	m := benchtest.Text("<answer>1886</answer>", "Checked again. <answer>1887</answer>")
	ep, err := env.Episode(context.Background(), m, bench.EpisodeRequest{Item: s.Train[1], Skill: "x"})
	if err != nil {
		t.Fatal(err)
	}
	// The second (review) turn's answer counts.
	if m.Calls() != 2 || ep.Hard != 1 || ep.NTurns != 2 || ep.Calls != 2 {
		t.Errorf("calls %d, hard %v, turns %d", m.Calls(), ep.Hard, ep.NTurns)
	}
}

func TestModelErrorIsAnError(t *testing.T) {
	s, _ := registry.LoadSplits(searchqa.Name, "testdata/split", 0)
	env, _ := registry.New(searchqa.Name, nil)
	m := &benchtest.Scripted{Err: context.DeadlineExceeded}
	if _, err := env.Episode(context.Background(), m, bench.EpisodeRequest{Item: s.Val[0]}); err == nil || !strings.Contains(err.Error(), "sq-val-1") {
		t.Errorf("err = %v, want one naming the item", err)
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
