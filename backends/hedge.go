package backends

import (
	"context"
	"errors"
	"net/http/httptrace"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// HedgePolicy configures [Hedge]. Zero fields take the defaults noted.
type HedgePolicy struct {
	// Quantile of a stage's observed latencies after which a straggling
	// call gets a second attempt (default 0.95).
	Quantile float64
	// Multiplier scales that quantile into the hedge delay (default 1).
	Multiplier float64
	// MinSamples is how many successful attempts a stage needs before it
	// is hedged (default 50).
	MinSamples int
	// MinDelay is the shortest hedge delay (default 100ms).
	MinDelay time.Duration
	// MaxExtra caps the hedged attempts as a fraction of the calls (the
	// cost ceiling; default 0.05 = at most 5% more calls).
	MaxExtra float64
}

func (p HedgePolicy) withDefaults() HedgePolicy {
	p.Quantile = cmpOr(p.Quantile, 0.95)
	p.Multiplier = cmpOr(p.Multiplier, 1)
	p.MinSamples = cmpOr(p.MinSamples, 50)
	p.MinDelay = cmpOr(p.MinDelay, 100*time.Millisecond)
	p.MaxExtra = cmpOr(p.MaxExtra, 0.05)
	return p
}

// Hedge re-issues a straggling call: when no reply has come after the
// stage's hedge delay (a quantile of its observed latencies), a second,
// identical attempt starts; the first reply wins and the other attempt is
// cancelled. Both are accounted: the reply's Attempts counts two, and the
// cancelled attempt is a failed attempt of cause llm.CauseHedged whose
// usage is taken to be the winner's (the same request; a provider bills a
// request it finished for a client that left). An attempt cancelled before
// its request was written is no call and is not counted. Hedged attempts are capped
// at MaxExtra of the calls. A ctx marked with llm.WithStop starts no hedge
// once stopped.
type Hedge struct {
	model  llm.Model
	p      HedgePolicy
	lat    *Latencies
	calls  atomic.Int64
	hedged atomic.Int64
}

var _ llm.Model = (*Hedge)(nil)

// NewHedge wraps m; lat holds the latencies the delay derives from (those
// a [Deadline] layer records; nil = none, so nothing is hedged).
func NewHedge(m llm.Model, p HedgePolicy, lat *Latencies) *Hedge {
	if lat == nil {
		lat = NewLatencies(0)
	}
	return &Hedge{model: m, p: p.withDefaults(), lat: lat}
}

// String describes the layer.
func (h *Hedge) String() string { return "hedge(" + describe(h.model) + ")" }

// Counts returns the calls seen and the hedged attempts started.
func (h *Hedge) Counts() (calls, hedged int64) { return h.calls.Load(), h.hedged.Load() }

// Delay is the hedge delay of stage (0 = not hedged yet).
func (h *Hedge) Delay(stage string) time.Duration {
	q, n := h.lat.Quantile(stage, h.p.Quantile)
	if n < h.p.MinSamples {
		return 0
	}
	return max(time.Duration(float64(q)*h.p.Multiplier), h.p.MinDelay)
}

type hedgeOut struct {
	resp *llm.Response
	err  error
	i    int
	sent *sendTrace
}

// sendTrace learns whether an attempt reached the provider: it entered
// the bare backend (marked by the [Deadline] layer), and an HTTP backend
// wrote the request. A hedged attempt cancelled before that is no call.
type sendTrace struct {
	entered, dialing, wrote atomic.Bool
}

type sendTraceKey struct{}

func withSendTrace(ctx context.Context, st *sendTrace) context.Context {
	ctx = context.WithValue(ctx, sendTraceKey{}, st)
	return httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		GetConn: func(string) { st.dialing.Store(true) },
		WroteRequest: func(i httptrace.WroteRequestInfo) {
			if i.Err == nil {
				st.wrote.Store(true)
			}
		},
	})
}

// markEntered records that an attempt reached the bare backend.
func markEntered(ctx context.Context) {
	if st, ok := ctx.Value(sendTraceKey{}).(*sendTrace); ok {
		st.entered.Store(true)
	}
}

// reached reports whether the attempt may have reached the provider (a
// backend that is not HTTP counts once entered).
func (st *sendTrace) reached() bool {
	return st == nil || st.entered.Load() && (!st.dialing.Load() || st.wrote.Load())
}

// Chat implements llm.Model.
func (h *Hedge) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	calls := h.calls.Add(1)
	delay := h.Delay(req.Stage)
	if delay == 0 {
		return h.model.Chat(ctx, req)
	}
	ch := make(chan hedgeOut, 2)
	var cancels [2]context.CancelCauseFunc
	launch := func(i int) {
		c, cancel := context.WithCancelCause(ctx)
		cancels[i] = cancel
		st := &sendTrace{}
		c = withSendTrace(c, st)
		go func() {
			r, err := h.model.Chat(c, req)
			ch <- hedgeOut{r, err, i, st}
		}()
	}
	defer func() {
		for _, c := range cancels {
			if c != nil {
				c(nil)
			}
		}
	}()
	launch(0)
	timer := time.NewTimer(delay)
	defer timer.Stop()
	started, running := 1, 1
	var failed []hedgeOut
	for {
		select {
		case <-timer.C:
			if started == 1 && running == 1 && !llm.Stopped(ctx) && float64(h.hedged.Load()+1) <= h.p.MaxExtra*float64(calls) {
				h.hedged.Add(1)
				llm.LoggerFrom(ctx).Debug("hedging a straggling call", "stage", req.Stage, "model", req.Model, "after", delay.String())
				launch(1)
				started, running = 2, 2
			}
		case o := <-ch:
			running--
			if o.err == nil {
				if running > 0 {
					cancels[1-o.i](llm.ErrHedgeLost)
					other := <-ch
					failed = append(failed, other)
				}
				return h.won(o.resp, failed), nil
			}
			failed = append(failed, o)
			if running == 0 && (started == 2 || llm.Stopped(ctx) || ctx.Err() != nil) {
				return nil, h.lost(failed)
			}
			if running == 0 {
				return nil, o.err // the only attempt failed before any hedge
			}
		}
	}
}

// won folds the other attempt (failed or cancelled) into the reply.
func (h *Hedge) won(resp *llm.Response, others []hedgeOut) *llm.Response {
	for _, o := range others {
		if !o.sent.reached() {
			continue // cancelled before it was sent: no call
		}
		cause, usage, limited := h.account(o, resp)
		resp.Attempts = max(resp.Attempts, 1) + 1
		resp.RateLimited += limited
		resp.FailedUsage.Add(usage)
		llm.AddCauses(&resp.FailedCauses, map[string]int{cause: 1})
	}
	return resp
}

// lost is the failure of a call whose attempts all failed.
func (h *Hedge) lost(outs []hedgeOut) error {
	e := &RetryError{Err: outs[len(outs)-1].err}
	for _, o := range outs {
		var inner *RetryError
		if errors.As(o.err, &inner) {
			e.Attempts += inner.Attempts
			e.RateLimited += inner.RateLimited
			e.FailedUsage.Add(inner.FailedUsage)
			llm.AddCauses(&e.Causes, inner.Causes)
			continue
		}
		cause, usage, limited := h.account(o, nil)
		e.Attempts++
		e.RateLimited += limited
		e.FailedUsage.Add(usage)
		llm.AddCauses(&e.Causes, map[string]int{cause: 1})
	}
	return e
}

// account is the cause, billed usage and 429 count of a failed attempt.
func (h *Hedge) account(o hedgeOut, winner *llm.Response) (cause string, usage llm.Usage, limited int) {
	if errors.Is(o.err, llm.ErrHedgeLost) || (o.err != nil && winner != nil && llm.KindOf(o.err) == llm.KindCancelled) {
		return llm.CauseHedged, winner.Usage, 0
	}
	if llm.KindOf(o.err) == llm.KindRateLimited {
		limited = 1
	}
	return llm.CauseOf(o.err), llm.BilledUsage(o.err), limited
}

// hedgePolicy reads the hedging options of a spec: hedge (on/off, default
// off), hedge_quantile, hedge_multiplier, hedge_min_samples, hedge_max_extra.
func hedgePolicy(o *options) (HedgePolicy, bool) {
	if !o.bool("hedge", false) {
		return HedgePolicy{}, false
	}
	p := HedgePolicy{MinSamples: int(o.int("hedge_min_samples"))}
	for key, dst := range map[string]*float64{"hedge_quantile": &p.Quantile, "hedge_multiplier": &p.Multiplier, "hedge_max_extra": &p.MaxExtra} {
		v := o.str(key, "")
		if v == "" {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		switch {
		case err != nil || f <= 0:
			o.bad(key, "a positive number")
		case key == "hedge_quantile" && f >= 1:
			o.bad(key, "a quantile below 1, such as 0.95")
		default:
			*dst = f
		}
	}
	return p, true
}
