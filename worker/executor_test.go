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
