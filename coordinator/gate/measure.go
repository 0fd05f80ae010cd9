package gate

// Status is where one selection item stands in a gate evaluation.
type Status uint8

// Item statuses.
const (
	// Pending items have no result yet.
	Pending Status = iota
	// Scored items have a hard and a soft score.
	Scored
	// Failed items hit an infrastructure failure (timeout, 5xx, rate
	// limit after retries, invalid reply): they have no score and are left
	// out of the gate's means (fix B7), and count against coverage.
	Failed
)

// Item is one selection item's result, in item order.
type Item struct {
	Status     Status
	Hard, Soft float64
}

// Measurement is a gate evaluation reduced to means over scored items.
type Measurement struct {
	Hard, Soft float64
	// Scored and Total count the scored items and all items.
	Scored, Total int
}

// Measure returns the means of the scored items' hard and soft scores,
// summed in item order (see [Mean]).
func Measure(items []Item) Measurement {
	hard := make([]float64, 0, len(items))
	soft := make([]float64, 0, len(items))
	for _, it := range items {
		if it.Status == Scored {
			hard = append(hard, it.Hard)
			soft = append(soft, it.Soft)
		}
	}
	return Measurement{Hard: Mean(hard), Soft: Mean(soft), Scored: len(hard), Total: len(items)}
}

// EarlyStop reports whether a candidate still being evaluated can no
// longer strictly beat current, and the best gate score it can still
// reach: every pending item counted as hard = soft = 1 (the top score),
// failed items left out, the result scored with the metric, mixedWeight
// and the candidate's density bonus (a constant of its text; 0 when the
// bonus is off). items must hold every selection item in item order.
//
// The bound is computed with the same float operations, in the same order,
// as the final score, and each of them is monotone, so the final score can
// never exceed it: stopping when upper <= current never changes a verdict
// (ties reject). Items that fail later only leave the means: a mean over
// fewer items, all at most 1, cannot exceed the bound but by rounding.
func EarlyStop(items []Item, m Metric, mixedWeight, bonus, current float64) (stop bool, upper float64) {
	best := make([]Item, len(items))
	for i, it := range items {
		if it.Status == Pending {
			it = Item{Status: Scored, Hard: 1, Soft: 1}
		}
		best[i] = it
	}
	ms := Measure(best)
	upper = Score(ms.Hard, ms.Soft, m, mixedWeight) + bonus
	return !(upper > current), upper
}

// FailuresToStop is the least number of further results that can make
// [EarlyStop] fire: how many pending items must come back with the
// lowest score (hard = soft = 0) before the candidate's best reachable
// score falls to current or below. It is 0 when EarlyStop fires already
// and len(pending)+1 when no outcome of the pending items can make it
// fire. A gate evaluation that keeps no more tasks in flight than this
// wastes no call when it stops: the stop needs every one of them.
func FailuresToStop(items []Item, m Metric, mixedWeight, bonus, current float64) int {
	pending := make([]int, 0, len(items))
	for i, it := range items {
		if it.Status == Pending {
			pending = append(pending, i)
		}
	}
	trial := make([]Item, len(items))
	// stops reports whether EarlyStop fires once the first k pending items
	// score 0; it is monotone in k, so a binary search finds the least k.
	stops := func(k int) bool {
		copy(trial, items)
		for _, i := range pending[:k] {
			trial[i] = Item{Status: Scored}
		}
		stop, _ := EarlyStop(trial, m, mixedWeight, bonus, current)
		return stop
	}
	lo, hi := 0, len(pending)
	if !stops(hi) {
		return len(pending) + 1
	}
	for lo < hi {
		mid := (lo + hi) / 2
		if stops(mid) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}
