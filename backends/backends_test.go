package backends_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// script is a model that answers from a list of outcomes, then "ok".
type script struct {
	mu    sync.Mutex
	errs  []error
	calls int
	reqs  []llm.Request
}

func (s *script) Chat(_ context.Context, req *llm.Request) (*llm.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	s.reqs = append(s.reqs, *req)
	if s.calls <= len(s.errs) && s.errs[s.calls-1] != nil {
		return nil, s.errs[s.calls-1]
	}
	return &llm.Response{Content: "ok", Attempts: 1, Usage: llm.Usage{InputTokens: 10, OutputTokens: 5}}, nil
}

func (s *script) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.calls
}

func errOf(k llm.ErrorKind) error { return &llm.Error{Kind: k} }

// sleeper records waits without waiting.
type sleeper struct {
	mu    sync.Mutex
	slept []time.Duration
}

func (s *sleeper) Sleep(_ context.Context, d time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.slept = append(s.slept, d)
	return nil
}

// ceiling is a jitter that always draws the maximum, so waits are exact.
func ceiling(d time.Duration) time.Duration { return d }

func TestRetry(t *testing.T) {
	t.Parallel()
	billed := &llm.BilledError{Usage: llm.Usage{InputTokens: 7, OutputTokens: 1}, Err: errOf(llm.KindServer)}
	for _, tc := range []struct {
		name        string
		errs        []error
		policy      backends.RetryPolicy
		wantCalls   int
		wantKind    llm.ErrorKind // KindUnknown = success
		wantSlept   []time.Duration
		wantLimited int
		wantFailed  llm.Usage
	}{
		{
			name:      "honours Retry-After, never sooner",
			errs:      []error{&llm.Error{Kind: llm.KindRateLimited, RetryAfter: 3 * time.Second}, errOf(llm.KindServer)},
			policy:    backends.RetryPolicy{MaxRetries: 4, Base: time.Second},
			wantCalls: 3, wantSlept: []time.Duration{3 * time.Second, 2 * time.Second}, wantLimited: 1,
		},
		{
			name:      "back-off doubles up to the cap",
			errs:      []error{errOf(llm.KindTransport), errOf(llm.KindTimeout), errOf(llm.KindServer), errOf(llm.KindServer)},
			policy:    backends.RetryPolicy{MaxRetries: 4, Base: time.Second, Cap: 5 * time.Second},
			wantCalls: 5, wantSlept: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 5 * time.Second},
		},
		{
			name:      "a Retry-After shorter than the back-off does not shorten it",
			errs:      []error{&llm.Error{Kind: llm.KindRateLimited, RetryAfter: time.Millisecond}},
			policy:    backends.RetryPolicy{MaxRetries: 1, Base: time.Second},
			wantCalls: 2, wantSlept: []time.Duration{time.Second}, wantLimited: 1,
		},
		{
			name: "non-retryable kinds return at once",
			errs: []error{errOf(llm.KindAuth)}, policy: backends.RetryPolicy{MaxRetries: 4},
			wantCalls: 1, wantKind: llm.KindAuth,
		},
		{
			name: "invalid replies are not retried",
			errs: []error{errOf(llm.KindInvalidReply)}, policy: backends.RetryPolicy{MaxRetries: 4},
			wantCalls: 1, wantKind: llm.KindInvalidReply,
		},
		{
			name: "attempts are bounded; failed usage is counted",
			errs: []error{billed, billed, billed}, policy: backends.RetryPolicy{MaxRetries: 2, Base: time.Second},
			wantCalls: 3, wantKind: llm.KindServer, wantSlept: []time.Duration{time.Second, 2 * time.Second},
			wantFailed: llm.Usage{InputTokens: 21, OutputTokens: 3},
		},
		{
			name: "failed usage is added to the reply",
			errs: []error{billed}, policy: backends.RetryPolicy{MaxRetries: 2, Base: time.Second},
			wantCalls: 2, wantSlept: []time.Duration{time.Second}, wantFailed: llm.Usage{InputTokens: 7, OutputTokens: 1},
		},
		{
			name:      "a Retry-After beyond MaxRetryAfter hands back at once",
			errs:      []error{&llm.Error{Kind: llm.KindRateLimited, RetryAfter: time.Hour}},
			policy:    backends.RetryPolicy{MaxRetries: 4, MaxRetryAfter: time.Minute},
			wantCalls: 1, wantKind: llm.KindRateLimited, wantLimited: 1,
		},
		{
			name:      "an open circuit is not retried",
			errs:      []error{&llm.Error{Kind: llm.KindServer, Err: backends.ErrCircuitOpen, RetryAfter: time.Second}},
			policy:    backends.RetryPolicy{MaxRetries: 4},
			wantCalls: 1, wantKind: llm.KindServer,
		},
		{
			name: "no retries",
			errs: []error{errOf(llm.KindServer)}, policy: backends.RetryPolicy{},
			wantCalls: 1, wantKind: llm.KindServer,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			m := &script{errs: tc.errs}
			var s sleeper
			p := tc.policy
			p.Sleep, p.Jitter = s.Sleep, ceiling
			resp, err := backends.NewRetry(m, p).Chat(t.Context(), &llm.Request{})
			if m.calls != tc.wantCalls {
				t.Errorf("calls = %d, want %d", m.calls, tc.wantCalls)
			}
			if diff := cmp.Diff(tc.wantSlept, s.slept); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
			if tc.wantKind == llm.KindUnknown {
				if err != nil {
					t.Fatalf("Chat() = %v", err)
				}
				if resp.Attempts != tc.wantCalls || resp.RateLimited != tc.wantLimited {
					t.Errorf("Attempts, RateLimited = %d, %d; want %d, %d", resp.Attempts, resp.RateLimited, tc.wantCalls, tc.wantLimited)
				}
				if diff := cmp.Diff(tc.wantFailed, resp.FailedUsage); diff != "" {
					t.Errorf("FailedUsage (-want +got):\n%s", diff)
				}
				return
			}
			var re *backends.RetryError
			if !errors.As(err, &re) {
				t.Fatalf("Chat() = %v (%T), want a *RetryError", err, err)
			}
			if llm.KindOf(err) != tc.wantKind {
				t.Errorf("kind = %v, want %v", llm.KindOf(err), tc.wantKind)
			}
			var le *llm.Error
			if !errors.As(err, &le) || le != lastLLMError(tc.errs[tc.wantCalls-1]) {
				t.Errorf("Chat() does not wrap the last attempt's typed error unchanged: %v", err)
			}
			if re.Attempts != tc.wantCalls || re.RateLimited != tc.wantLimited {
				t.Errorf("RetryError attempts, rate limited = %d, %d; want %d, %d", re.Attempts, re.RateLimited, tc.wantCalls, tc.wantLimited)
			}
			if diff := cmp.Diff(tc.wantFailed, re.FailedUsage); diff != "" {
				t.Errorf("RetryError.FailedUsage (-want +got):\n%s", diff)
			}
		})
	}
}

func lastLLMError(err error) *llm.Error {
	var le *llm.Error
	errors.As(err, &le)
	return le
}

func TestRetryJitterStaysWithinTheBackoff(t *testing.T) {
	t.Parallel()
	var s sleeper
	errs := make([]error, 200)
	for i := range errs {
		errs[i] = errOf(llm.KindServer)
	}
	p := backends.RetryPolicy{MaxRetries: 200, Base: 100 * time.Millisecond, Cap: time.Second, Sleep: s.Sleep}
	if _, err := backends.NewRetry(&script{errs: errs}, p).Chat(t.Context(), &llm.Request{}); err != nil {
		t.Fatal(err)
	}
	distinct := map[time.Duration]bool{}
	for i, d := range s.slept {
		if ceil := p.Backoff(i + 1); d < 0 || d > ceil {
			t.Errorf("wait %d = %v, want within [0, %v]", i+1, d, ceil)
		}
		distinct[d] = true
	}
	if len(distinct) < 100 {
		t.Errorf("only %d distinct waits in 200: the jitter is not random", len(distinct))
	}
}

func TestRetryStopsWhenTheDeadlineComesFirst(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(t.Context(), time.Hour)
	defer cancel()
	m := &script{errs: []error{&llm.Error{Kind: llm.KindRateLimited, RetryAfter: 90 * time.Minute}}}
	_, err := backends.NewRetry(m, backends.RetryPolicy{MaxRetries: 3, MaxRetryAfter: 2 * time.Hour}).Chat(ctx, &llm.Request{})
	if llm.KindOf(err) != llm.KindRateLimited || m.calls != 1 {
		t.Errorf("Chat() = %v after %d calls, want the rate limit back at once", err, m.calls)
	}
}

func TestRetryCancelledWhileBackingOff(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	sleep := func(ctx context.Context, _ time.Duration) error {
		cancel()
		<-ctx.Done()
		return ctx.Err()
	}
	_, err := backends.NewRetry(&script{errs: []error{errOf(llm.KindServer)}}, backends.RetryPolicy{MaxRetries: 3, Sleep: sleep}).Chat(ctx, &llm.Request{})
	if llm.KindOf(err) != llm.KindCancelled || !errors.Is(err, context.Canceled) {
		t.Errorf("Chat() = %v, want cancelled", err)
	}
}

func TestNestedRetryCounts(t *testing.T) {
	t.Parallel()
	var s sleeper
	m := &script{errs: []error{errOf(llm.KindServer), errOf(llm.KindServer), errOf(llm.KindServer)}}
	inner := backends.NewRetry(m, backends.RetryPolicy{MaxRetries: 1, Sleep: s.Sleep})
	resp, err := backends.NewRetry(inner, backends.RetryPolicy{MaxRetries: 1, Sleep: s.Sleep}).Chat(t.Context(), &llm.Request{})
	if err != nil || resp.Attempts != 4 {
		t.Errorf("Chat() = %+v, %v; want success after 4 attempts", resp, err)
	}
}
