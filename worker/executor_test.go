package worker

import (
	"fmt"
	"testing"

	"github.com/skillfleet/skillfleet/backends"
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
