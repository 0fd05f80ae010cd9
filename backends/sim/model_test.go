package sim

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

func targetRequest(skill, question string, seed int64) *llm.Request {
	return &llm.Request{Model: "target", Seed: &seed, Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: simbench.SystemPrompt(skill)},
		{Role: llm.RoleUser, Content: simbench.UserPrompt(question)},
	}}
}

func answer(t *testing.T, m *Model, skill, question string, seed int64) string {
	t.Helper()
	resp, err := m.Chat(t.Context(), targetRequest(skill, question, seed))
	if err != nil {
		t.Fatal(err)
	}
	return simbench.ExtractAnswer(resp.Content)
}

func TestTargetFollowsCoverage(t *testing.T) {
	t.Parallel()
	m := quiet()
	km, _ := simbench.Lookup("units_km")
	hex, _ := simbench.Lookup("hex")
	q := "Note " + km.Cue + ". It also refers to " + hex.Cue + ". " + simbench.RecordMarker + "4821."
	tests := []struct {
		name, skill, want string
	}{
		{"no rules", "# Skill", km.Wrong("4821")},
		{"first rule only", "- " + km.Rule, hex.Wrong("4821")},
		{"second rule only", "- " + hex.Paraphrases[0], km.Wrong("4821")},
		{"both rules", "- " + km.Rule + "\n- " + hex.Rule, "4821"},
		{"both rules, case changed", strings.ToUpper("- " + km.Paraphrases[2] + "\n- " + hex.Rule), "4821"},
		{"harmful breaks a covered rule", "- " + km.Rule + "\n- " + hex.Rule + "\n- " + hex.Harmful, hex.Wrong("4821")},
		{"unrelated harmful is harmless", "- " + km.Rule + "\n- " + hex.Rule + "\n- " + mustLookup("doubled").Harmful, "4821"},
		{"vague lines do not count", "- " + km.Vague + "\n- " + hex.Vague, km.Wrong("4821")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := answer(t, m, tc.skill, q, 0); got != tc.want {
				t.Errorf("answer = %q, want %q", got, tc.want)
			}
		})
	}
	if got := answer(t, m, "", "What is the value?", 0); got != "unknown" {
		t.Errorf("question without a value: answer = %q, want unknown", got)
	}
}

func mustLookup(id string) simbench.Pitfall {
	p, ok := simbench.Lookup(id)
	if !ok {
		panic("no pitfall " + id)
	}
	return p
}

func TestTargetIsDeterministic(t *testing.T) {
	t.Parallel()
	m := New(Options{Epsilon: 0.5}) // much noise, so that seeds visibly matter
	w, _ := simbench.Generate(simbench.PresetDemo, 1)
	skill, _ := simbench.ReferenceSkill(simbench.PresetDemo, 1)
	differ := 0
	for _, it := range w.Test[:40] {
		req := targetRequest(skill, it.Question, 5)
		a, err := m.Chat(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := New(Options{Epsilon: 0.5}).Chat(t.Context(), targetRequest(skill, it.Question, 5))
		if diff := cmp.Diff(a, b); diff != "" {
			t.Fatalf("same request, different replies (-first +second):\n%s", diff)
		}
		if answer(t, m, skill, it.Question, 6) != simbench.ExtractAnswer(a.Content) {
			differ++
		}
	}
	if differ == 0 {
		t.Error("seeds 5 and 6 never gave different answers under heavy noise")
	}
}

func TestTargetNoiseRate(t *testing.T) {
	t.Parallel()
	w, _ := simbench.Generate(simbench.PresetPaper, 2)
	ref, _ := simbench.ReferenceSkill(simbench.PresetPaper, 2)
	m := New(Options{Epsilon: 0.1})
	wrong := 0
	for _, it := range w.Test {
		if answer(t, m, ref, it.Question, 0) != it.Answer {
			wrong++
		}
	}
	if rate := float64(wrong) / float64(len(w.Test)); rate < 0.07 || rate > 0.13 {
		t.Errorf("wrong-answer rate with epsilon 0.1 and every rule = %.3f, want about 0.1", rate)
	}
}

func TestTargetDilution(t *testing.T) {
	t.Parallel()
	w, _ := simbench.Generate(simbench.PresetDemo, 4)
	ref, _ := simbench.ReferenceSkill(simbench.PresetDemo, 4)
	bloated := ref + strings.Repeat("- "+simbench.Platitudes()[0]+"\n", 80) // ~1000 tokens over budget
	m := New(Options{Epsilon: -1})
	lean, fat := score(t, m, w.Test, ref), score(t, m, w.Test, bloated)
	if lean != 1 || fat > 0.8 {
		t.Errorf("score lean %.3f, bloated %.3f; want 1 and clearly lower", lean, fat)
	}
	if unlimited := score(t, New(Options{Epsilon: -1, LengthBudget: -1}), w.Test, bloated); unlimited != 1 {
		t.Errorf("score without a length budget = %.3f, want 1", unlimited)
	}
}

// TestScores pins the headline numbers: a weak seed skill scores under
// 0.4 on the test split, a skill covering every pitfall over 0.85.
func TestScores(t *testing.T) {
	t.Parallel()
	m := New(Options{})
	for _, preset := range []string{simbench.PresetDemo, simbench.PresetPaper} {
		for _, seed := range []int64{0, 1} {
			t.Run(fmt.Sprintf("%s/%d", preset, seed), func(t *testing.T) {
				t.Parallel()
				w, _ := simbench.Generate(preset, seed)
				seedSkill, _ := simbench.SeedSkill(preset, seed)
				ref, _ := simbench.ReferenceSkill(preset, seed)
				weak, strong := score(t, m, w.Test, seedSkill), score(t, m, w.Test, ref)
				t.Logf("seed skill %.3f, reference skill %.3f", weak, strong)
				if weak >= 0.4 || strong <= 0.85 {
					t.Errorf("seed skill %.3f (want < 0.4), reference skill %.3f (want > 0.85)", weak, strong)
				}
			})
		}
	}
}

func TestUsageAndTruncation(t *testing.T) {
	t.Parallel()
	req := targetRequest("- rule", "Note the serial code. "+simbench.RecordMarker+"1234.", 0)
	resp, err := quiet().Chat(t.Context(), req)
	if err != nil {
		t.Fatal(err)
	}
	n := len(req.Messages[0].Content) + len(req.Messages[1].Content)
	want := llm.Usage{InputTokens: int64((n + 3) / 4), OutputTokens: llm.EstimateTokens(resp.Content)}
	if resp.Usage != want || resp.Model != "target" || resp.FinishReason != "stop" || resp.Attempts != 1 {
		t.Errorf("response = %+v, want usage %+v, model target, finish stop", resp, want)
	}
	req.MaxTokens = 3
	short, _ := quiet().Chat(t.Context(), req)
	if short.FinishReason != "length" || len(short.Content) > 12 {
		t.Errorf("max_tokens 3: finish %q, content %q", short.FinishReason, short.Content)
	}
}

func TestUnreadableRequests(t *testing.T) {
	t.Parallel()
	user := func(s string) *llm.Request {
		return &llm.Request{Model: "opt", Messages: []llm.Message{{Role: llm.RoleUser, Content: s}}}
	}
	tests := []struct {
		name string
		req  *llm.Request
		want string
	}{
		{"no payload", user("Hello there."), "no ```json payload"},
		{"no kind", user("x\n```json\n{\"skill\":\"s\"}\n```\n"), "no \"kind\""},
		{"unknown kind", user("x\n```json\n{\"kind\":\"poem\"}\n```\n"), "poem request: unknown request kind"},
		{"not json", user("x\n```json\n{\"kind\":\n```\n"), "request payload"},
		{"changed shape", user("x\n```json\n{\"kind\":\"ranking\",\"mode\":\"patch\",\"skill\":\"s\",\"budget\":1,\"items\":[],\"extra\":1}\n```\n"), "ranking request: ranking payload: decode payload: json: unknown field \"extra\""},
		{"wrong type", user("x\n```json\n{\"kind\":\"analyst_failure\",\"mode\":\"patch\",\"budget\":\"two\"}\n```\n"), "analyst_failure request: analyst_failure payload"},
		{"unknown mode", user("x\n```json\n{\"kind\":\"merge_failure\",\"mode\":\"freestyle\",\"skill\":\"s\",\"level\":1,\"patches\":[]}\n```\n"), "merge_failure request: merge_failure payload: unknown mode \"freestyle\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			resp, err := quiet().Chat(t.Context(), tc.req)
			var le *llm.Error
			if !errors.As(err, &le) || le.Kind != llm.KindInvalidRequest || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Chat = %v, %v; want an invalid_request error containing %q", resp, err, tc.want)
			}
		})
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := quiet().Chat(ctx, targetRequest("", "q", 0)); llm.KindOf(err) != llm.KindCancelled {
		t.Errorf("cancelled context: Chat error %v, want kind cancelled", err)
	}
}

func TestRequestKind(t *testing.T) {
	t.Parallel()
	_, user, err := prompts.New(nil).Render(prompts.Consolidate, "", prompts.ConsolidateInput{Notes: []string{"a"}}, prompts.RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		req  *llm.Request
		want string
	}{
		{targetRequest("s", "q", 0), KindTarget},
		{&llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: user}}}, prompts.Consolidate},
		{&llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Content: "hi"}}}, ""},
	} {
		if got := RequestKind(tc.req); got != tc.want {
			t.Errorf("RequestKind = %q, want %q", got, tc.want)
		}
	}
}

// BenchmarkTarget measures one in-process target reply on the paper
// preset's reference skill (the paper preset makes ~10k such calls).
func BenchmarkTarget(b *testing.B) {
	w, _ := simbench.Generate(simbench.PresetPaper, 0)
	ref, _ := simbench.ReferenceSkill(simbench.PresetPaper, 0)
	m := New(Options{})
	reqs := make([]*llm.Request, len(w.Test))
	for i, it := range w.Test {
		reqs[i] = targetRequest(ref, it.Question, 0)
	}
	for i := 0; b.Loop(); i++ {
		if _, err := m.Chat(b.Context(), reqs[i%len(reqs)]); err != nil {
			b.Fatal(err)
		}
	}
}
