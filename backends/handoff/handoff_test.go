package handoff_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/backends/handoff"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

func rollout(text string, seed int64) *llm.Request {
	return &llm.Request{Model: "any", Stage: "rollout", Seed: &seed, Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: "You are the user's coding agent."}, {Role: llm.RoleUser, Content: text}}}
}

func TestIDsSeparateSamplesNotModelNames(t *testing.T) {
	a, _ := handoff.ID(rollout("the arXiv id of Attention is all you need", 0))
	b, _ := handoff.ID(rollout("the arXiv id of Attention is all you need", 1))
	again, _ := handoff.ID(rollout("the arXiv id of Attention is all you need", 0))
	other := rollout("the arXiv id of Attention is all you need", 0)
	other.Model = "another-label"
	c, _ := handoff.ID(other)
	judge := rollout("the arXiv id of Attention is all you need", 0)
	judge.Stage = "sleep_judge"
	d, _ := handoff.ID(judge)
	if a == b {
		t.Errorf("two samples of one prompt share id %s", a)
	}
	if a != again || a != c {
		t.Errorf("one request got ids %s, %s, %s (the model name is a label)", a, again, c)
	}
	if a == d {
		t.Errorf("the judge's call and the target's share id %s", a)
	}
}

func TestPendingAnsweredEmptyAndUnreadable(t *testing.T) {
	dir := t.TempDir()
	s, err := handoff.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := handoff.Open(dir + "/."); again != s {
		t.Fatal("Open of one directory returned two stores")
	}
	ctx := context.Background()
	req := rollout("give the commit message", 3)
	_, err = s.Chat(ctx, req)
	var pe *handoff.PendingError
	if !errors.As(err, &pe) || llm.KindOf(err) != llm.KindInvalidRequest || llm.KindOf(err).Retryable() {
		t.Fatalf("unanswered call: %v (kind %v), want a non-retryable pending error", err, llm.KindOf(err))
	}
	if pe.Role != "target" || !strings.HasPrefix(pe.AnswerFile, filepath.Join(dir, "answers")) {
		t.Fatalf("pending error %+v", pe)
	}
	if err := s.Err(); !errors.Is(err, handoff.ErrPending) {
		t.Fatalf("Err after a pending call: %v", err)
	}
	p := s.Pending()
	if len(p) != 1 || p[0].ID != pe.ID || p[0].Sample == nil || *p[0].Sample != 3 || !strings.Contains(p[0].Prompt, "=== USER ===\ngive the commit message") {
		t.Fatalf("pending %+v", p)
	}

	// The answer's bytes are the reply; usage is an estimate.
	if err := os.MkdirAll(s.AnswersDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(pe.AnswerFile, []byte("fix(parser): return an empty tree"), 0o644); err != nil {
		t.Fatal(err)
	}
	s.Begin()
	resp, err := s.Chat(ctx, req)
	if err != nil || resp.Content != "fix(parser): return an empty tree" || resp.Usage.InputTokens == 0 || resp.Usage.OutputTokens == 0 {
		t.Fatalf("answered call: %+v, %v", resp, err)
	}
	if n, tok := s.Counts(); n != 1 || tok != resp.Usage.InputTokens+resp.Usage.OutputTokens {
		t.Fatalf("counts %d %d", n, tok)
	}
	if err := s.Err(); err != nil {
		t.Fatalf("Err with every call answered: %v", err)
	}

	// An empty answer names its file and the prompt id.
	req2 := rollout("another request", 0)
	id2, _ := handoff.ID(req2)
	empty := filepath.Join(s.AnswersDir(), id2+".md")
	if err := os.WriteFile(empty, []byte(" \n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = s.Chat(ctx, req2)
	var ae *handoff.AnswerError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), empty) || !strings.Contains(err.Error(), id2) || !strings.Contains(err.Error(), "empty") {
		t.Fatalf("empty answer: %v", err)
	}
	if err := s.Err(); !errors.As(err, &ae) {
		t.Fatalf("Err after an empty answer: %v", err)
	}

	// An answer that is a directory cannot be read.
	s.Begin()
	req3 := rollout("a third request", 0)
	id3, _ := handoff.ID(req3)
	if err := os.Mkdir(filepath.Join(s.AnswersDir(), id3+".md"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err = s.Chat(ctx, req3); !errors.As(err, &ae) || !strings.Contains(err.Error(), "cannot be read") || !strings.Contains(err.Error(), id3) {
		t.Fatalf("unreadable answer: %v", err)
	}
}

// Through backends.New the pending error is not retried and does not open
// the circuit: a batch of pending calls still leaves later calls served.
func TestThroughBackendsNew(t *testing.T) {
	dir := t.TempDir()
	m, err := backends.New(context.Background(), backends.Spec{Backend: backends.BackendHandoff, Model: "session", Options: map[string]string{"dir": dir}}, backends.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if _, err := m.Chat(context.Background(), rollout("task", int64(i))); llm.KindOf(err) != llm.KindInvalidRequest {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	s, _ := handoff.Open(dir)
	p := s.Pending()
	if len(p) != 30 {
		t.Fatalf("%d pending, want 30", len(p))
	}
	if err := os.MkdirAll(s.AnswersDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p[0].AnswerFile, []byte("done"), 0o644); err != nil {
		t.Fatal(err)
	}
	seed := *p[0].Sample
	resp, err := m.Chat(context.Background(), rollout("task", seed))
	if err != nil || resp.Content != "done" {
		t.Fatalf("after 30 pending calls: %+v, %v", resp, err)
	}
	if _, err := backends.New(context.Background(), backends.Spec{Backend: backends.BackendHandoff, Model: "x"}, backends.Deps{}); err == nil || !strings.Contains(err.Error(), "option dir") {
		t.Fatalf("no dir: %v", err)
	}
}

func TestWriteBatchRedactsAndIsStable(t *testing.T) {
	dir := t.TempDir()
	s, _ := handoff.Open(dir)
	ctx := context.Background()
	zero := 0.0
	_, _ = s.Chat(ctx, &llm.Request{Model: "m", Stage: "sleep_reflect", Temperature: &zero, JSONMode: true,
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "token SECRET-1234 in the payload"}}})
	_, _ = s.Chat(ctx, rollout("first", 0))
	_, _ = s.Chat(ctx, rollout("second", 0))
	redact := func(x string) string { return strings.ReplaceAll(x, "SECRET-1234", "[REDACTED]") }
	n, err := s.WriteBatch(redact)
	if err != nil || n != 3 {
		t.Fatalf("WriteBatch: %d, %v", n, err)
	}
	first, _ := os.ReadFile(s.PendingFile())
	prompts, _ := os.ReadFile(s.PromptsFile())
	if strings.Contains(string(first), "SECRET-1234") || strings.Contains(string(prompts), "SECRET-1234") {
		t.Fatal("a secret reached the batch")
	}
	var b handoff.Batch
	if err := json.Unmarshal(first, &b); err != nil {
		t.Fatal(err)
	}
	if b.Format != handoff.Format || b.AnswersDir != s.AnswersDir() || len(b.Pending) != 3 {
		t.Fatalf("batch %+v", b)
	}
	if b.Pending[0].Role != "optimizer" || b.Pending[0].Request.ResponseFormat["type"] != "json_object" || b.Pending[1].Role != "target" {
		t.Fatalf("batch order or fields: %+v", b.Pending)
	}
	for _, c := range b.Pending {
		if c.AnswerFile != filepath.Join(b.AnswersDir, c.ID+".md") || !strings.Contains(string(prompts), c.AnswerFile) {
			t.Errorf("call %s: answer file %s", c.ID, c.AnswerFile)
		}
	}
	// The same calls in another order write the same bytes.
	s.Begin()
	_, _ = s.Chat(ctx, rollout("second", 0))
	_, _ = s.Chat(ctx, rollout("first", 0))
	_, _ = s.Chat(ctx, &llm.Request{Model: "m", Stage: "sleep_reflect", Temperature: &zero, JSONMode: true,
		Messages: []llm.Message{{Role: llm.RoleUser, Content: "token SECRET-1234 in the payload"}}})
	if _, err := s.WriteBatch(redact); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(s.PendingFile()); string(again) != string(first) {
		t.Fatalf("a rerun wrote another batch:\n%s\nvs\n%s", again, first)
	}
	if err := s.ClearBatch(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(s.PendingFile()); !os.IsNotExist(err) {
		t.Fatalf("pending.json after ClearBatch: %v", err)
	}
}
