package worker

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/llm"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

func TestFailureKeepsTheUsageOfFailedAttempts(t *testing.T) {
	err := fmt.Errorf("rollout item 7: %w", &backends.RetryError{
		Attempts: 3, RateLimited: 2, FailedUsage: llm.Usage{InputTokens: 120, OutputTokens: 30},
		Err: &llm.Error{Kind: llm.KindRateLimited, Msg: "429"},
	})
	r := failure(err)
	if r.GetOutcome() != pb.Outcome_OUTCOME_RATE_LIMITED {
		t.Errorf("outcome = %v, want RATE_LIMITED", r.GetOutcome())
	}
	u := r.GetUsage()
	if u.GetInputTokens() != 120 || u.GetOutputTokens() != 30 || u.GetCalls() != 3 || u.GetFailedCalls() != 3 || u.GetRetries() != 2 || u.GetRateLimited() != 2 {
		t.Errorf("usage = %v, want 120 in / 30 out over 3 failed calls, 2 retries, 2 rate-limited", u)
	}
	if r := failure(&llm.Error{Kind: llm.KindServer, Msg: "500"}); r.GetUsage() != nil || r.GetOutcome() != pb.Outcome_OUTCOME_MODEL_ERROR {
		t.Errorf("plain server error = %v, want MODEL_ERROR without usage", r)
	}
}

// TestFailureOutcomes: the outcome decides whether a task is delivered
// again; a request the provider rejected as invalid never is.
func TestFailureOutcomes(t *testing.T) {
	for _, tc := range []struct {
		kind  llm.ErrorKind
		want  pb.Outcome
		again bool
	}{
		{llm.KindRateLimited, pb.Outcome_OUTCOME_RATE_LIMITED, true},
		{llm.KindTimeout, pb.Outcome_OUTCOME_TIMEOUT, true},
		{llm.KindServer, pb.Outcome_OUTCOME_MODEL_ERROR, true},
		{llm.KindAuth, pb.Outcome_OUTCOME_MODEL_ERROR, true}, // another worker may hold a working key
		{llm.KindInvalidReply, pb.Outcome_OUTCOME_INVALID_REPLY, true},
		{llm.KindInvalidRequest, pb.Outcome_OUTCOME_BAD_TASK, false},
	} {
		r := failure(fmt.Errorf("item 3: %w", &llm.Error{Kind: tc.kind, Status: 400}))
		if r.GetOutcome() != tc.want || retryable(r.GetOutcome()) != tc.again {
			t.Errorf("%v: outcome %v (delivered again: %v), want %v (%v)", tc.kind, r.GetOutcome(), retryable(r.GetOutcome()), tc.want, tc.again)
		}
	}
}

// closingEnv is a benchmark that holds something to release.
type closingEnv struct {
	name   string
	closed *int
}

func (e closingEnv) Name() string { return e.name }
func (e closingEnv) Episode(context.Context, llm.Model, bench.EpisodeRequest) (*bench.Episode, error) {
	return nil, errors.New("not played here")
}
func (e closingEnv) Close() error { *e.closed++; return nil }

// TestExecutorCloseReleasesItsBenchmarks: Close closes each benchmark the
// executor built, once, and the next task builds it again.
func TestExecutorCloseReleasesItsBenchmarks(t *testing.T) {
	closed, built := 0, 0
	x := NewExecutor(ExecutorDeps{NewEnv: func(name string, _ []byte) (bench.Env, error) {
		built++
		return closingEnv{name: name, closed: &closed}, nil
	}})
	for _, cfg := range []string{`{"a":1}`, `{"a":2}`, `{"a":1}`} {
		if _, err := x.env("textgame", []byte(cfg)); err != nil {
			t.Fatal(err)
		}
	}
	if built != 2 {
		t.Fatalf("built %d benchmarks for two configs", built)
	}
	if err := x.Close(); err != nil || closed != 2 {
		t.Fatalf("Close: %v, closed %d of 2", err, closed)
	}
	if err := x.Close(); err != nil || closed != 2 {
		t.Fatalf("second Close: %v, closed %d (want still 2)", err, closed)
	}
	if _, err := x.env("textgame", []byte(`{"a":1}`)); err != nil || built != 3 {
		t.Fatalf("after Close: %v, built %d (want 3)", err, built)
	}
}
