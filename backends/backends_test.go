package backends_test

import (
	"context"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

type flaky struct {
	errs  []error
	calls int
}

func (f *flaky) Chat(context.Context, *llm.Request) (*llm.Response, error) {
	f.calls++
	if f.calls <= len(f.errs) {
		return nil, f.errs[f.calls-1]
	}
	return &llm.Response{Content: "ok"}, nil
}

func TestRetryHonoursRetryAfterAndKinds(t *testing.T) {
	var slept []time.Duration
	sleep := func(_ context.Context, d time.Duration) error { slept = append(slept, d); return nil }
	m := &flaky{errs: []error{
		&llm.Error{Kind: llm.KindRateLimited, RetryAfter: 3 * time.Second},
		&llm.Error{Kind: llm.KindServer},
	}}
	r := &backends.Retry{Model: m, MaxRetries: 3, Sleep: sleep}
	resp, err := r.Chat(t.Context(), &llm.Request{})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Attempts != 3 || resp.RateLimited != 1 {
		t.Errorf("attempts=%d rate_limited=%d, want 3 and 1", resp.Attempts, resp.RateLimited)
	}
	if len(slept) != 2 || slept[0] < 3*time.Second {
		t.Errorf("slept %v, want the first wait >= Retry-After (3s)", slept)
	}

	// A non-retryable failure returns at once.
	m = &flaky{errs: []error{&llm.Error{Kind: llm.KindAuth}}}
	r = &backends.Retry{Model: m, MaxRetries: 3, Sleep: sleep}
	if _, err := r.Chat(t.Context(), &llm.Request{}); llm.KindOf(err) != llm.KindAuth || m.calls != 1 {
		t.Errorf("auth failure: err %v after %d calls, want auth after 1", err, m.calls)
	}

	// Attempts are bounded.
	m = &flaky{errs: []error{&llm.Error{Kind: llm.KindServer}, &llm.Error{Kind: llm.KindServer}, &llm.Error{Kind: llm.KindServer}}}
	r = &backends.Retry{Model: m, MaxRetries: 2, Sleep: sleep}
	if _, err := r.Chat(t.Context(), &llm.Request{}); llm.KindOf(err) != llm.KindServer || m.calls != 3 {
		t.Errorf("persistent 5xx: err %v after %d calls, want server after 3", err, m.calls)
	}
}

func TestNewRejectsUnknownBackend(t *testing.T) {
	if _, err := backends.New(backends.Spec{Backend: "nope"}, backends.Deps{}); err == nil {
		t.Error("New accepted an unknown backend")
	}
}
