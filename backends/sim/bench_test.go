package sim

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// analystRequest is an analyst request as a worker sends it: the recorded
// paper-preset payload of the prompts package's tests (six failed
// trajectories, five steps in the step buffer), rendered.
func analystRequest(b *testing.B) *llm.Request {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "pkg", "prompts", "testdata", "analyst_failure.json"))
	if err != nil {
		b.Fatal(err)
	}
	system, user, err := prompts.New(nil).Render(prompts.AnalystFailure, prompts.ModePatch, raw, prompts.RenderOptions{})
	if err != nil {
		b.Fatal(err)
	}
	return &llm.Request{Model: "opt", Messages: []llm.Message{{Role: llm.RoleSystem, Content: system}, {Role: llm.RoleUser, Content: user}}}
}

// paperTargetRequest is a paper-preset target request under the preset's
// seed skill.
func paperTargetRequest(b *testing.B) *llm.Request {
	b.Helper()
	w, err := simbench.Generate(simbench.PresetPaper, 7)
	if err != nil {
		b.Fatal(err)
	}
	skill, err := simbench.SeedSkill(simbench.PresetPaper, 7)
	if err != nil {
		b.Fatal(err)
	}
	return targetRequest(skill, w.Train[0].Question, 0)
}

// BenchmarkSimOptimizerParse reads an analyst request into its input as
// Chat does before it answers: the payload located, its kind, the strict
// decoding.
func BenchmarkSimOptimizerParse(b *testing.B) {
	req := analystRequest(b)
	b.ReportAllocs()
	for b.Loop() {
		kind, payload, ok := peekPayload(req)
		if !ok {
			b.Fatal("peekPayload: not an optimizer request")
		}
		var in prompts.AnalystInput
		if err := decode(kind, payload, &in); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSimAnalyst answers an analyst request.
func BenchmarkSimAnalyst(b *testing.B) {
	m := New(Options{})
	req := analystRequest(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Chat(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSimTarget answers a target request (a paper run makes about
// 8,300 of them).
func BenchmarkSimTarget(b *testing.B) {
	m := New(Options{})
	req := paperTargetRequest(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.Chat(context.Background(), req); err != nil {
			b.Fatal(err)
		}
	}
}
