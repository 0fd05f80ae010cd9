package gate

import (
	"math/rand/v2"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillfleet/skillfleet/pkg/skill"
)

func TestParseMetric(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in      string
		want    Metric
		wantErr bool
	}{
		{in: "hard", want: Hard}, {in: " Soft ", want: Soft}, {in: "MIXED", want: Mixed},
		{in: "", wantErr: true}, {in: "f1", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseMetric(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseMetric(%q) = %q, %v; want %q, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestScore(t *testing.T) {
	t.Parallel()
	// Expected values are CPython's (1 - w) * hard + w * soft.
	tests := []struct {
		hard, soft float64
		m          Metric
		w          float64
		want       float64
	}{
		{0.5, 0.8, Hard, 0.5, 0.5},
		{0.5, 0.8, Soft, 0.5, 0.8},
		{0.5, 0.8, Mixed, 0.5, 0.65},
		{0.3, 0.9, Mixed, 0.3, 0.48},
		{0.1, 0.7, Mixed, 0.25, 0.25},
		{0.5, 0.8, Mixed, 1.5, 0.8}, // w clamped to 1
		{0.5, 0.8, Mixed, -1, 0.5},  // w clamped to 0
		{0.5, 0.8, "other", 0.5, 0.5},
	}
	for _, tt := range tests {
		if got := Score(tt.hard, tt.soft, tt.m, tt.w); got != tt.want {
			t.Errorf("Score(%v, %v, %s, %v) = %v, want %v", tt.hard, tt.soft, tt.m, tt.w, got, tt.want)
		}
	}
}

func TestMean(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   []float64
		want float64
	}{
		{nil, 0},
		{[]float64{1, 0, 1, 1}, 0.75},
		// Left to right: (0.1 + 0.2) + 0.3 = 0.6000000000000001, / 3.
		{[]float64{0.1, 0.2, 0.3}, 0.20000000000000004},
	}
	for _, tt := range tests {
		if got := Mean(tt.in); got != tt.want {
			t.Errorf("Mean(%v) = %v, want %v", tt.in, got, tt.want)
		}
	}
}

func TestDecide(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                string
		cand, current, best float64
		useGate             bool
		want                Verdict
	}{
		{"new best", 0.6, 0.5, 0.5, true, Verdict{Action: AcceptNewBest, Current: 0.6, Best: 0.6, NewBest: true}},
		{"accept below best", 0.6, 0.5, 0.7, true, Verdict{Action: Accept, Current: 0.6, Best: 0.7}},
		{"accept equal to best", 0.7, 0.5, 0.7, true, Verdict{Action: Accept, Current: 0.7, Best: 0.7}},
		{"tie rejects", 0.5, 0.5, 0.5, true, Verdict{Action: Reject, Current: 0.5, Best: 0.5}},
		{"worse rejects", 0.4, 0.5, 0.6, true, Verdict{Action: Reject, Current: 0.5, Best: 0.6}},
		{"force accept worse", 0.4, 0.5, 0.6, false, Verdict{Action: ForceAccept, Current: 0.4, Best: 0.6}},
		{"force accept new best", 0.7, 0.5, 0.6, false, Verdict{Action: ForceAccept, Current: 0.7, Best: 0.7, NewBest: true}},
		{"force accept tie with best", 0.6, 0.5, 0.6, false, Verdict{Action: ForceAccept, Current: 0.6, Best: 0.6}},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, Decide(tt.cand, tt.current, tt.best, tt.useGate)); diff != "" {
			t.Errorf("%s: Decide(%v, %v, %v, %v) mismatch (-want +got):\n%s", tt.name, tt.cand, tt.current, tt.best, tt.useGate, diff)
		}
	}
}

func TestCoverage(t *testing.T) {
	t.Parallel()
	tests := []struct {
		scored, total int
		min           float64
		wantRatio     float64
		wantOK        bool
	}{
		{19, 20, 0.95, 0.95, true},
		{20, 20, 0.95, 1, true},
		{18, 20, 0.95, 0.9, false},
		{0, 0, 0.95, 0, false},
		{0, 0, 0, 0, true},
	}
	for _, tt := range tests {
		ratio, ok := Coverage(tt.scored, tt.total, tt.min)
		if ratio != tt.wantRatio || ok != tt.wantOK {
			t.Errorf("Coverage(%d, %d, %v) = %v, %v; want %v, %v", tt.scored, tt.total, tt.min, ratio, ok, tt.wantRatio, tt.wantOK)
		}
	}
}

func TestSemanticDensity(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		text  string
		words []string
		want  float64
	}{
		{"defaults", "You MUST verify. Never guess!", nil, 0.6},
		{"custom words", "You MUST verify. Never guess!", []string{"GUESS"}, 0.2},
		{"protected regions removed", "ALWAYS x\n" + skill.SlowStart + "\nMUST MUST\n" + skill.SlowEnd + "\n", nil, 0.5},
		{"apostrophe splits", "don't", []string{"don"}, 0.5},
		{"underscore splits", "MUST_ALWAYS", nil, 1},
		{"digits are tokens", "step 1 MUST", nil, 1.0 / 3},
		{"non-ASCII letters split", "naïve MUST", nil, 1.0 / 3},
		{"no tokens", "--- !!", nil, 0},
		{"empty", "", nil, 0},
	}
	for _, tt := range tests {
		if got := SemanticDensity(tt.text, tt.words); got != tt.want {
			t.Errorf("%s: SemanticDensity(%q, %v) = %v, want %v", tt.name, tt.text, tt.words, got, tt.want)
		}
	}
	if got := DensityBonus("You MUST verify. Never guess!", nil, 0.05); got != 0.03 {
		t.Errorf("DensityBonus = %v, want 0.03", got)
	}
}

// items builds selection results: s = scored hard 1, f = scored hard 0,
// x = failed, . = pending. Soft equals hard.
func items(spec string) []Item {
	out := make([]Item, len(spec))
	for i, c := range spec {
		switch c {
		case 's':
			out[i] = Item{Status: Scored, Hard: 1, Soft: 1}
		case 'f':
			out[i] = Item{Status: Scored}
		case 'x':
			out[i] = Item{Status: Failed}
		}
	}
	return out
}

func TestMeasure(t *testing.T) {
	t.Parallel()
	got := Measure(append(items("sfx."), Item{Status: Scored, Hard: 1, Soft: 0.5}))
	want := Measurement{Hard: 2.0 / 3, Soft: 1.5 / 3, Scored: 3, Total: 5}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Measure mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Measurement{Total: 2}, Measure(items("x."))); diff != "" {
		t.Errorf("Measure(nothing scored) mismatch (-want +got):\n%s", diff)
	}
}

func TestEarlyStop(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		items     []Item
		m         Metric
		w, bonus  float64
		current   float64
		wantStop  bool
		wantUpper float64
	}{
		{name: "cannot reach", items: items("ffffff...."), m: Hard, current: 0.5, wantStop: true, wantUpper: 0.4},
		{name: "can only tie", items: items("fffff....."), m: Hard, current: 0.5, wantStop: true, wantUpper: 0.5},
		{name: "can still win", items: items("ffff......"), m: Hard, current: 0.5, wantUpper: 0.6},
		{name: "nothing done", items: items(".........."), m: Hard, current: 0.99, wantUpper: 1},
		{name: "all done, lost", items: items("sssssfffff"), m: Hard, current: 0.5, wantStop: true, wantUpper: 0.5},
		{name: "failed items leave the mean", items: items("xxxfff...."), m: Hard, current: 0.5, wantUpper: 4.0 / 7},
		{name: "bonus counts", items: items("fffff....."), m: Hard, bonus: 0.03, current: 0.5, wantUpper: 0.53},
		{
			name:  "soft partial credit",
			items: append(items("......"), Item{Status: Scored, Hard: 0, Soft: 0.5}, Item{Status: Scored, Hard: 0, Soft: 0.25}),
			m:     Soft, current: 0.9, wantStop: true, wantUpper: 6.75 / 8,
		},
		{
			name:  "mixed",
			items: append(items("........"), Item{Status: Scored, Soft: 0.5}, Item{Status: Scored, Soft: 0.5}),
			m:     Mixed, w: 0.5, current: 0.85, wantUpper: float64(0.5*0.8) + float64(0.5*0.9),
		},
	}
	for _, tt := range tests {
		stop, upper := EarlyStop(tt.items, tt.m, tt.w, tt.bonus, tt.current)
		if stop != tt.wantStop || upper != tt.wantUpper {
			t.Errorf("%s: EarlyStop = %v, %v; want %v, %v", tt.name, stop, upper, tt.wantStop, tt.wantUpper)
		}
	}
}

// TestEarlyStopNeverChangesVerdict reveals random selection results in a
// random order and checks that whenever EarlyStop says stop, the final
// gate rejects, and that the bound never falls below the final score.
func TestEarlyStopNeverChangesVerdict(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 11))
	metrics := []Metric{Hard, Soft, Mixed}
	stops := 0
	for iter := range 4000 {
		n := 1 + rng.IntN(30)
		final := make([]Item, n)
		for i := range final {
			switch r := rng.Float64(); {
			case r < 0.05:
				final[i] = Item{Status: Failed}
			default:
				h := float64(rng.IntN(2))
				s := h
				if rng.IntN(2) == 0 {
					s = float64(rng.IntN(5)) / 4 * rng.Float64()
				}
				final[i] = Item{Status: Scored, Hard: h, Soft: s}
			}
		}
		m := metrics[rng.IntN(len(metrics))]
		w := rng.Float64()
		bonus := 0.0
		if rng.IntN(2) == 0 {
			bonus = float64(rng.IntN(3)) * 0.01
		}
		// Current scores near the reachable range, on a coarse grid so
		// ties happen.
		current := float64(rng.IntN(n+1))/float64(n) + bonus*float64(rng.IntN(2))
		ms := Measure(final)
		finalScore := Score(ms.Hard, ms.Soft, m, w) + bonus
		rejects := Decide(finalScore, current, current, true).Action == Reject

		seen := make([]Item, n)
		for _, i := range rng.Perm(n) {
			seen[i] = final[i]
			stop, upper := EarlyStop(seen, m, w, bonus, current)
			if upper < finalScore {
				t.Fatalf("iteration %d: bound %v below final score %v (%s)", iter, upper, finalScore, m)
			}
			if stop && !rejects {
				t.Fatalf("iteration %d: stopped a candidate that wins (%v > %v, %s)", iter, finalScore, current, m)
			}
			if stop {
				stops++
			}
		}
	}
	if stops < 1000 {
		t.Errorf("only %d early stops in the random trials; the test is too weak", stops)
	}
}

func TestFailuresToStop(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		items   []Item
		m       Metric
		current float64
		want    int
	}{
		{name: "stops already", items: items("ffffff...."), m: Hard, current: 0.5, want: 0},
		{name: "one failure away", items: items("ffff......"), m: Hard, current: 0.5, want: 1},
		{name: "nothing done", items: items(".........."), m: Hard, current: 0.5, want: 5},
		{name: "successes keep the need", items: items("ssss......"), m: Hard, current: 0.5, want: 5},
		{name: "cannot stop", items: items("sssss....."), m: Hard, current: 0.4, want: 6},
		{name: "failed items leave the mean", items: items("xxxfff...."), m: Hard, current: 0.5, want: 1},
	}
	for _, tt := range tests {
		if got := FailuresToStop(tt.items, tt.m, 0, 0, tt.current); got != tt.want {
			t.Errorf("%s: FailuresToStop = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// TestFailuresToStopIsTheLeastNumber checks on random gate states that f
// zero results make EarlyStop fire and that no f-1 results, whatever
// their outcome, do.
func TestFailuresToStopIsTheLeastNumber(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 5))
	metrics := []Metric{Hard, Soft, Mixed}
	outcome := func() Item {
		switch rng.IntN(4) {
		case 0:
			return Item{Status: Failed}
		case 1:
			return Item{Status: Scored, Hard: 1, Soft: 1}
		default:
			return Item{Status: Scored, Hard: float64(rng.IntN(2)), Soft: float64(rng.IntN(5)) / 4}
		}
	}
	for iter := range 3000 {
		n := 1 + rng.IntN(30)
		state := make([]Item, n)
		var pending []int
		for i := range state {
			if rng.IntN(2) == 0 {
				pending = append(pending, i)
				continue
			}
			state[i] = outcome()
		}
		m, w := metrics[rng.IntN(len(metrics))], rng.Float64()
		current := float64(rng.IntN(n+1)) / float64(n)
		f := FailuresToStop(state, m, w, 0, current)
		if f > len(pending) {
			continue
		}
		order := rng.Perm(len(pending))
		zeroed := append([]Item(nil), state...)
		for _, k := range order[:f] {
			zeroed[pending[k]] = Item{Status: Scored}
		}
		if stop, _ := EarlyStop(zeroed, m, w, 0, current); !stop {
			t.Fatalf("iteration %d: %d zero results do not stop (%s, current %v)", iter, f, m, current)
		}
		if f == 0 {
			continue
		}
		fewer := append([]Item(nil), state...)
		for _, k := range order[:f-1] {
			fewer[pending[k]] = outcome()
		}
		if stop, _ := EarlyStop(fewer, m, w, 0, current); stop {
			t.Fatalf("iteration %d: %d results stop, FailuresToStop said %d (%s, current %v)", iter, f-1, f, m, current)
		}
	}
}

func TestMcNemar(t *testing.T) {
	t.Parallel()
	rep := func(v float64, n int) []float64 {
		out := make([]float64, n)
		for i := range out {
			out[i] = v
		}
		return out
	}
	cat := func(xs ...[]float64) []float64 {
		var out []float64
		for _, x := range xs {
			out = append(out, x...)
		}
		return out
	}
	tests := []struct {
		name      string
		cur, cand []float64
		alt       Alternative
		want      McNemarResult
	}{
		{
			// Lost 1, Won 6: P(X >= 6 | n=7) = (7+1)/128.
			name: "one-sided", cur: cat(rep(1, 1), rep(0, 6), rep(1, 3)), cand: cat(rep(0, 1), rep(1, 6), rep(1, 3)),
			alt: Greater, want: McNemarResult{Lost: 1, Won: 6, P: 0.0625},
		},
		{
			name: "two-sided", cur: cat(rep(1, 1), rep(0, 6)), cand: cat(rep(0, 1), rep(1, 6)),
			alt: TwoSided, want: McNemarResult{Lost: 1, Won: 6, P: 0.125},
		},
		{
			name: "candidate worse", cur: rep(1, 3), cand: rep(0, 3),
			alt: Greater, want: McNemarResult{Lost: 3, Won: 0, P: 1},
		},
		{
			name: "candidate worse, two-sided", cur: rep(1, 3), cand: rep(0, 3),
			alt: TwoSided, want: McNemarResult{Lost: 3, Won: 0, P: 0.25},
		},
		{
			name: "no discordant items", cur: []float64{1, 0, 1}, cand: []float64{1, 0, 1},
			alt: Greater, want: McNemarResult{P: 1},
		},
		{
			name: "partial hard scores", cur: []float64{0.5, 1e-10}, cand: []float64{1e-10, 0.999},
			alt: TwoSided, want: McNemarResult{Lost: 1, Won: 1, P: 1},
		},
		{
			// Python: sum(comb(30, k) for k in range(20, 31)) / 2**30.
			name: "n=30", cur: cat(rep(1, 10), rep(0, 20)), cand: cat(rep(0, 10), rep(1, 20)),
			alt: Greater, want: McNemarResult{Lost: 10, Won: 20, P: 0.04936857335269451},
		},
		{
			name: "n=30 two-sided", cur: cat(rep(1, 10), rep(0, 20)), cand: cat(rep(0, 10), rep(1, 20)),
			alt: TwoSided, want: McNemarResult{Lost: 10, Won: 20, P: 0.09873714670538902},
		},
		{
			name: "n=2000", cur: cat(rep(1, 1000), rep(0, 1000)), cand: cat(rep(0, 1000), rep(1, 1000)),
			alt: Greater, want: McNemarResult{Lost: 1000, Won: 1000, P: 0.5089195055729272},
		},
		{
			name: "underflow to 0", cur: rep(0, 1400), cand: rep(1, 1400),
			alt: Greater, want: McNemarResult{Won: 1400, P: 0},
		},
	}
	for _, tt := range tests {
		got, err := McNemar(tt.cur, tt.cand, tt.alt)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s: McNemar mismatch (-want +got):\n%s", tt.name, diff)
		}
	}
	if _, err := McNemar([]float64{1}, nil, Greater); err == nil {
		t.Errorf("McNemar(unpaired) error = nil, want an error")
	}
}

func TestBootstrap(t *testing.T) {
	t.Parallel()
	zeros, ones := make([]float64, 40), make([]float64, 40)
	for i := range ones {
		ones[i] = 1
	}
	// A clear but noisy improvement and pure noise.
	rng := rand.New(rand.NewPCG(3, 4))
	cur, better, noise := make([]float64, 60), make([]float64, 60), make([]float64, 60)
	for i := range cur {
		cur[i] = rng.Float64()
		better[i] = min(1, cur[i]+0.2+0.1*(rng.Float64()-0.5))
		noise[i] = min(1, max(0, cur[i]+0.2*(rng.Float64()-0.5)))
	}

	tests := []struct {
		name      string
		cur, cand []float64
		alt       Alternative
		check     func(BootstrapResult) bool
		want      string
	}{
		{"identical, one-sided", ones, ones, Greater, func(r BootstrapResult) bool { return r.P == 1 && r.MeanDiff == 0 }, "P = 1"},
		{"identical, two-sided", ones, ones, TwoSided, func(r BootstrapResult) bool { return r.P == 1 }, "P = 1"},
		{"worse", ones, zeros, Greater, func(r BootstrapResult) bool { return r.P == 1 && r.MeanDiff == -1 }, "P = 1"},
		{"all better", zeros, ones, Greater, func(r BootstrapResult) bool { return r.P == 1.0/1001 }, "P = 1/1001"},
		{"clear improvement", cur, better, Greater, func(r BootstrapResult) bool { return r.P < 0.01 }, "P < 0.01"},
		{"noise", cur, noise, TwoSided, func(r BootstrapResult) bool { return r.P > 0.05 }, "P > 0.05"},
	}
	for _, tt := range tests {
		got, err := Bootstrap(tt.cur, tt.cand, 1000, 42, tt.alt)
		if err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if !tt.check(got) {
			t.Errorf("%s: Bootstrap = %+v, want %s", tt.name, got, tt.want)
		}
	}

	a, _ := Bootstrap(cur, noise, 500, 7, TwoSided)
	b, _ := Bootstrap(cur, noise, 500, 7, TwoSided)
	if a != b {
		t.Errorf("Bootstrap is not reproducible: %+v then %+v", a, b)
	}
	if _, err := Bootstrap([]float64{1}, nil, 10, 1, Greater); err == nil {
		t.Errorf("Bootstrap(unpaired) error = nil, want an error")
	}
	if _, err := Bootstrap([]float64{1}, []float64{1}, 0, 1, Greater); err == nil {
		t.Errorf("Bootstrap(0 resamples) error = nil, want an error")
	}
	if got, err := Bootstrap(nil, nil, 10, 1, Greater); err != nil || got.P != 1 {
		t.Errorf("Bootstrap(no items) = %+v, %v; want P = 1", got, err)
	}
}

func TestDecidePaired(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                string
		cand, current, best float64
		p, alpha            float64
		want                Action
	}{
		{"significant win", 0.6, 0.5, 0.5, 0.01, 0.05, AcceptNewBest},
		{"not significant", 0.6, 0.5, 0.5, 0.2, 0.05, Reject},
		{"p equal to alpha", 0.6, 0.5, 0.5, 0.05, 0.05, Reject},
		{"significant but not better", 0.5, 0.5, 0.5, 0.01, 0.05, Reject},
	}
	for _, tt := range tests {
		if got := DecidePaired(tt.cand, tt.current, tt.best, tt.p, tt.alpha); got.Action != tt.want {
			t.Errorf("%s: DecidePaired = %s, want %s", tt.name, got.Action, tt.want)
		}
	}
}

func BenchmarkEarlyStop(b *testing.B) {
	its := items("ssfsfsfsfsffsfsfsfsfsfffsfsfsf..........")
	for b.Loop() {
		EarlyStop(its, Mixed, 0.5, 0.01, 0.6)
	}
}

func BenchmarkBootstrap(b *testing.B) {
	cur, cand := make([]float64, 200), make([]float64, 200)
	for i := range cur {
		cur[i] = float64(i%7) / 7
		cand[i] = float64(i%5) / 5
	}
	for b.Loop() {
		if _, err := Bootstrap(cur, cand, 10000, 1, TwoSided); err != nil {
			b.Fatal(err)
		}
	}
}
