package backends

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// scripted answers each attempt after the delay its script gives (by call
// number, from 1); a negative delay stalls until the context ends.
type scripted struct {
	n     atomic.Int32
	delay func(n int) time.Duration
}

func (s *scripted) Chat(ctx context.Context, _ *llm.Request) (*llm.Response, error) {
	n := int(s.n.Add(1))
	d := s.delay(n)
	if d < 0 {
		<-ctx.Done()
		return nil, &llm.Error{Kind: llm.KindCancelled, Err: ctx.Err()}
	}
	select {
	case <-time.After(d):
		return &llm.Response{Content: "ok", Usage: llm.Usage{InputTokens: 7, OutputTokens: 2}, Attempts: 1}, nil
	case <-ctx.Done():
		return nil, &llm.Error{Kind: llm.KindCancelled, Err: ctx.Err()}
	}
}

func warm(t *testing.T, m llm.Model, stage string, n int) {
	t.Helper()
	for range n {
		if _, err := m.Chat(context.Background(), &llm.Request{Stage: stage}); err != nil {
			t.Fatal(err)
		}
	}
}

// TestStalledAttemptIsAbandonedAndRetried: once a stage has enough
// latencies, an attempt that never answers is abandoned at its deadline,
// counted as a stall, and the retry answers.
func TestStalledAttemptIsAbandonedAndRetried(t *testing.T) {
	s := &scripted{delay: func(n int) time.Duration {
		if n == 6 {
			return -1
		}
		return 5 * time.Millisecond
	}}
	d := NewDeadline(s, DeadlinePolicy{MinSamples: 5, Multiplier: 4, Floor: 50 * time.Millisecond, Check: 5 * time.Millisecond, Ceiling: time.Minute}, nil)
	m := NewRetry(d, RetryPolicy{MaxRetries: 2, Base: time.Millisecond, Cap: time.Millisecond})
	warm(t, m, "rollout", 5)
	start := time.Now()
	resp, err := m.Chat(context.Background(), &llm.Request{Stage: "rollout"})
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	if resp.Attempts != 2 || resp.FailedCauses[llm.CauseStall] != 1 {
		t.Fatalf("attempts %d, causes %v; want 2 attempts, one stall", resp.Attempts, resp.FailedCauses)
	}
	if took > 2*time.Second {
		t.Fatalf("the stalled call took %v; its deadline was about 50ms", took)
	}
	q, _ := d.Latencies().Quantile("rollout", 0.99)
	if dl := d.For("rollout", 1); dl != max(50*time.Millisecond, 4*q) {
		t.Fatalf("deadline %v, want max(the 50ms floor, 4 x p99 %v)", dl, q)
	}
	if d1, d2 := d.For("rollout", 1), d.For("rollout", 2); d2 != 2*d1 {
		t.Fatalf("retry deadline %v, want twice the first %v", d2, d1)
	}
}

// TestSlowCallBeforeEnoughSamplesIsNotAbandoned: with too few latencies
// known the deadline is the prior from the reply budget, so a slow reply
// early on is waited for; and a deadline at or past the ceiling is none.
func TestSlowCallBeforeEnoughSamplesIsNotAbandoned(t *testing.T) {
	s := &scripted{delay: func(n int) time.Duration {
		if n == 4 {
			return 300 * time.Millisecond
		}
		return 2 * time.Millisecond
	}}
	// Latencies of its own, without the process-wide fallback.
	d := NewDeadline(s, DeadlinePolicy{MinSamples: 5, Floor: 10 * time.Millisecond, Check: 5 * time.Millisecond}, NewLatencies(0))
	warm(t, d, "merge", 3)
	if resp, err := d.Chat(context.Background(), &llm.Request{Stage: "merge"}); err != nil || resp.Content != "ok" {
		t.Fatalf("slow call with 3 of 5 samples known: %v %v, want its reply", resp, err)
	}
	if dl, prior := d.For("merge", 1), 30*time.Second+4096*25*time.Millisecond; dl != prior {
		t.Fatalf("deadline %v with 4 samples, want the prior %v", dl, prior)
	}
	c := NewDeadline(s, DeadlinePolicy{Fixed: time.Minute, Ceiling: time.Minute}, nil)
	if dl := c.For("x", 1); dl != 0 {
		t.Fatalf("deadline %v at the ceiling, want none (the call's timeout rules)", dl)
	}
}

// TestRunningAttemptGetsTheDeadlineOnceKnown: an attempt that started
// before its stage had any latency is abandoned once enough are in.
func TestRunningAttemptGetsTheDeadlineOnceKnown(t *testing.T) {
	s := &scripted{delay: func(n int) time.Duration {
		if n == 1 {
			return -1
		}
		return 2 * time.Millisecond
	}}
	d := NewDeadline(s, DeadlinePolicy{MinSamples: 5, Floor: 20 * time.Millisecond, Check: 5 * time.Millisecond}, NewLatencies(0))
	errc := make(chan error, 1)
	go func() {
		_, err := d.Chat(context.Background(), &llm.Request{Stage: "rollout"})
		errc <- err
	}()
	time.Sleep(50 * time.Millisecond)
	warm(t, d, "rollout", 5)
	select {
	case err := <-errc:
		if llm.CauseOf(err) != llm.CauseStall || llm.KindOf(err) != llm.KindTimeout {
			t.Fatalf("err %v (cause %s), want a stall timeout", err, llm.CauseOf(err))
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stalled attempt was never abandoned")
	}
}

// TestStageWithFewSamplesUsesTheWiderModelEstimate: a stage with too few
// latencies of its own falls back to the model's, widened.
func TestStageWithFewSamplesUsesTheWiderModelEstimate(t *testing.T) {
	s := &scripted{delay: func(int) time.Duration { return 0 }}
	lat := NewLatencies(0)
	for range 30 {
		lat.Observe("rollout", 100*time.Millisecond)
	}
	d := NewDeadline(s, DeadlinePolicy{MinSamples: 20, Multiplier: 4, FallbackMultiplier: 4, Floor: time.Millisecond}, lat)
	if got := d.For("rollout", 1); got != 400*time.Millisecond {
		t.Fatalf("rollout deadline %v, want 4 x 100ms", got)
	}
	if got := d.For("merge", 1); got != 1600*time.Millisecond {
		t.Fatalf("merge deadline %v, want 4 x 4 x 100ms from the model-wide latencies", got)
	}
	if d := NewDeadline(s, DeadlinePolicy{Off: true}, lat); d.For("rollout", 1) != 0 {
		t.Fatal("deadline off still sets one")
	}
}

func TestDeadlineOptions(t *testing.T) {
	for _, tc := range []struct {
		opts map[string]string
		bad  bool
		want DeadlinePolicy
	}{
		{nil, false, DeadlinePolicy{Ceiling: time.Minute}},
		{map[string]string{"stall_deadline": "off"}, false, DeadlinePolicy{Off: true, Ceiling: time.Minute}},
		{map[string]string{"stall_deadline": "90s", "stall_floor": "3s", "stall_min_samples": "40", "stall_multiplier": "6"}, false,
			DeadlinePolicy{Fixed: 90 * time.Second, Floor: 3 * time.Second, MinSamples: 40, Multiplier: 6, Ceiling: time.Minute}},
		{map[string]string{"stall_deadline": "soon"}, true, DeadlinePolicy{}},
		{map[string]string{"stall_multiplier": "0.5"}, true, DeadlinePolicy{}},
	} {
		o := newOptions(Spec{Backend: "openai", Options: tc.opts})
		p := deadlinePolicy(o, time.Minute, false)
		if (o.err() != nil) != tc.bad {
			t.Errorf("%v: err %v, want error %v", tc.opts, o.err(), tc.bad)
			continue
		}
		if !tc.bad && p != tc.want {
			t.Errorf("%v: policy %+v, want %+v", tc.opts, p, tc.want)
		}
	}
	// An agent harness runs to its timeout unless a deadline is asked for.
	if p := deadlinePolicy(newOptions(Spec{Backend: BackendExec}), time.Minute, true); !p.Off {
		t.Errorf("exec harness: policy %+v, want the stall deadline off", p)
	}
	o := newOptions(Spec{Backend: BackendExec, Options: map[string]string{"stall_deadline": "auto"}})
	if p := deadlinePolicy(o, time.Minute, true); p.Off {
		t.Errorf("exec harness with stall_deadline=auto: policy %+v, want it on", p)
	}
}

// TestModelWithFewSamplesUsesTheProcessEstimate: a model with too few
// latencies of its own borrows those of every model, widened twice.
func TestModelWithFewSamplesUsesTheProcessEstimate(t *testing.T) {
	s := &scripted{delay: func(int) time.Duration { return 0 }}
	parent := NewLatencies(0)
	busy := NewLatencies(0)
	busy.parent = parent
	for range 30 {
		busy.Observe("", 100*time.Millisecond)
	}
	quiet := NewLatencies(0)
	quiet.parent = parent
	d := NewDeadline(s, DeadlinePolicy{MinSamples: 20, Multiplier: 4, FallbackMultiplier: 4, Floor: time.Millisecond}, quiet)
	if got := d.For("merge", 1); got != 6400*time.Millisecond {
		t.Fatalf("deadline %v, want 4 x 4 x 4 x 100ms from the process's latencies", got)
	}
}

// TestEarlyStallCostsSecondsFromFewSamples: a process that has seen a
// handful of calls, fewer than MinSamples of any model, abandons a
// stalled call at the widened estimate those few give, not at the
// model's timeout; the retry answers.
func TestEarlyStallCostsSecondsFromFewSamples(t *testing.T) {
	s := &scripted{delay: func(n int) time.Duration {
		if n == 1 {
			return -1
		}
		return 5 * time.Millisecond
	}}
	parent := NewLatencies(0)
	for range 6 {
		parent.Observe("rollout", 5*time.Millisecond)
	}
	lat := NewLatencies(0)
	lat.parent = parent
	d := NewDeadline(s, DeadlinePolicy{Floor: 50 * time.Millisecond, Check: 5 * time.Millisecond, Ceiling: 10 * time.Minute}, lat)
	// 6 × 2 (model) × 2 (process) × 2 (few samples) × 5ms.
	if dl := d.For("reflect", 1); dl != 240*time.Millisecond {
		t.Fatalf("deadline %v from 6 process latencies of 5ms, want 240ms", dl)
	}
	m := NewRetry(d, RetryPolicy{MaxRetries: 2, Base: time.Millisecond, Cap: time.Millisecond})
	start := time.Now()
	resp, err := m.Chat(context.Background(), &llm.Request{Stage: "reflect"})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Attempts != 2 || resp.FailedCauses[llm.CauseStall] != 1 {
		t.Fatalf("attempts %d, causes %v; want 2 attempts, one stall", resp.Attempts, resp.FailedCauses)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the stalled call took %v; its deadline was 240ms", took)
	}
}

// TestFirstCallHasAPriorDeadline: the process's very first call, with no
// latency known anywhere, is bounded by the prior its reply budget gives;
// a prior past the model's timeout leaves the timeout to rule.
func TestFirstCallHasAPriorDeadline(t *testing.T) {
	s := &scripted{delay: func(n int) time.Duration {
		if n == 1 {
			return -1
		}
		return time.Millisecond
	}}
	p := DeadlinePolicy{Prior: 100 * time.Millisecond, PriorPerToken: time.Millisecond, Check: 5 * time.Millisecond}
	d := NewDeadline(s, p, NewLatencies(0))
	if dl := d.forRequest("reflect", 100, 1); dl != 200*time.Millisecond {
		t.Fatalf("prior %v for a 100-token budget, want 100ms + 100 x 1ms", dl)
	}
	if dl := d.For("reflect", 1); dl != 100*time.Millisecond+4096*time.Millisecond {
		t.Fatalf("prior %v for an unsaid budget, want 100ms + 4096 x 1ms", dl)
	}
	m := NewRetry(d, RetryPolicy{MaxRetries: 2, Base: time.Millisecond, Cap: time.Millisecond})
	resp, err := m.Chat(context.Background(), &llm.Request{Stage: "reflect", MaxTokens: 100})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Attempts != 2 || resp.FailedCauses[llm.CauseStall] != 1 {
		t.Fatalf("attempts %d, causes %v; want the first abandoned at its prior and the retry's reply", resp.Attempts, resp.FailedCauses)
	}
	p.Ceiling = 150 * time.Millisecond
	if dl := NewDeadline(s, p, NewLatencies(0)).forRequest("reflect", 100, 1); dl != 0 {
		t.Fatalf("prior %v past a 150ms ceiling, want none (the call's timeout rules)", dl)
	}
}
