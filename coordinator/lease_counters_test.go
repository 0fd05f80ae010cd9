package coordinator

import (
	"context"
	"errors"
	"log/slog"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/store"
	"github.com/skillfleet/skillfleet/pkg/store/memstore"
	"github.com/skillfleet/skillfleet/pkg/usage"
)

// failNth is a counter store whose nth Incr fails once.
type failNth struct {
	store.Counters
	n, calls int
}

func (f *failNth) Incr(ctx context.Context, name string, d int64) (int64, error) {
	f.calls++
	if f.calls == f.n {
		return 0, errors.New("redis: connection reset")
	}
	return f.Counters.Incr(ctx, name, d)
}

// TestCounterPushThatFailsPartWayCountsOnce: a push of a run's spend
// whose third counter fails leaves the first two counted; the next push
// adds only what is missing, so every counter ends at the run's total.
func TestCounterPushThatFailsPartWayCountsOnce(t *testing.T) {
	mem := memstore.New(memstore.Options{}).Counters()
	p := &counterPush{c: &failNth{Counters: mem, n: 3}, run: "r", log: slog.New(slog.DiscardHandler), sent: map[string]int64{}}
	first := usage.Totals{Tasks: 10, Calls: 12, Input: 1000, Output: 200, CacheHits: 3}
	p.push(t.Context(), first)
	second := usage.Totals{Tasks: 15, Calls: 18, Input: 1500, Output: 300, CacheHits: 4}
	p.push(t.Context(), second)
	for name, want := range map[string]int64{"tasks": 15, "calls": 18, "input_tokens": 1500, "output_tokens": 300, "cache_hits": 4} {
		got, err := mem.Get(t.Context(), store.RunCounter("r", name))
		if err != nil || got != want {
			t.Errorf("counter %s = %d (%v), want %d", name, got, err, want)
		}
	}
}
