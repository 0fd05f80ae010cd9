package trainer

import (
	"context"
	"slices"
	"testing"
	"time"

	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// TestHedgeDelay: no delay before MinSamples times are seen; then the
// larger of Multiplier × the Quantile, two medians and MinDelay.
func TestHedgeDelay(t *testing.T) {
	t.Parallel()
	p := DefaultHedge()
	p.Quantile, p.Multiplier, p.MinSamples, p.MinDelay = 0.75, 2, 4, 100*time.Millisecond
	h := newHedger(&Trainer{}, p, nil)
	k := latKey{"m", "rollout"}
	for _, ms := range []int{300, 200, 400} {
		h.observe(k, time.Duration(ms)*time.Millisecond)
	}
	if d := h.delay(k); d != 0 {
		t.Fatalf("delay after 3 times = %v, want 0 (MinSamples 4)", d)
	}
	h.observe(k, 3*time.Second)
	// Sorted 200, 300, 400, 3000 ms: the 0.75 quantile is 400 ms (x2 =
	// 800 ms), the median 300 ms (x2 = 600 ms).
	if d := h.delay(k); d != 800*time.Millisecond {
		t.Errorf("delay = %v, want 800ms", d)
	}
	for range 20 {
		h.observe(k, 50*time.Millisecond)
	}
	if d := h.delay(k); d != 100*time.Millisecond {
		t.Errorf("delay with fast calls = %v, want MinDelay 100ms", d)
	}
}

// TestHedgeDelayFallsBack: a stage with fewer than MinSamples times takes
// its delay from its model's times over every stage, widened once, or,
// while the model has too few as well, from every model's, widened twice;
// with too few anywhere there is none. The stage's own times, however
// few, keep it at least twice their median.
func TestHedgeDelayFallsBack(t *testing.T) {
	t.Parallel()
	p := DefaultHedge()
	p.Quantile, p.Multiplier, p.MinSamples, p.Widen, p.MinDelay = 0.75, 2, 4, 2, 10*time.Millisecond
	h := newHedger(&Trainer{}, p, nil)
	opt, tgt := "optimizer-model", "target-model"
	for range 3 {
		h.observe(latKey{tgt, "baseline"}, 100*time.Millisecond)
	}
	if d := h.delay(latKey{opt, "rank"}); d != 0 {
		t.Fatalf("delay with 3 times in the fleet = %v, want 0 (MinSamples 4)", d)
	}
	h.observe(latKey{tgt, "baseline"}, 100*time.Millisecond)
	// Every model's: 4 x 100 ms; 2 x 100 ms widened twice (x4) = 800 ms.
	if d := h.delay(latKey{opt, "rank"}); d != 800*time.Millisecond {
		t.Errorf("delay of an optimizer stage from the target's times = %v, want 800ms", d)
	}
	for _, ms := range []int{300, 300, 300, 300} {
		h.observe(latKey{opt, "reflect"}, time.Duration(ms)*time.Millisecond)
	}
	// The model's own: 2 x 300 ms widened once (x2) = 1.2 s.
	if d := h.delay(latKey{opt, "rank"}); d != 1200*time.Millisecond {
		t.Errorf("delay of a first rank call from the model's reflect times = %v, want 1.2s", d)
	}
	// A first rank call that took 5 s: the next waits at least 10 s.
	h.observe(latKey{opt, "rank"}, 5*time.Second)
	if d := h.delay(latKey{opt, "rank"}); d != 10*time.Second {
		t.Errorf("delay after one 5 s rank call = %v, want 10s", d)
	}
	// The stage's own times rule once it has MinSamples.
	for range 3 {
		h.observe(latKey{opt, "rank"}, 200*time.Millisecond)
	}
	if d := h.delay(latKey{opt, "rank"}); d != 400*time.Millisecond {
		t.Errorf("delay with 4 rank times = %v, want 400ms (sorted 200, 200, 200, 5000 ms: 0.75 quantile x2)", d)
	}
}

// TestHedgeStartOf: with fewer slots than tasks, a task starts when the
// result that freed its slot came in, in submission order; tasks whose
// result was known at submission take no slot.
func TestHedgeStartOf(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	w := &hedgeWave{slots: 2}
	for i := range 5 {
		w.entries = append(w.entries, &hedgeEntry{submitted: t0, known: i == 1})
	}
	w.arrivals = []time.Time{t0.Add(time.Second)}
	want := []time.Time{t0, t0, t0, t0.Add(time.Second), {}}
	for i, wt := range want {
		if got := w.startOf(i); !got.Equal(wt) {
			t.Errorf("startOf(%d) = %v, want %v", i, got, wt)
		}
	}
}

// recordedOnly is a Dispatcher that only knows recorded results.
type recordedOnly struct {
	Dispatcher
	res map[string]*pb.Result
}

func (d recordedOnly) Lookup(id string) (*pb.Result, bool) { r, ok := d.res[id]; return r, ok }

// TestHedgeSubstitute: a task whose copy's result was recorded (in this
// process or, on resume, before it) is asked for under the copy's id, so
// its result is reused; a failed copy is not used, and other tasks keep
// their ids.
func TestHedgeSubstitute(t *testing.T) {
	t.Parallel()
	d := recordedOnly{res: map[string]*pb.Result{
		"r/a" + hedgeSuffix: {Outcome: pb.Outcome_OUTCOME_OK},
		"r/b" + hedgeSuffix: {Outcome: pb.Outcome_OUTCOME_MODEL_ERROR},
	}}
	tr := &Trainer{d: d}
	h := newHedger(tr, DefaultHedge(), map[string]struct{}{"r/a" + hedgeSuffix: {}, "r/b" + hedgeSuffix: {}, "r/c": {}})
	tasks := []*pb.Task{{Id: "r/a"}, {Id: "r/b"}, {Id: "r/c"}}
	h.substitute(tasks)
	for i, want := range []string{"r/a" + hedgeSuffix, "r/b", "r/c"} {
		if tasks[i].GetId() != want {
			t.Errorf("task %d asked for as %q, want %q", i, tasks[i].GetId(), want)
		}
	}
}

// TestDefaultHedgeDelay: at a steady latency the default policy's delay
// is twice the 0.8 quantile of the observed times (two medians, near
// enough); MinDelay binds only for calls faster than half of it. So a
// stalled task of a wave at 100 ms a call is copied after about 200 ms,
// not after MinDelay, and a call of 0.5 s is not copied before 1 s.
func TestDefaultHedgeDelay(t *testing.T) {
	t.Parallel()
	p := DefaultHedge()
	for _, c := range []struct {
		name string
		call time.Duration
		want time.Duration
	}{
		{"sim-llm at 100 ms", 100 * time.Millisecond, 212 * time.Millisecond},
		{"paper preset at 0.5 s", 500 * time.Millisecond, 1012 * time.Millisecond},
		{"in-process sim", 2 * time.Millisecond, p.MinDelay},
	} {
		h := newHedger(&Trainer{}, p, nil)
		k := latKey{"m", "rollout"}
		// The call plus 0 to 7 ms of the path to and from the worker, five
		// times each: sorted, the 0.8 quantile is the call plus 6 ms.
		for i := range 40 {
			h.observe(k, c.call+time.Duration(i%8)*time.Millisecond)
		}
		if d := h.delay(k); d != c.want {
			t.Errorf("%s: delay %v, want %v", c.name, d, c.want)
		}
	}
}

// slotsLater is a Dispatcher whose workers' slots become known after a
// wave has begun.
type slotsLater struct {
	Dispatcher
	slots int
}

func (d *slotsLater) TargetSlots() int { return d.slots }

// TestHedgeWaveLearnsSlots: a run's first target wave, begun before any
// worker was seen (slots 0), takes the fleet's slots once they are known,
// so a task that waited for a slot is timed from when the slot freed, not
// from its submission.
func TestHedgeWaveLearnsSlots(t *testing.T) {
	t.Parallel()
	t0 := time.Unix(1000, 0)
	now := t0
	d := &slotsLater{}
	h := newHedger(&Trainer{now: func() time.Time { return now }, d: d}, DefaultHedge(), nil)
	w := h.wave(context.Background(), "baseline", "target", "m", 3, d.TargetSlots())
	for range 3 {
		w.entries = append(w.entries, &hedgeEntry{submitted: t0})
	}
	d.slots = 2 // the workers register
	ok := &pb.Result{Outcome: pb.Outcome_OUTCOME_OK}
	now = t0.Add(100 * time.Millisecond)
	w.resolved(w.entries[0], ok)
	w.resolved(w.entries[1], ok)
	now = t0.Add(200 * time.Millisecond)
	w.resolved(w.entries[2], ok) // started when the first result freed its slot
	got := h.times[latKey{"m", "baseline"}]
	want := []time.Duration{100 * time.Millisecond, 100 * time.Millisecond, 100 * time.Millisecond}
	if !slices.Equal(got, want) {
		t.Errorf("times %v, want %v", got, want)
	}
}
