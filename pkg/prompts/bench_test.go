package prompts_test

import (
	"encoding/json"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// BenchmarkRenderAnalyst renders the recorded analyst payload as a worker
// does: from the task's JSON, with the step buffer shown.
func BenchmarkRenderAnalyst(b *testing.B) {
	s := prompts.New(nil)
	raw := recordedAnalystPayload(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := s.Render(prompts.AnalystFailure, prompts.ModePatch, raw, prompts.RenderOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderMerge renders a small prompt (a merge of two patches),
// where the system message dominates.
func BenchmarkRenderMerge(b *testing.B) {
	s := prompts.New(nil)
	in := prompts.SamplePayload(prompts.MergeFailure, prompts.ModePatch, false)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := s.Render(prompts.MergeFailure, prompts.ModePatch, in, prompts.RenderOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRenderStepBuffer renders the recorded payload's step buffer.
func BenchmarkRenderStepBuffer(b *testing.B) {
	var in prompts.AnalystInput
	if err := json.Unmarshal(recordedAnalystPayload(b), &in); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		prompts.RenderStepBuffer(in.StepBuffer)
	}
}

// BenchmarkExtractPayload reads the payload back from the rendered
// analyst user message.
func BenchmarkExtractPayload(b *testing.B) {
	_, user, err := prompts.New(nil).Render(prompts.AnalystFailure, prompts.ModePatch, recordedAnalystPayload(b), prompts.RenderOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := prompts.ExtractPayload(user); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNew builds a Set without overrides, as each worker executor
// (and each in-memory test run) does.
func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		prompts.New(nil)
	}
}
