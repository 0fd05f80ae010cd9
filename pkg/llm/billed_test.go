package llm_test

import (
	"fmt"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

func TestBilledUsage(t *testing.T) {
	t.Parallel()
	u := llm.Usage{InputTokens: 9, OutputTokens: 2}
	err := fmt.Errorf("call: %w", &llm.BilledError{Usage: u, Err: &llm.Error{Kind: llm.KindInvalidReply}})
	if got := llm.BilledUsage(err); got != u {
		t.Errorf("BilledUsage() = %+v, want %+v", got, u)
	}
	if llm.KindOf(err) != llm.KindInvalidReply {
		t.Errorf("KindOf() = %v, want invalid_reply through the BilledError", llm.KindOf(err))
	}
	if got := llm.BilledUsage(&llm.Error{Kind: llm.KindServer}); got != (llm.Usage{}) {
		t.Errorf("BilledUsage(unbilled) = %+v, want zero", got)
	}
}
