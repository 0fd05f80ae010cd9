package trainer

import (
	"context"
	"fmt"
	"sort"

	"github.com/skillfleet/skillfleet/coordinator/gate"
	"github.com/skillfleet/skillfleet/pkg/bench"
)

// measure is a skill's score on the selection split.
type measure struct {
	Hard, Soft float64
	N, Scored  int
	Score      float64
	// Upper is the early-stop bound when the evaluation stopped early.
	Upper float64
	// Bonus is the density bonus included in Score.
	Bonus float64
	// Items are the per-item outcomes in item order (the paired gate
	// compares them item by item).
	Items []gate.Item
}

// measureSel scores a skill on the selection split, with early stop against
// beat when set (beat < 0 disables it). It returns the measure, whether the
// evaluation stopped early, and the coverage error if too few items scored.
// The means, the early-stop bound and the coverage check are package gate's.
func (t *Trainer) measureSel(ctx context.Context, stage string, step int, skillText string, beat float64) (measure, bool, error) {
	items := t.selItems()
	n := len(items)
	density := t.densityBonus(skillText)
	if t.s.GateRepeats > 1 {
		return t.measureRepeated(ctx, stage, step, skillText, density)
	}
	var upper float64
	var stopFn func([]rollResult, int) bool
	var window func([]rollResult) int
	var order []int
	// Early stop is valid with the paired test too: a candidate that
	// cannot strictly beat current is rejected whatever its p-value.
	if t.s.EarlyStop && beat >= 0 && t.s.GateMetric != "" {
		stopFn = func(done []rollResult, _ int) bool {
			stop, ub := gate.EarlyStop(gateItems(done), t.s.GateMetric, t.s.MixedWeight, density, beat)
			upper = ub
			return stop
		}
		order = t.hardFirst(len(items))
		if t.s.GateWindow {
			window = func(done []rollResult) int {
				return gateWindow(gateItems(done), t.s.GateMetric, t.s.MixedWeight, density, beat)
			}
		}
	}
	rs, stopped, err := t.rollout(ctx, rolloutReq{Stage: stage, Step: step, Skill: skillText, Items: items, Split: bench.SplitVal, Stop: stopFn, Order: order, Window: window})
	if err != nil {
		return measure{}, false, err
	}
	m := summarize(rs)
	m.Bonus = density
	m.Score = gate.Score(m.Hard, m.Soft, t.s.GateMetric, t.s.MixedWeight) + density
	if stopped {
		m.Upper = upper
		return m, true, nil
	}
	if _, ok := gate.Coverage(m.Scored, n, t.s.MinCoverage); n > 0 && !ok {
		return m, false, fmt.Errorf("%w: %s scored %d of %d selection items (min_coverage %.2f); infrastructure failures, see the worker logs", ErrCoverage, stage, m.Scored, n, t.s.MinCoverage)
	}
	return m, false, nil
}

// gateWindow is how many selection tasks an early-stoppable gate keeps in
// flight: the results its stopping rule still needs before it could
// reject the candidate (each of those must come in before the stop, so
// none is wasted), plus one for each item the candidate has passed, so a
// candidate that keeps up is measured nearly as fast as with every task
// in flight. A task in flight beyond the first term is a call the stop
// may not need; the second term bounds them by the candidate's record.
func gateWindow(items []gate.Item, m gate.Metric, mixedWeight, bonus, current float64) int {
	need := gate.FailuresToStop(items, m, mixedWeight, bonus, current)
	passed := 0
	for _, it := range items {
		if it.Status == gate.Scored && gate.Score(it.Hard, it.Soft, m, mixedWeight) >= current {
			passed++
		}
	}
	return max(need, 1) + passed
}

// hardFirst is the order an early-stoppable selection evaluation queues
// its n items in: the items the current skill scored lowest on first, ties
// broken by the mean score over every skill measured on selection so far,
// then by item order. A candidate is derived from the current skill and
// tends to fail where it failed, so a candidate that cannot win reaches its
// early-stop bound after far fewer results, and fewer calls are made. The
// decision is the same in any order: early stop rejects exactly the
// candidates that the full evaluation rejects, and an accepted candidate
// is measured on every item. nil when nothing has been measured yet.
func (t *Trainer) hardFirst(n int) []int {
	cur, ok := t.selCache[t.st.CurrentHash]
	if !ok || len(cur.Items) != n {
		return nil
	}
	score := func(it gate.Item) float64 {
		if it.Status != gate.Scored {
			return 0
		}
		return gate.Score(it.Hard, it.Soft, t.s.GateMetric, t.s.MixedWeight)
	}
	// Summed in hash order: the order, and so the call count, is the same
	// in every run.
	hashes := make([]string, 0, len(t.selCache))
	for h := range t.selCache {
		hashes = append(hashes, h)
	}
	sort.Strings(hashes)
	sum := make([]float64, n)
	for _, h := range hashes {
		m := t.selCache[h]
		if len(m.Items) != n {
			continue
		}
		for i, it := range m.Items {
			sum[i] += score(it)
		}
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		i, j := order[a], order[b]
		if si, sj := score(cur.Items[i]), score(cur.Items[j]); si != sj {
			return si < sj
		}
		return sum[i] < sum[j]
	})
	return order
}

// measureRepeated measures a skill gate_repeats times on every selection
// item (samples 0..R-1, which the target answers independently) and scores
// each item by its mean over the repeats it was scored in. Early stop does
// not apply: the bound is over one sample per item.
func (t *Trainer) measureRepeated(ctx context.Context, stage string, step int, skillText string, density float64) (measure, bool, error) {
	items := t.selItems()
	n := len(items)
	sum := make([]gate.Item, n)
	count := make([]int, n)
	for r := range t.s.GateRepeats {
		rs, _, err := t.rollout(ctx, rolloutReq{Stage: stage, Step: step, Skill: skillText, Items: items, Split: bench.SplitVal, Sample: r})
		if err != nil {
			return measure{}, false, err
		}
		for i, it := range gateItems(rs) {
			if it.Status == gate.Scored {
				sum[i].Hard += it.Hard
				sum[i].Soft += it.Soft
				count[i]++
			}
		}
	}
	for i := range sum {
		if count[i] == 0 {
			sum[i] = gate.Item{Status: gate.Failed}
			continue
		}
		sum[i] = gate.Item{Status: gate.Scored, Hard: sum[i].Hard / float64(count[i]), Soft: sum[i].Soft / float64(count[i])}
	}
	ms := gate.Measure(sum)
	m := measure{Hard: ms.Hard, Soft: ms.Soft, N: ms.Total, Scored: ms.Scored, Items: sum, Bonus: density}
	m.Score = gate.Score(m.Hard, m.Soft, t.s.GateMetric, t.s.MixedWeight) + density
	if _, ok := gate.Coverage(m.Scored, n, t.s.MinCoverage); n > 0 && !ok {
		return m, false, fmt.Errorf("%w: %s scored %d of %d selection items over %d repeats (min_coverage %.2f); infrastructure failures, see the worker logs", ErrCoverage, stage, m.Scored, n, t.s.GateRepeats, t.s.MinCoverage)
	}
	return m, false, nil
}

// pairedP is the p-value of the paired test that the candidate beats
// current on the selection items both were scored on: the exact McNemar
// test on hard outcomes when each item was measured once with the hard
// metric, else a paired bootstrap (2000 resamples, seeded by the run seed
// and the step) on per-item gate scores plus each skill's density bonus.
func (t *Trainer) pairedP(cur, cand measure, g int) (float64, error) {
	var a, b []float64
	hardOnce := t.s.GateRepeats <= 1 && t.s.GateMetric == gate.Hard && cur.Bonus == cand.Bonus
	for i := range min(len(cur.Items), len(cand.Items)) {
		x, y := cur.Items[i], cand.Items[i]
		if x.Status != gate.Scored || y.Status != gate.Scored {
			continue
		}
		if hardOnce {
			a, b = append(a, x.Hard), append(b, y.Hard)
			continue
		}
		a = append(a, gate.Score(x.Hard, x.Soft, t.s.GateMetric, t.s.MixedWeight)+cur.Bonus)
		b = append(b, gate.Score(y.Hard, y.Soft, t.s.GateMetric, t.s.MixedWeight)+cand.Bonus)
	}
	if hardOnce {
		r, err := gate.McNemar(a, b, gate.Greater)
		return r.P, err
	}
	r, err := gate.Bootstrap(a, b, pairedResamples, t.s.Seed*1000+int64(g), gate.Greater)
	return r.P, err
}

// pairedResamples is the paired bootstrap's resample count.
const pairedResamples = 2000

// gateItems are rollout results (in item order) as the gate sees them: a
// result not yet in is pending, one that is not OK failed.
func gateItems(rs []rollResult) []gate.Item {
	out := make([]gate.Item, len(rs))
	for i, r := range rs {
		switch {
		case r.Res == nil:
			out[i] = gate.Item{Status: gate.Pending}
		case r.ok():
			out[i] = gate.Item{Status: gate.Scored, Hard: r.hard(), Soft: r.soft()}
		default:
			out[i] = gate.Item{Status: gate.Failed}
		}
	}
	return out
}

// summarize measures results in item order (gate.Measure); it keeps the
// per-item outcomes for the paired gate.
func summarize(rs []rollResult) measure {
	items := gateItems(rs)
	for i := range items {
		if items[i].Status == gate.Pending {
			items[i].Status = gate.Failed // cancelled: no score
		}
	}
	ms := gate.Measure(items)
	return measure{Hard: ms.Hard, Soft: ms.Soft, N: ms.Total, Scored: ms.Scored, Items: items}
}

func (t *Trainer) selItems() []bench.Item {
	items := t.splits.Val
	if t.s.SelEnvNum > 0 && t.s.SelEnvNum < len(items) {
		items = items[:t.s.SelEnvNum]
	}
	return items
}

func (t *Trainer) testItems() []bench.Item {
	items := t.splits.Test
	if t.s.TestEnvNum > 0 && t.s.TestEnvNum < len(items) {
		items = items[:t.s.TestEnvNum]
	}
	return items
}

// byTaskType groups scored results by task type, with "overall".
func byTaskType(rs []rollResult) map[string]TypeScore {
	out := map[string]TypeScore{}
	add := func(k string, r rollResult) {
		s := out[k]
		s.Total++
		if r.ok() {
			s.Scored++
			s.Hard += r.hard()
			s.Soft += r.soft()
		}
		out[k] = s
	}
	for _, r := range rs {
		tt := r.Res.GetRollout().GetTaskType()
		if tt == "" {
			tt = r.Item.TaskType
		}
		if tt == "" {
			tt = "default"
		}
		add(tt, r)
		add("overall", r)
	}
	for k, s := range out {
		if s.Scored > 0 {
			s.Hard /= float64(s.Scored)
			s.Soft /= float64(s.Scored)
		}
		out[k] = s
	}
	return out
}

func (t *Trainer) densityBonus(skillText string) float64 {
	if !t.s.UseDensity {
		return 0
	}
	return gate.DensityBonus(skillText, t.s.LeadingWords, t.s.DensityWeight)
}
