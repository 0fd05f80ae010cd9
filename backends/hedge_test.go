package backends

import (
	"context"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// TestHedgeTakesTheFirstReplyAndAccountsBoth: a straggler gets a second
// attempt after the stage's hedge delay; the second answers first, the
// first is cancelled, and the reply counts both attempts, the cancelled
// one as hedged with the winner's usage.
func TestHedgeTakesTheFirstReplyAndAccountsBoth(t *testing.T) {
	s := &scripted{delay: func(n int) time.Duration {
		if n == 11 {
			return -1 // stalls until cancelled
		}
		return 5 * time.Millisecond
	}}
	m := Wrap(s, WithDeadline(DeadlinePolicy{Off: true}), WithHedge(HedgePolicy{MinSamples: 10, MaxExtra: 0.5}))
	warm(t, m, "rollout", 10)
	start := time.Now()
	resp, err := m.Chat(context.Background(), &llm.Request{Stage: "rollout"})
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("hedged call took %v", took)
	}
	if resp.Attempts != 2 || resp.FailedCauses[llm.CauseHedged] != 1 || resp.FailedUsage != resp.Usage {
		t.Fatalf("reply: attempts %d, causes %v, failed usage %+v (usage %+v); want 2 attempts, one hedged with the winner's usage",
			resp.Attempts, resp.FailedCauses, resp.FailedUsage, resp.Usage)
	}
	if n := s.n.Load(); n != 12 {
		t.Fatalf("%d attempts made, want 10 + 2", n)
	}
}

// TestHedgeRespectsItsCostCeilingAndStop: no hedge beyond MaxExtra of the
// calls, none before MinSamples, none once the caller's stop is done.
func TestHedgeRespectsItsCostCeilingAndStop(t *testing.T) {
	s := &scripted{delay: func(n int) time.Duration {
		if n > 10 {
			return 30 * time.Millisecond // every later call straggles
		}
		return 2 * time.Millisecond
	}}
	// The hedge delay stays at the first ten latencies (2ms), so every
	// later call straggles past it.
	lat := NewLatencies(0)
	for range 10 {
		lat.Observe("rollout", 2*time.Millisecond)
	}
	h := NewHedge(s, HedgePolicy{MinSamples: 10, MaxExtra: 0.1, MinDelay: time.Millisecond}, lat)
	warm(t, h, "rollout", 10)
	for range 20 {
		if _, err := h.Chat(context.Background(), &llm.Request{Stage: "rollout"}); err != nil {
			t.Fatal(err)
		}
	}
	calls, hedged := h.Counts()
	if calls != 30 || hedged != 3 {
		t.Fatalf("%d calls, %d hedged; want 30 calls and at most 10%% hedged (3)", calls, hedged)
	}
	stop, cancel := context.WithCancel(context.Background())
	cancel()
	ctx := llm.WithStop(context.Background(), stop)
	before := s.n.Load()
	h.p.MaxExtra = 1
	if _, err := h.Chat(ctx, &llm.Request{Stage: "rollout"}); err != nil {
		t.Fatal(err)
	}
	if s.n.Load() != before+1 {
		t.Fatalf("a stopped call made %d attempts, want 1", s.n.Load()-before)
	}
}

func TestHedgeOptions(t *testing.T) {
	o := newOptions(Spec{Backend: "openai"})
	if _, on := hedgePolicy(o); on {
		t.Fatal("hedging is on by default")
	}
	o = newOptions(Spec{Backend: "openai", Options: map[string]string{"hedge": "on", "hedge_quantile": "0.9", "hedge_max_extra": "0.02"}})
	p, on := hedgePolicy(o)
	if !on || o.err() != nil || p.Quantile != 0.9 || p.MaxExtra != 0.02 {
		t.Fatalf("policy %+v on=%v err=%v", p, on, o.err())
	}
	o = newOptions(Spec{Backend: "openai", Options: map[string]string{"hedge": "on", "hedge_quantile": "1.5"}})
	if hedgePolicy(o); o.err() == nil {
		t.Fatal("quantile 1.5 accepted")
	}
}
