package backends_test

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// TestCircuit runs on synctest's fake clock: the breaker reads time.Now,
// and time.Sleep moves it on at once.
func TestCircuit(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		m := &script{errs: []error{
			errOf(llm.KindServer), errOf(llm.KindTransport),
			errOf(llm.KindRateLimited),                                           // the server is up: resets the count
			errOf(llm.KindServer), errOf(llm.KindTimeout), errOf(llm.KindServer), // opens
			errOf(llm.KindServer), // the first probe fails: reopens
		}}
		c := backends.NewCircuit(m, backends.CircuitPolicy{Threshold: 3, Cooldown: 30 * time.Second})
		call := func() error {
			_, err := c.Chat(t.Context(), &llm.Request{})
			return err
		}
		for i := range 6 {
			if err := call(); err == nil || errors.Is(err, backends.ErrCircuitOpen) {
				t.Fatalf("call %d = %v, want the model's own failure", i+1, err)
			}
		}
		if c.State() != backends.CircuitOpen {
			t.Fatalf("after 3 consecutive infrastructure failures: state %v, want open", c.State())
		}
		time.Sleep(10 * time.Second)
		err := call()
		var le *llm.Error
		if !errors.As(err, &le) || !errors.Is(err, backends.ErrCircuitOpen) || le.Kind != llm.KindServer || le.RetryAfter != 20*time.Second {
			t.Fatalf("call while open = %v, want a fast KindServer failure with RetryAfter 20s", err)
		}
		if m.Calls() != 6 {
			t.Errorf("the open circuit let a call through (%d calls)", m.Calls())
		}
		time.Sleep(20 * time.Second)
		if err := call(); err == nil || errors.Is(err, backends.ErrCircuitOpen) { // probe fails
			t.Fatalf("probe = %v, want the model's failure", err)
		}
		if c.State() != backends.CircuitOpen || call() == nil {
			t.Fatalf("after a failed probe: state %v, want open again", c.State())
		}
		time.Sleep(30 * time.Second)
		if err := call(); err != nil { // probe succeeds
			t.Fatalf("probe = %v, want success", err)
		}
		if c.State() != backends.CircuitClosed {
			t.Errorf("after a good probe: state %v, want closed", c.State())
		}
	})
}

// gate blocks calls until released.
type gate struct {
	entered chan struct{}
	release chan error
}

func (g *gate) Chat(ctx context.Context, _ *llm.Request) (*llm.Response, error) {
	g.entered <- struct{}{}
	select {
	case err := <-g.release:
		if err != nil {
			return nil, err
		}
		return &llm.Response{Content: "ok"}, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func TestCircuitHalfOpenAdmitsOneProbe(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		g := &gate{entered: make(chan struct{}, 8), release: make(chan error)}
		c := backends.NewCircuit(g, backends.CircuitPolicy{Threshold: 1, Cooldown: time.Minute})
		go func() { g.release <- errOf(llm.KindServer) }()
		if _, err := c.Chat(t.Context(), &llm.Request{}); llm.KindOf(err) != llm.KindServer {
			t.Fatalf("first call = %v", err)
		}
		<-g.entered
		time.Sleep(time.Minute)
		probe := make(chan error)
		go func() {
			_, err := c.Chat(t.Context(), &llm.Request{})
			probe <- err
		}()
		<-g.entered // the probe is in flight
		if _, err := c.Chat(t.Context(), &llm.Request{}); !errors.Is(err, backends.ErrCircuitOpen) {
			t.Errorf("second call during the probe = %v, want a fast failure", err)
		}
		g.release <- nil
		if err := <-probe; err != nil || c.State() != backends.CircuitClosed {
			t.Errorf("probe = %v, state %v; want success, closed", err, c.State())
		}
	})
}

func TestCircuitIgnoresCancellation(t *testing.T) {
	t.Parallel()
	m := &script{errs: []error{errOf(llm.KindCancelled), errOf(llm.KindCancelled), errOf(llm.KindServer)}}
	c := backends.NewCircuit(m, backends.CircuitPolicy{Threshold: 2})
	for range 3 {
		_, _ = c.Chat(t.Context(), &llm.Request{})
	}
	if c.State() != backends.CircuitClosed {
		t.Errorf("state = %v after 2 cancellations and 1 failure, want closed", c.State())
	}
}

func TestLimiterAIMD(t *testing.T) {
	t.Parallel()
	l := backends.NewLimiter(nil, nil)
	key := backends.LimitKey{Backend: "b", Endpoint: "e", Model: "m"}
	lim := backends.Limits{MaxConcurrency: 4, IncreaseEvery: 2}
	g := &gate{entered: make(chan struct{}, 16), release: make(chan error)}
	m := backends.NewLimited(g, l, key, lim)
	results := make(chan error, 16)
	start := func(n int) {
		for range n {
			go func() {
				_, err := m.Chat(t.Context(), &llm.Request{})
				results <- err
			}()
		}
	}
	start(5)
	for range 4 {
		<-g.entered
	}
	if limit, inflight := l.Concurrency(key); limit != 4 || inflight != 4 {
		t.Fatalf("Concurrency = %d, %d; want cap 4 with 4 in flight (the 5th waits)", limit, inflight)
	}
	g.release <- &llm.Error{Kind: llm.KindRateLimited} // a 429 halves the cap
	<-results
	if limit, inflight := l.Concurrency(key); limit != 2 || inflight != 3 {
		t.Fatalf("after a 429: Concurrency = %d, %d; want cap 2, 3 still in flight", limit, inflight)
	}
	// Two successes bring in-flight to 1; the waiting call starts.
	g.release <- nil
	<-results
	g.release <- nil
	<-results
	<-g.entered
	if limit, inflight := l.Concurrency(key); limit != 3 || inflight != 2 {
		t.Fatalf("after 2 successes: Concurrency = %d, %d; want cap 3 (grown by one), 2 in flight", limit, inflight)
	}
	g.release <- nil
	g.release <- nil
	<-results
	<-results
	if limit, inflight := l.Concurrency(key); limit != 4 || inflight != 0 {
		t.Errorf("at the end: Concurrency = %d, %d; want cap back at 4, none in flight", limit, inflight)
	}
}

func TestLimiterWaitHonoursContext(t *testing.T) {
	t.Parallel()
	l := backends.NewLimiter(nil, nil)
	key := backends.LimitKey{Model: "m"}
	lim := backends.Limits{MaxConcurrency: 1}
	p, err := l.Acquire(t.Context(), key, lim, 1)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := l.Acquire(ctx, key, lim, 1); llm.KindOf(err) != llm.KindCancelled {
		t.Errorf("Acquire with a full cap and a cancelled context = %v, want cancelled", err)
	}
	p.Done(&llm.Response{}, nil)
	p.Done(&llm.Response{}, nil) // a second Done is a no-op
	if _, inflight := l.Concurrency(key); inflight != 0 {
		t.Errorf("in flight = %d after Done, want 0 (no slot leaked)", inflight)
	}
	p2, err := l.Acquire(t.Context(), key, lim, 1)
	if err != nil {
		t.Fatalf("Acquire after release = %v", err)
	}
	p2.Done(nil, errOf(llm.KindServer))
}

func TestLocalBuckets(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		b := backends.NewLocalBuckets(time.Now)
		ctx := t.Context()
		if w, err := b.Take(ctx, "k", 60, 60, 0); w != 0 || err != nil {
			t.Fatalf("Take(60 of 60) = %v, %v; want granted", w, err)
		}
		if w, err := b.Take(ctx, "k", 2, 60, 0); w != 2*time.Second || err != nil {
			t.Errorf("Take(2) on an empty 60/min bucket = %v, %v; want a 2s wait", w, err)
		}
		time.Sleep(2 * time.Second)
		if w, err := b.Take(ctx, "k", 2, 60, 0); w != 0 || err != nil {
			t.Errorf("Take(2) after 2s = %v, %v; want granted (nothing was taken by the refused Take)", w, err)
		}
		if _, err := b.Take(ctx, "k", 61, 60, 0); !errors.Is(err, backends.ErrExceedsBurst) {
			t.Errorf("Take(61 of 60) = %v, want ErrExceedsBurst", err)
		}
		if w, err := b.Take(ctx, "other", 5, 0, 0); w != 0 || err != nil {
			t.Errorf("Take with no limit = %v, %v; want granted", w, err)
		}
	})
}
