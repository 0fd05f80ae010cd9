package trainer

import (
	"math"
	"testing"
	"time"
)

// TestHeavyTail: runtime.prefetch=auto's test. A steady latency (with
// some jitter) is no tail; log-normal times of sigma 1 are; too few times,
// or hedging off (nothing observed), say no.
func TestHeavyTail(t *testing.T) {
	t.Parallel()
	steady := newHedger(&Trainer{}, DefaultHedge(), nil)
	tail := newHedger(&Trainer{}, DefaultHedge(), nil)
	// Quantiles of a log-normal of median 300 ms and sigma 1, spread evenly.
	z := []float64{-1.64, -1.28, -1.04, -0.84, -0.67, -0.52, -0.39, -0.25, -0.13, 0, 0.13, 0.25, 0.39, 0.52, 0.67, 0.84, 1.04, 1.28, 1.64, 2.33}
	for i := range 40 {
		steady.observe(latKey{"m", "rollout"}, time.Duration(500+i%7*20)*time.Millisecond)
		tail.observe(latKey{"m", "rollout"}, time.Duration(300*math.Exp(z[i%len(z)]))*time.Millisecond)
	}
	if steady.heavyTail("m") {
		t.Error("a steady 500-620 ms latency counted as a heavy tail")
	}
	if !tail.heavyTail("m") {
		t.Error("log-normal times of sigma 1 not counted as a heavy tail")
	}
	fast := newHedger(&Trainer{}, DefaultHedge(), nil)
	for i := range 40 {
		// 100 ms calls on a busy machine, one in four queued to 300 ms:
		// the 90th percentile is three medians, but only 200 ms beyond.
		d := 100 * time.Millisecond
		if i%4 == 0 {
			d = 300 * time.Millisecond
		}
		fast.observe(latKey{"m", "rollout"}, d)
	}
	if fast.heavyTail("m") {
		t.Error("100 ms calls, a quarter queued to 300 ms, counted as a heavy tail: a wave's slowest call costs little there")
	}
	if tail.heavyTail("other") {
		t.Error("a model with no times counted as a heavy tail")
	}
	few := newHedger(&Trainer{}, DefaultHedge(), nil)
	for i := range tailSamples - 1 {
		few.observe(latKey{"m", "gate"}, time.Duration(300*math.Exp(z[i%len(z)]))*time.Millisecond)
	}
	if few.heavyTail("m") {
		t.Errorf("%d times counted: want at least %d", tailSamples-1, tailSamples)
	}
	off := DefaultHedge()
	off.Enabled = false
	if newHedger(&Trainer{}, off, nil).heavyTail("m") {
		t.Error("heavy tail with hedging off")
	}
	var none *hedger
	if none.heavyTail("m") {
		t.Error("heavy tail with no hedger")
	}
}
