package gate

import (
	"fmt"
	"math/big"

	"github.com/skillfleet/skillfleet/internal/pyrand"
)

// Alternative is the alternative hypothesis of a paired test.
type Alternative uint8

// Alternatives.
const (
	// Greater: the candidate is better than current (one-sided). This is
	// the gate's question.
	Greater Alternative = iota
	// TwoSided: the two differ.
	TwoSided
)

// successThreshold is the hard score at or above which an item counts as
// solved, SkillOpt's failure rule (hard < 1e-9 fails) reversed.
const successThreshold = 1e-9

// McNemarResult is the outcome of an exact McNemar test.
type McNemarResult struct {
	// Lost counts items current solved and the candidate did not; Won the
	// reverse. Items both solved or both failed carry no information.
	Lost, Won int
	// P is the exact p-value.
	P float64
}

// McNemar runs the exact McNemar test on paired hard outcomes (one entry
// per selection item, in the same order; an item is solved when hard >=
// 1e-9). Under the null the Won of the Lost+Won discordant items is
// Binomial(Lost+Won, 1/2); Greater gives P(X >= Won), TwoSided
// min(1, 2*min(P(X <= Won), P(X >= Won))). No discordant item gives P = 1.
// The tail sums are exact (big integers), then rounded once to float64.
func McNemar(current, candidate []float64, alt Alternative) (McNemarResult, error) {
	if len(current) != len(candidate) {
		return McNemarResult{}, fmt.Errorf("paired test: %d current outcomes, %d candidate outcomes", len(current), len(candidate))
	}
	var r McNemarResult
	for i := range current {
		cur, cand := current[i] >= successThreshold, candidate[i] >= successThreshold
		switch {
		case cur && !cand:
			r.Lost++
		case cand && !cur:
			r.Won++
		}
	}
	n := r.Lost + r.Won
	if n == 0 {
		r.P = 1
		return r, nil
	}
	// Sum C(n, k) over both tails; the coefficients are built one from
	// the last, C(n, k) = C(n, k-1) * (n-k+1) / k.
	c, lower, upper := big.NewInt(1), new(big.Int), new(big.Int)
	for k := 0; k <= n; k++ {
		if k > 0 {
			c.Mul(c, big.NewInt(int64(n-k+1)))
			c.Quo(c, big.NewInt(int64(k)))
		}
		if k <= r.Won {
			lower.Add(lower, c)
		}
		if k >= r.Won {
			upper.Add(upper, c)
		}
	}
	num := upper
	if alt == TwoSided {
		if lower.Cmp(upper) < 0 {
			num = lower
		}
		num = new(big.Int).Lsh(num, 1)
	}
	p, _ := new(big.Rat).SetFrac(num, new(big.Int).Lsh(big.NewInt(1), uint(n))).Float64()
	r.P = min(p, 1)
	return r, nil
}

// BootstrapResult is the outcome of a paired bootstrap test.
type BootstrapResult struct {
	// MeanDiff is the observed mean of candidate - current.
	MeanDiff float64
	// P is the bootstrap p-value.
	P float64
}

// Bootstrap runs a paired bootstrap test on per-item scores (soft scores,
// or per-item means over gate repeats): d_i = candidate_i - current_i,
// D = mean(d), and resamples draws of n items with replacement, using a
// pyrand generator seeded with seed (so a run is reproducible). With the
// null imposed by shifting each resampled mean by -D,
// Greater gives P = (1 + #{mean* - D >= D}) / (resamples + 1) for D > 0
// (P = 1 when D <= 0: no evidence the candidate is better), and TwoSided
// P = (1 + #{|mean* - D| >= |D|}) / (resamples + 1).
func Bootstrap(current, candidate []float64, resamples int, seed int64, alt Alternative) (BootstrapResult, error) {
	n := len(current)
	switch {
	case n != len(candidate):
		return BootstrapResult{}, fmt.Errorf("paired test: %d current scores, %d candidate scores", n, len(candidate))
	case n == 0:
		return BootstrapResult{P: 1}, nil
	case resamples <= 0:
		return BootstrapResult{}, fmt.Errorf("paired test: resamples %d is not positive", resamples)
	}
	d := make([]float64, n)
	for i := range d {
		d[i] = candidate[i] - current[i]
	}
	obs := Mean(d)
	res := BootstrapResult{MeanDiff: obs, P: 1}
	if alt == Greater && !(obs > 0) {
		return res, nil
	}
	absObs := max(obs, -obs)
	r := pyrand.New(seed)
	extreme := 0
	for range resamples {
		var s float64
		for range n {
			s += d[r.Randbelow(uint64(n))]
		}
		shifted := s/float64(n) - obs
		switch alt {
		case Greater:
			if shifted >= obs {
				extreme++
			}
		default:
			if max(shifted, -shifted) >= absObs {
				extreme++
			}
		}
	}
	res.P = float64(1+extreme) / float64(resamples+1)
	return res, nil
}

// DecidePaired is [Decide] with the gate on and a paired test: the
// candidate must strictly beat current and its p-value be below alpha;
// otherwise it is rejected.
func DecidePaired(cand, current, best, p, alpha float64) Verdict {
	if !(p < alpha) {
		return Verdict{Action: Reject, Current: current, Best: best}
	}
	return Decide(cand, current, best, true)
}
