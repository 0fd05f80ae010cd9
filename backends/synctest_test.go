package backends_test

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// TestRetryRealTimer runs the default sleeper under synctest: the waits
// pass on the bubble's fake clock, none in real time.
func TestRetryRealTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &script{errs: []error{
			&llm.Error{Kind: llm.KindRateLimited, RetryAfter: 10 * time.Second},
			&llm.Error{Kind: llm.KindRateLimited, RetryAfter: 20 * time.Second},
		}}
		start := time.Now()
		resp, err := backends.NewRetry(m, backends.RetryPolicy{MaxRetries: 4, Base: time.Millisecond}).Chat(t.Context(), &llm.Request{})
		if err != nil {
			t.Fatal(err)
		}
		if got := time.Since(start); got < 30*time.Second || got > 31*time.Second {
			t.Errorf("retries took %v of (fake) time, want 30s of Retry-After", got)
		}
		if resp.Attempts != 3 || resp.RateLimited != 2 {
			t.Errorf("Attempts, RateLimited = %d, %d; want 3, 2", resp.Attempts, resp.RateLimited)
		}
	})
}

func TestRetryTimerHonoursCancellation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error)
		go func() {
			_, err := backends.NewRetry(&script{errs: []error{&llm.Error{Kind: llm.KindServer, RetryAfter: time.Minute}}},
				backends.RetryPolicy{MaxRetries: 1}).Chat(ctx, &llm.Request{})
			done <- err
		}()
		synctest.Wait() // the retry is asleep
		cancel()
		if err := <-done; llm.KindOf(err) != llm.KindCancelled {
			t.Errorf("Chat() = %v, want cancelled", err)
		}
	})
}

func TestLimiterRequestsPerMinute(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := backends.NewLimiter(nil, nil)
		key := backends.LimitKey{Backend: "openai", Endpoint: "http://x", Model: "m"}
		m := backends.NewLimited(&script{}, l, key, backends.Limits{RequestsPerMin: 60})
		start := time.Now()
		for range 60 { // one minute's burst passes at once
			if _, err := m.Chat(t.Context(), &llm.Request{}); err != nil {
				t.Fatal(err)
			}
		}
		if d := time.Since(start); d != 0 {
			t.Errorf("the first 60 calls waited %v, want none", d)
		}
		for range 3 {
			if _, err := m.Chat(t.Context(), &llm.Request{}); err != nil {
				t.Fatal(err)
			}
		}
		if d := time.Since(start); d < 3*time.Second || d > 3*time.Second+50*time.Millisecond {
			t.Errorf("3 calls past the burst took %v, want 3s at 60/min", d)
		}
	})
}

func TestLimiterTokensPerMinuteIsCorrected(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := backends.NewLimiter(nil, nil)
		key := backends.LimitKey{Backend: "b", Model: "m"}
		// Each call reserves ~600 (MaxTokens 600 plus a tiny prompt) but
		// uses 15: after the first, later calls are charged what they used.
		m := backends.NewLimited(&script{}, l, key, backends.Limits{TokensPerMin: 1000})
		req := &llm.Request{MaxTokens: 600}
		start := time.Now()
		for range 20 {
			if _, err := m.Chat(t.Context(), req); err != nil {
				t.Fatal(err)
			}
		}
		if d := time.Since(start); d > 0 {
			t.Errorf("20 calls using 15 tokens each waited %v under 1000 TPM, want none (estimates corrected)", d)
		}
		// Without correction, the estimate alone exhausts the budget.
		l2 := backends.NewLimiter(nil, nil)
		big := &script{}
		m2 := backends.NewLimited(bigUsage{big}, l2, key, backends.Limits{TokensPerMin: 1000})
		start = time.Now()
		for range 3 {
			if _, err := m2.Chat(t.Context(), req); err != nil {
				t.Fatal(err)
			}
		}
		if d := time.Since(start); d < 30*time.Second {
			t.Errorf("3 calls of ~600 tokens under 1000 TPM took %v, want at least ~36s of waiting", d)
		}
	})
}

// bigUsage reports usage equal to the reservation.
type bigUsage struct{ m llm.Model }

func (b bigUsage) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	resp, err := b.m.Chat(ctx, req)
	if err == nil {
		resp.Usage = llm.Usage{InputTokens: backends.EstimateTokens(req), OutputTokens: int64(req.MaxTokens)}
	}
	return resp, err
}

func TestCircuitCooldownOnFakeClock(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		m := &script{errs: []error{errOf(llm.KindServer), errOf(llm.KindServer)}}
		c := backends.NewCircuit(m, backends.CircuitPolicy{Threshold: 2, Cooldown: 10 * time.Second})
		for range 2 {
			_, _ = c.Chat(t.Context(), &llm.Request{})
		}
		if c.State() != backends.CircuitOpen {
			t.Fatalf("state = %v, want open", c.State())
		}
		time.Sleep(10 * time.Second) // fake time: the cool-down passes
		if c.State() != backends.CircuitHalfOpen {
			t.Errorf("state after the cool-down = %v, want half_open", c.State())
		}
		if _, err := c.Chat(t.Context(), &llm.Request{}); err != nil || c.State() != backends.CircuitClosed {
			t.Errorf("probe = %v, state %v; want success and closed", err, c.State())
		}
	})
}
