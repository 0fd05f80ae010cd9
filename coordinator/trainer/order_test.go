package trainer

import (
	"slices"
	"testing"

	"github.com/skillfleet/skillfleet/coordinator/gate"
	"github.com/skillfleet/skillfleet/pkg/bench"
)

func scored(hard ...float64) []gate.Item {
	out := make([]gate.Item, len(hard))
	for i, h := range hard {
		out[i] = gate.Item{Status: gate.Scored, Hard: h, Soft: h}
	}
	return out
}

// TestHardFirstQueuesLikelyFailuresFirst: an early-stoppable gate queues
// the items the current skill failed first, then by the other measured
// skills' scores, then in item order; with nothing measured it keeps the
// item order.
func TestHardFirstQueuesLikelyFailuresFirst(t *testing.T) {
	t.Parallel()
	tr := &Trainer{s: Settings{GateMetric: gate.Hard}, selCache: map[string]measure{}}
	tr.st.CurrentHash = "cur"
	if o := tr.hardFirst(5); o != nil {
		t.Fatalf("order with nothing measured = %v, want nil (item order)", o)
	}
	tr.selCache["cur"] = measure{Items: scored(1, 0, 1, 1, 0)}
	tr.selCache["old"] = measure{Items: scored(0, 1, 1, 0, 0)}
	tr.selCache["bad"] = measure{Items: []gate.Item{{Status: gate.Failed}, {Status: gate.Scored, Hard: 1}, {Status: gate.Scored, Hard: 1}, {Status: gate.Scored}, {Status: gate.Scored, Hard: 1}}}
	// Current failed 1 and 4; among them 4 scores lower over all skills
	// (0+0+1 against 0+1+1). Of the rest, 0 and 3 sum 1, item 2 sums 3.
	want := []int{4, 1, 0, 3, 2}
	if o := tr.hardFirst(5); !slices.Equal(o, want) {
		t.Fatalf("order = %v, want %v", o, want)
	}
	if o := tr.hardFirst(6); o != nil {
		t.Fatalf("order for another item count = %v, want nil", o)
	}
}

// TestQueueOrderLongestFirst: a wave without an order of its own queues
// the longest items first, equal lengths in item order; a given order is
// kept.
func TestQueueOrderLongestFirst(t *testing.T) {
	t.Parallel()
	items := []bench.Item{{Raw: []byte("ab")}, {Raw: []byte("abcd")}, {Raw: []byte("a")}, {Raw: []byte("abcd")}, {Raw: []byte("ab")}}
	if o, want := queueOrder(nil, items), []int{1, 3, 0, 4, 2}; !slices.Equal(o, want) {
		t.Errorf("order = %v, want %v", o, want)
	}
	if o, want := queueOrder([]int{4, 3, 2, 1, 0}, items), []int{4, 3, 2, 1, 0}; !slices.Equal(o, want) {
		t.Errorf("given order = %v, want %v", o, want)
	}
}
