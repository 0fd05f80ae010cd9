package worker

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// slowModel answers after delay unless its context ends first; it counts
// the calls it started and the ones it finished.
type slowModel struct {
	delay             time.Duration
	started, answered atomic.Int32
}

func (m *slowModel) Chat(ctx context.Context, _ *llm.Request) (*llm.Response, error) {
	m.started.Add(1)
	select {
	case <-time.After(m.delay):
		m.answered.Add(1)
		return &llm.Response{Content: "ok", Usage: llm.Usage{InputTokens: 10, OutputTokens: 3}, Attempts: 1}, nil
	case <-ctx.Done():
		return nil, &llm.Error{Kind: llm.KindCancelled, Err: ctx.Err()}
	}
}

// TestCancelledTaskFinishesItsCallInFlight: the coordinator's cancel lets a
// call in flight end with its reply (it is billed anyway) and counted, and
// starts no new call; a shutdown cuts the call off.
func TestCancelledTaskFinishesItsCallInFlight(t *testing.T) {
	sm := &slowModel{delay: 200 * time.Millisecond}
	mt := newMeter(sm)
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(50*time.Millisecond, func() { cancel(errCancelledByCoordinator) })
	resp, err := mt.Chat(ctx, &llm.Request{})
	if err != nil || resp.Content != "ok" {
		t.Fatalf("call in flight at the cancel: %v, %v; want its reply", resp, err)
	}
	if _, err := mt.Chat(ctx, &llm.Request{}); llm.KindOf(err) != llm.KindCancelled {
		t.Fatalf("call after the cancel: err %v, want cancelled", err)
	}
	if sm.started.Load() != 1 {
		t.Fatalf("%d calls started, want 1 (none after the cancel)", sm.started.Load())
	}
	u, ok := mt.result("m")
	if !ok || u.GetCalls() != 1 || u.GetInputTokens() != 10 || u.GetOutputTokens() != 3 || u.GetFailedCalls() != 0 {
		t.Fatalf("usage %v, want the one finished call: 1 call, 10 in, 3 out", u)
	}

	sm2 := &slowModel{delay: 5 * time.Second}
	ctx2, cancel2 := context.WithCancelCause(context.Background())
	time.AfterFunc(50*time.Millisecond, func() { cancel2(errShutdown) })
	start := time.Now()
	if _, err := newMeter(sm2).Chat(ctx2, &llm.Request{}); err == nil || time.Since(start) > 2*time.Second {
		t.Fatalf("shutdown: err %v after %v, want the call cut off at once", err, time.Since(start))
	}
}

// TestCancelStopsRetries: a failed attempt that ends after the cancel is
// not retried, and its cause is counted.
func TestCancelStopsRetries(t *testing.T) {
	var calls atomic.Int32
	failing := modelFunc(func(ctx context.Context, _ *llm.Request) (*llm.Response, error) {
		calls.Add(1)
		time.Sleep(100 * time.Millisecond)
		return nil, &llm.Error{Kind: llm.KindServer, Status: 503}
	})
	m := backends.NewRetry(failing, backends.RetryPolicy{MaxRetries: 5, Base: time.Millisecond, Cap: time.Millisecond})
	mt := newMeter(m)
	ctx, cancel := context.WithCancelCause(context.Background())
	time.AfterFunc(30*time.Millisecond, func() { cancel(errCancelledByCoordinator) })
	_, err := mt.Chat(ctx, &llm.Request{})
	if err == nil || calls.Load() != 1 {
		t.Fatalf("err %v after %d attempts, want a failure after 1", err, calls.Load())
	}
	u, _ := mt.result("m")
	if u.GetCalls() != 1 || u.GetFailedCalls() != 1 || u.GetFailedCauses()[llm.CauseServer5xx] != 1 {
		t.Fatalf("usage %v, want 1 failed call caused by server_5xx", u)
	}
	if !errors.Is(context.Cause(ctx), errCancelledByCoordinator) {
		t.Fatal("cause lost")
	}
}

type modelFunc func(context.Context, *llm.Request) (*llm.Response, error)

func (f modelFunc) Chat(ctx context.Context, r *llm.Request) (*llm.Response, error) { return f(ctx, r) }

// TestAbandonedCallCountsAsStallThroughTheRetryLayer: a withdrawn task's
// call that its run's end abandons is a stall in the task's causes, also
// when the retry layer (which counts each attempt's cause itself) saw the
// cut attempt as cancelled.
func TestAbandonedCallCountsAsStallThroughTheRetryLayer(t *testing.T) {
	sm := &slowModel{delay: time.Hour}
	m := backends.Wrap(sm, backends.WithRetry(backends.RetryPolicy{MaxRetries: 3, Base: time.Millisecond, Cap: time.Millisecond}),
		backends.WithDeadline(backends.DeadlinePolicy{Off: true}))
	mt := newMeter(m)
	ctx, cancel := context.WithCancelCause(context.Background())
	actx, abandon := context.WithCancelCause(context.Background())
	ctx = context.WithValue(ctx, abandonKey{}, actx)
	time.AfterFunc(30*time.Millisecond, func() { cancel(errCancelledByCoordinator) })
	time.AfterFunc(100*time.Millisecond, func() { abandon(errAbandonedByCoordinator) })
	if _, err := mt.Chat(ctx, &llm.Request{}); err == nil {
		t.Fatal("abandoned call: no error")
	}
	u, _ := mt.result("m")
	if u.GetCalls() != 1 || u.GetFailedCalls() != 1 || u.GetFailedCauses()[llm.CauseStall] != 1 || u.GetFailedCauses()[llm.CauseCancelled] != 0 {
		t.Fatalf("usage %v, want 1 failed call caused by stall, none cancelled", u)
	}
}
