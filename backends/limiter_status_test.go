package backends

import (
	"context"
	"testing"
	"time"
)

// TestLimiterStatus: Status lists each key with its limits and what is
// left: the request and token buckets drained by the calls made, the
// adaptive cap and the calls in flight.
func TestLimiterStatus(t *testing.T) {
	now := time.Unix(1000, 0)
	l := NewLimiter(NewLocalBuckets(func() time.Time { return now }), nil)
	if got := l.Status(); len(got) != 0 {
		t.Fatalf("a new limiter lists %v", got)
	}
	key := LimitKey{Backend: "openai", Endpoint: "http://127.0.0.1:9/v1", Model: "m"}
	lim := Limits{RequestsPerMin: 60, TokensPerMin: 10000, MaxConcurrency: 4}
	var permits []*Permit
	for range 3 {
		p, err := l.Acquire(context.Background(), key, lim, 1000)
		if err != nil {
			t.Fatal(err)
		}
		permits = append(permits, p)
	}
	other := LimitKey{Backend: "openai", Endpoint: "http://127.0.0.1:9/v1", Model: "a"}
	if p, err := l.Acquire(context.Background(), other, Limits{}, 10); err != nil {
		t.Fatal(err)
	} else {
		p.Done(nil, nil)
	}
	st := l.Status()
	if len(st) != 2 || st[0].Key != other || st[1].Key != key {
		t.Fatalf("status keys %+v, want %v then %v", st, other, key)
	}
	s := st[1]
	if !s.LevelsKnown || s.RequestsLeft != 57 || s.TokensLeft != 7000 || s.Cap != 4 || s.InFlight != 3 || s.Limits.RequestsPerMin != 60 || s.Limits.TokensPerMin != 10000 {
		t.Errorf("status %+v, want 57 of 60 requests and 7000 of 10000 tokens left, cap 4 with 3 in flight", s)
	}
	if o := st[0]; o.InFlight != 0 || o.Limits.RequestsPerMin != 0 {
		t.Errorf("unlimited key status %+v", o)
	}
	for _, p := range permits {
		p.Done(nil, nil)
	}
	now = now.Add(30 * time.Second) // half a minute refills half of each bucket
	s = l.Status()[1]
	if s.InFlight != 0 || s.RequestsLeft != 60 || s.TokensLeft != 10000 {
		t.Errorf("after the calls and 30 s: %+v, want nothing in flight and full buckets", s)
	}
}
