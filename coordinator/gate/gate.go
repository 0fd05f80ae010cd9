// Package gate holds the selection gate's decisions as pure functions: the
// gate score of a measurement (spec §1.4 ⑥, with the optional semantic
// density bonus), the accept/reject verdict, the early-stop bound that lets
// the coordinator stop dispatching a candidate that can no longer win, the
// coverage check that refuses a gate measured on too few items (fix B7),
// and the opt-in paired tests (exact McNemar, paired bootstrap) that answer
// the winner's curse of bug B5.
package gate

import (
	"fmt"
	"strings"
)

// Metric names what the gate compares (evaluation.gate_metric).
type Metric string

// Gate metrics.
const (
	// Hard is the mean hard score.
	Hard Metric = "hard"
	// Soft is the mean soft score.
	Soft Metric = "soft"
	// Mixed is (1-w)*hard + w*soft, w = evaluation.gate_mixed_weight.
	Mixed Metric = "mixed"
)

// ParseMetric returns the metric named by s (trimmed, lower-cased). An
// unknown name is an error.
func ParseMetric(s string) (Metric, error) {
	switch m := Metric(strings.ToLower(strings.TrimSpace(s))); m {
	case Hard, Soft, Mixed:
		return m, nil
	}
	return "", fmt.Errorf("unknown gate_metric %q (want hard, soft or mixed)", s)
}

// Score returns the gate score of mean hard and soft scores: hard, soft,
// or (1-w)*hard + w*soft for mixed, with w clamped to [0, 1]. Any other
// metric scores as hard; validate names with [ParseMetric].
func Score(hard, soft float64, m Metric, mixedWeight float64) float64 {
	switch m {
	case Soft:
		return soft
	case Mixed:
		w := min(max(mixedWeight, 0), 1)
		// The conversions round each product, as Python does, and keep
		// the compiler from fusing them into one multiply-add.
		return float64((1-w)*hard) + float64(w*soft)
	default:
		return hard
	}
}

// Mean returns the mean of xs summed left to right (CPython 3.11's sum()
// then one division), or 0 for no values. Pass values in item order: the
// order of a float sum decides its last bit, and ties reject.
func Mean(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(len(xs))
}

// Action is a gate verdict's action, as recorded in the step record.
type Action string

// Actions.
const (
	AcceptNewBest Action = "accept_new_best"
	Accept        Action = "accept"
	Reject        Action = "reject"
	ForceAccept   Action = "force_accept"
)

// Verdict is the outcome of one gate decision.
type Verdict struct {
	Action Action
	// Current and Best are the scores after the decision.
	Current, Best float64
	// NewBest is set when the candidate became the best skill.
	NewBest bool
}

// Decide compares a candidate's gate score with the current and best
// scores. With the gate on, the candidate must strictly beat current (ties
// reject): it is then accept_new_best if it also strictly beats best, else
// accept. With the gate off (useGate false) the candidate is force-accepted
// as current whatever its score, and becomes best if it strictly beats it.
func Decide(cand, current, best float64, useGate bool) Verdict {
	v := Verdict{Current: current, Best: best}
	switch {
	case !useGate:
		v.Action, v.Current = ForceAccept, cand
	case cand > current:
		v.Action, v.Current = Accept, cand
	default:
		v.Action = Reject
		return v
	}
	if cand > best {
		v.Best, v.NewBest = cand, true
		if v.Action == Accept {
			v.Action = AcceptNewBest
		}
	}
	return v
}

// Coverage returns the fraction of a gate's items that were scored (not
// lost to an infrastructure failure) and whether it reaches minCoverage.
// A gate over no items has coverage 0 and passes only if minCoverage <= 0.
func Coverage(scored, total int, minCoverage float64) (ratio float64, ok bool) {
	if total > 0 {
		ratio = float64(scored) / float64(total)
	}
	return ratio, ratio >= minCoverage
}
