package worker

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/pkg/llm"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// meter is the model an [Executor] hands one task. It counts every call
// the task makes — usage (failed attempts included), attempts, 429s and
// the cause of each failed attempt — whatever the benchmark does with the
// replies, so a task's result reports what the provider billed.
//
// Once the coordinator cancels the task, a call already in flight runs to
// its end (the provider bills it either way, and its reply is kept), no
// retry or hedge starts after it, and no new call starts at all. Any other
// end of the task's context (its timeout, a worker shutdown) cuts the call
// off at once.
type meter struct {
	m llm.Model

	mu      sync.Mutex
	used    bool
	usage   llm.Usage
	calls   int
	failed  int
	retries int
	limited int
	causes  map[string]int
	model   string
}

var _ llm.Model = (*meter)(nil)

func newMeter(m llm.Model) *meter { return &meter{m: m} }

// errNotStarted is the error of a call asked for after the task ended.
var errNotStarted = errors.New("task cancelled before the call started")

// Chat implements llm.Model.
func (mt *meter) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if ctx.Err() != nil {
		return nil, &llm.Error{Kind: llm.KindCancelled, Msg: errNotStarted.Error(), Err: context.Cause(ctx)}
	}
	cctx, release := finishInFlight(ctx)
	resp, err := mt.m.Chat(cctx, req)
	if err != nil && errors.Is(context.Cause(cctx), errAbandonedByCoordinator) {
		err = abandonedAsStalled(err)
	}
	release()
	mt.record(resp, err)
	return resp, err
}

// abandonedAsStalled is the error of a call its run's end abandoned: the
// run ended while the call was still out, seconds after the task was
// withdrawn, so an attempt with no answer by then counts as a stall, not
// as a cancel — also inside the retry layers' per-attempt causes, where
// the cut attempts were counted as cancelled.
func abandonedAsStalled(err error) error {
	var re *backends.RetryError
	if errors.As(err, &re) {
		if n := re.Causes[llm.CauseCancelled]; n > 0 {
			delete(re.Causes, llm.CauseCancelled)
			re.Causes[llm.CauseStall] += n
		}
	}
	return fmt.Errorf("%w: %w", llm.ErrStalled, err)
}

func (mt *meter) record(resp *llm.Response, err error) {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	mt.used = true
	if resp != nil {
		attempts := max(resp.Attempts, 1)
		mt.usage.Add(resp.Usage)
		mt.usage.Add(resp.FailedUsage)
		mt.calls += attempts
		mt.failed += attempts - 1
		mt.retries += attempts - 1
		mt.limited += resp.RateLimited
		llm.AddCauses(&mt.causes, resp.FailedCauses)
		if resp.Model != "" {
			mt.model = resp.Model
		}
		return
	}
	if err == nil {
		return
	}
	var re *backends.RetryError
	if errors.As(err, &re) {
		mt.usage.Add(re.FailedUsage)
		mt.calls += re.Attempts
		mt.failed += re.Attempts
		mt.retries += max(re.Attempts-1, 0)
		mt.limited += re.RateLimited
		llm.AddCauses(&mt.causes, re.Causes)
		return
	}
	mt.usage.Add(llm.BilledUsage(err))
	mt.calls++
	mt.failed++
	if llm.KindOf(err) == llm.KindRateLimited {
		mt.limited++
	}
	llm.AddCauses(&mt.causes, map[string]int{llm.CauseOf(err): 1})
}

// addCause counts one more failed attempt cause without a call (a reply
// the executor could not use).
func (mt *meter) addCause(cause string) {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	llm.AddCauses(&mt.causes, map[string]int{cause: 1})
}

// usage is what the meter counted, as a result's usage; model names the
// model when no reply did. ok is false when no call went through the meter.
func (mt *meter) result(model string) (u *pb.Usage, ok bool) {
	mt.mu.Lock()
	defer mt.mu.Unlock()
	if !mt.used {
		return nil, false
	}
	u = usageOf(mt.usage, mt.calls, mt.failed, mt.retries, mt.limited, firstNonEmpty(mt.model, model))
	for k, v := range mt.causes {
		if u.FailedCauses == nil {
			u.FailedCauses = map[string]int32{}
		}
		u.FailedCauses[k] += int32(v)
	}
	return u, true
}

// finishInFlight returns the context a call runs under: ctx's values and
// deadline, and ctx's cancellation unless it is the coordinator's cancel
// notice (an abandon notice for the task ends it too); ctx itself is the call's stop signal (llm.WithStop), so the
// resilience layers start no further attempt once it is done.
func finishInFlight(ctx context.Context) (context.Context, func()) {
	c, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	cancelDl := func() {}
	if dl, ok := ctx.Deadline(); ok {
		c, cancelDl = context.WithDeadline(c, dl)
	}
	stop := context.AfterFunc(ctx, func() {
		if cause := context.Cause(ctx); !errors.Is(cause, errCancelledByCoordinator) {
			cancel(cause)
		}
	})
	// An abandon notice ends the call after all (the run it was for has
	// ended).
	stopAbandon := func() bool { return false }
	if a, ok := ctx.Value(abandonKey{}).(context.Context); ok {
		stopAbandon = context.AfterFunc(a, func() {
			if cause := context.Cause(a); errors.Is(cause, errAbandonedByCoordinator) {
				cancel(cause)
			}
		})
	}
	return llm.WithStop(c, ctx), func() {
		stop()
		stopAbandon()
		cancelDl()
		cancel(nil)
	}
}
