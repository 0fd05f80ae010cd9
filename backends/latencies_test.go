package backends

import (
	"testing"
	"time"
)

// The sorted copy behind Quantile is reused between observations: exact
// while few latencies are kept, and never more than 1/32 of the window
// behind once it is full.
func TestLatenciesQuantileTracksObservations(t *testing.T) {
	l := NewLatencies(512)
	for i := 1; i <= 40; i++ {
		l.Observe("rollout", time.Duration(i)*time.Millisecond)
		if q, n := l.Quantile("rollout", 1); q != time.Duration(i)*time.Millisecond || n != i {
			t.Fatalf("after %d observations: max = %v over %d, want %dms", i, q, n, i)
		}
	}
	for i := 41; i <= 2000; i++ {
		l.Observe("rollout", time.Duration(i)*time.Millisecond)
		q, _ := l.Quantile("rollout", 1)
		if lag := time.Duration(i)*time.Millisecond - q; lag < 0 || lag >= 16*time.Millisecond {
			t.Fatalf("after %d observations: max = %v, lags by %v (more than 512/32 samples)", i, q, lag)
		}
	}
	// A burst of slow calls shows within a sixteenth of the window.
	for range 16 {
		l.Observe("rollout", time.Hour)
	}
	if q, _ := l.Quantile("rollout", 1); q != time.Hour {
		t.Fatalf("max after 16 slow calls = %v, want 1h", q)
	}
}

func BenchmarkLatenciesQuantile(b *testing.B) {
	l := NewLatencies(512)
	for i := range 512 {
		l.Observe("rollout", time.Duration(i)*time.Millisecond)
	}
	b.ResetTimer()
	for i := range b.N {
		l.Observe("rollout", time.Duration(i%700)*time.Millisecond)
		l.Quantile("rollout", 0.99)
	}
}
