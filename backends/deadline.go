package backends

import (
	"context"
	"errors"
	"math"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// DeadlinePolicy configures [Deadline], the stall deadline of each attempt.
// Zero fields take the defaults noted.
type DeadlinePolicy struct {
	// Off disables the adaptive deadline (latencies are still observed,
	// for hedging).
	Off bool
	// Fixed, when set, is the deadline of every attempt instead of one
	// derived from observed latencies.
	Fixed time.Duration
	// Multiplier scales the observed 99th percentile of a stage's
	// successful attempts into its deadline (default 6).
	Multiplier float64
	// MinSamples is how many successful attempts a stage needs before its
	// latencies set a deadline (default 50). A stage with fewer uses the
	// model's latencies over every stage, times FallbackMultiplier; a model
	// with fewer uses those of every model in the process, times
	// FallbackMultiplier twice.
	MinSamples int
	// FewSamples: while none of those has MinSamples, the first of them
	// with at least FewSamples sets the deadline, widened by
	// FallbackMultiplier once more (default 5, at most MinSamples). A
	// stalled call early in a run then costs seconds, not the model's
	// timeout.
	FewSamples int
	// FallbackMultiplier widens an estimate taken from a wider set of
	// calls than the attempt's own stage (default 2).
	FallbackMultiplier float64
	// Prior is the deadline of an attempt made before the process has
	// FewSamples latencies of any model, when no more is known than the
	// request: Prior plus PriorPerToken for each token of its reply budget
	// (the request's max tokens, or PriorTokens when it names none),
	// bounded by Ceiling (defaults 30s, 25ms — a reply at 40 tokens a
	// second — and 4096). A running attempt moves to the estimate from
	// latencies as soon as there is one.
	Prior         time.Duration
	PriorPerToken time.Duration
	PriorTokens   int
	// Floor is the shortest deadline ever set (default 2s).
	Floor time.Duration
	// Ceiling is the longest (model.timeout; 0 = none).
	Ceiling time.Duration
	// Window is how many recent latencies are kept per stage (default 512).
	Window int
	// Check is how often a waiting attempt compares its age with the
	// current deadline (default 100ms): an attempt that started before
	// enough latencies were known is still abandoned once they are.
	Check time.Duration
}

func (p DeadlinePolicy) withDefaults() DeadlinePolicy {
	p.Multiplier = cmpOr(p.Multiplier, 6)
	p.MinSamples = cmpOr(p.MinSamples, 50)
	p.FewSamples = min(cmpOr(p.FewSamples, 5), p.MinSamples)
	p.Prior = cmpOr(p.Prior, 30*time.Second)
	p.PriorPerToken = cmpOr(p.PriorPerToken, 25*time.Millisecond)
	p.PriorTokens = cmpOr(p.PriorTokens, 4096)
	p.FallbackMultiplier = cmpOr(p.FallbackMultiplier, 2)
	p.Floor = cmpOr(p.Floor, 2*time.Second)
	p.Window = cmpOr(p.Window, 512)
	p.Check = cmpOr(p.Check, 100*time.Millisecond)
	return p
}

// Latencies keeps the recent latencies of successful attempts, per stage
// and over all stages. It is safe for concurrent use.
type Latencies struct {
	window int
	parent *Latencies
	mu     sync.Mutex
	by     map[string]*ring
	all    ring
}

// processLatencies holds the latencies of every model in the process: the
// last fallback of a model with too few of its own.
var processLatencies = NewLatencies(0)

type ring struct {
	v    []time.Duration
	next int
	n    int64 // ever observed
	// sorted is v in order as of the n-th observation sortedAt; a
	// quantile re-sorts only after enough new observations (see fresh).
	sorted   []time.Duration
	sortedAt int64
}

// quantile returns the q-quantile of the kept latencies. Sorting the
// window on every call cost a worker several percent of its CPU, so the
// sorted copy is reused until 1/32 of the kept latencies (at least one)
// are new: the deadline is a heuristic, and a quantile that
// lags by a few samples does not change it in any way that matters.
func (r *ring) quantile(q float64) time.Duration {
	stale := r.n - r.sortedAt
	if r.sorted == nil || stale >= max(int64(len(r.v)/32), 1) {
		r.sorted = append(r.sorted[:0], r.v...)
		slices.Sort(r.sorted)
		r.sortedAt = r.n
	}
	v := r.sorted
	i := int(math.Ceil(q*float64(len(v)))) - 1
	return v[min(max(i, 0), len(v)-1)]
}

func (r *ring) add(d time.Duration, window int) {
	r.n++
	if len(r.v) < window {
		r.v = append(r.v, d)
		return
	}
	r.v[r.next] = d
	r.next = (r.next + 1) % window
}

// NewLatencies keeps the last window latencies per stage (default 512).
func NewLatencies(window int) *Latencies {
	return &Latencies{window: cmpOr(window, 512), by: map[string]*ring{}, all: ring{}}
}

// Observe records one successful attempt's latency.
func (l *Latencies) Observe(stage string, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := l.by[stage]
	if r == nil {
		r = &ring{}
		l.by[stage] = r
	}
	r.add(d, l.window)
	l.all.add(d, l.window)
	if l.parent != nil {
		l.parent.Observe(stage, d)
	}
}

// Quantile returns the q-quantile (0 < q <= 1) of stage's kept latencies
// ("" for every stage) and how many there are.
func (l *Latencies) Quantile(stage string, q float64) (time.Duration, int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	r := &l.all
	if stage != "" {
		r = l.by[stage]
	}
	if r == nil || len(r.v) == 0 {
		return 0, 0
	}
	return r.quantile(q), len(r.v)
}

// parentQuantile is the q-quantile of the parent's latencies over every
// stage (0, 0 without a parent).
func (l *Latencies) parentQuantile(q float64) (time.Duration, int) {
	if l.parent == nil {
		return 0, 0
	}
	return l.parent.Quantile("", q)
}

// Deadline abandons an attempt that gets no reply within its stall
// deadline — derived from the observed latencies of its stage (or, with
// few known, of wider sets of calls, or from its reply budget alone), with
// the model's timeout as the ceiling — and fails it as a retryable timeout
// whose cause is llm.CauseStall, so [Retry] tries again at once. The
// deadline of retry n is 2^(n-1) times the first's, so a call that is
// really slow is not abandoned over and over. It also records the latency
// of every successful attempt in its [Latencies].
type Deadline struct {
	model llm.Model
	p     DeadlinePolicy
	lat   *Latencies
}

var _ llm.Model = (*Deadline)(nil)

// NewDeadline wraps m; lat may be shared with a [Hedge] layer (nil = own).
func NewDeadline(m llm.Model, p DeadlinePolicy, lat *Latencies) *Deadline {
	p = p.withDefaults()
	if lat == nil {
		lat = NewLatencies(p.Window)
		lat.parent = processLatencies
	}
	return &Deadline{model: m, p: p, lat: lat}
}

// Latencies returns the layer's latency record.
func (d *Deadline) Latencies() *Latencies { return d.lat }

// String describes the layer.
func (d *Deadline) String() string { return "deadline(" + describe(d.model) + ")" }

// For returns the stall deadline of an attempt of stage with the default
// reply budget (0 = none: the call's own timeout rules).
func (d *Deadline) For(stage string, attempt int) time.Duration {
	return d.forRequest(stage, 0, attempt)
}

// forRequest is the stall deadline of an attempt of stage whose reply may
// be up to maxTokens long (0 = unsaid).
func (d *Deadline) forRequest(stage string, maxTokens, attempt int) time.Duration {
	if d.p.Off {
		return 0
	}
	var dl time.Duration
	switch {
	case d.p.Fixed > 0:
		dl = d.p.Fixed
	default:
		if est, ok := d.estimate(stage); ok {
			dl = max(est, d.p.Floor)
		} else {
			if maxTokens <= 0 {
				maxTokens = d.p.PriorTokens
			}
			dl = d.p.Prior + time.Duration(maxTokens)*d.p.PriorPerToken
		}
	}
	dl <<= min(max(attempt-1, 0), 10)
	if d.p.Ceiling > 0 && dl >= d.p.Ceiling {
		return 0 // the call's own timeout comes first
	}
	return dl
}

// estimate is the deadline the observed latencies give: the 99th
// percentile of the narrowest set of calls that has MinSamples — the
// stage's, the model's, the process's — times Multiplier, widened by
// FallbackMultiplier for each step away from the stage; or, while none
// has that many, of the narrowest with FewSamples, widened once more.
func (d *Deadline) estimate(stage string) (time.Duration, bool) {
	type scope struct {
		q time.Duration
		n int
	}
	var scopes [3]scope
	scopes[0].q, scopes[0].n = d.lat.Quantile(stage, 0.99)
	scopes[1].q, scopes[1].n = d.lat.Quantile("", 0.99)
	scopes[2].q, scopes[2].n = d.lat.parentQuantile(0.99)
	for _, need := range []int{d.p.MinSamples, d.p.FewSamples} {
		widen := d.p.Multiplier
		if need < d.p.MinSamples {
			widen *= d.p.FallbackMultiplier
		}
		for _, s := range scopes {
			if s.n >= need && s.n > 0 {
				return time.Duration(float64(s.q) * widen), true
			}
			widen *= d.p.FallbackMultiplier
		}
	}
	return 0, false
}

// Chat implements llm.Model.
func (d *Deadline) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	markEntered(ctx)
	start := time.Now()
	attempt := attemptOf(ctx)
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watched := make(chan struct{})
	var abandonedAfter atomic.Int64
	if !d.p.Off {
		go func() {
			t := time.NewTicker(d.p.Check)
			defer t.Stop()
			for {
				select {
				case <-watched:
					return
				case <-cctx.Done():
					return
				case <-t.C:
					if dl := d.forRequest(req.Stage, req.MaxTokens, attempt); dl > 0 && time.Since(start) >= dl {
						abandonedAfter.Store(int64(dl))
						cancel(llm.ErrStalled)
						return
					}
				}
			}
		}()
	}
	resp, err := d.model.Chat(cctx, req)
	close(watched)
	if err == nil {
		d.lat.Observe(req.Stage, time.Since(start))
		return resp, nil
	}
	if ctx.Err() == nil && errors.Is(context.Cause(cctx), llm.ErrStalled) {
		return nil, &llm.Error{Kind: llm.KindTimeout,
			Msg: "no reply within the stall deadline of " + time.Duration(abandonedAfter.Load()).Round(time.Millisecond).String() + " (abandoned, attempt " + strconv.Itoa(attempt) + ")",
			Err: llm.ErrStalled}
	}
	return nil, err
}

// deadlinePolicy reads the stall-deadline options of a spec:
// stall_deadline (auto, off, or a fixed duration), stall_multiplier,
// stall_min_samples, stall_few_samples, stall_floor, stall_prior.
func deadlinePolicy(o *options, ceiling time.Duration, agent bool) DeadlinePolicy {
	p := DeadlinePolicy{Ceiling: ceiling}
	// An agent harness's call is a whole session of tool calls whose
	// length has no tail a multiple of its peers' bounds: by default it
	// runs to the model's timeout, at which the exec backend kills its
	// process group.
	def := "auto"
	if agent {
		def = "off"
	}
	switch v := o.str("stall_deadline", def); v {
	case "auto":
	case "off":
		p.Off = true
	default:
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			o.bad("stall_deadline", `auto, off, or a positive duration such as "90s"`)
		}
		p.Fixed = d
	}
	if v := o.str("stall_multiplier", ""); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f < 1 {
			o.bad("stall_multiplier", "a number >= 1")
		} else {
			p.Multiplier = f
		}
	}
	p.MinSamples = int(o.int("stall_min_samples"))
	p.FewSamples = int(o.int("stall_few_samples"))
	p.Floor = o.duration("stall_floor")
	p.Prior = o.duration("stall_prior")
	return p
}
