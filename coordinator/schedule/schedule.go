// Package schedule holds the edit budget ("learning rate") decisions:
// SkillOpt's fixed schedulers (constant, linear, cosine, autonomous = no
// cap), the parsing of an autonomous LR controller's reply, and the
// lr_control_mode aliases (spec §1.4 ④, §2).
//
// SkillOpt keeps the scheduler's step counter in memory and resets it to
// the global step on resume, so skipped steps shift the schedule (bug B2).
// Here the counter is an argument: the coordinator persists t, the number
// of times the scheduler has been advanced, and the budget is a pure
// function of it.
package schedule

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
)

// Kind names a scheduler (optimizer.lr_scheduler).
type Kind string

// Schedulers.
const (
	Constant Kind = "constant"
	Linear   Kind = "linear"
	Cosine   Kind = "cosine"
	// Autonomous as a scheduler (not to be confused with the autonomous
	// lr_control_mode) always returns [NoCap].
	Autonomous Kind = "autonomous"
)

// NoCap is the budget of the autonomous scheduler: effectively unlimited.
const NoCap = 999

// ParseKind returns the scheduler named by s, matched after trimming
// spaces and lower-casing. An unknown name is an error (fix B16).
func ParseKind(s string) (Kind, error) {
	switch k := Kind(strings.ToLower(strings.TrimSpace(s))); k {
	case Constant, Linear, Cosine, Autonomous:
		return k, nil
	}
	return "", fmt.Errorf("unknown lr_scheduler %q (want constant, linear, cosine or autonomous)", s)
}

// Budget returns the edit budget after the scheduler has been advanced t
// times (t = 1 for the first gated step):
//
//   - constant: maxLR.
//   - linear and cosine: maxLR if totalSteps <= 1; otherwise with
//     x = min(t, totalSteps)/totalSteps, linear lr = maxLR + (minLR-maxLR)*x
//     and cosine lr = minLR + 0.5*(maxLR-minLR)*(1+cos(pi*x)), and the
//     budget is max(minLR, lr rounded half to even).
//   - autonomous: [NoCap].
//
// The float operations are Python's, in Python's order, so the rounding
// matches SkillOpt's (4.5 rounds to 4). t = 0 yields the unadvanced
// budget (maxLR). An unknown kind is an error.
func Budget(kind Kind, maxLR, minLR, totalSteps, t int) (int, error) {
	switch kind {
	case Constant:
		return maxLR, nil
	case Autonomous:
		return NoCap, nil
	case Linear, Cosine:
	default:
		return 0, fmt.Errorf("unknown lr_scheduler %q", kind)
	}
	if totalSteps <= 1 {
		return maxLR, nil
	}
	x := float64(min(t, totalSteps)) / float64(totalSteps)
	hi, lo := float64(maxLR), float64(minLR)
	var lr float64
	// The float64 conversions round each product as Python does and keep
	// the compiler from fusing a multiply-add (a last-bit difference can
	// move a value across .5).
	if kind == Linear {
		lr = hi + float64((lo-hi)*x)
	} else {
		lr = lo + float64(0.5*(hi-lo)*(1+math.Cos(float64(math.Pi*x))))
	}
	return max(minLR, int(math.RoundToEven(lr))), nil
}

// ControlMode is optimizer.lr_control_mode, canonical (pkg/config maps
// its aliases): where each step's edit budget comes from.
type ControlMode string

// Control modes.
const (
	// ControlFixed takes the budget from the scheduler.
	ControlFixed ControlMode = "fixed"
	// ControlAutonomous asks the optimizer for the budget each step.
	ControlAutonomous ControlMode = "autonomous"
	// ControlNone applies no budget (forced in full-rewrite mode).
	ControlNone ControlMode = "none"
)

var firstInt = regexp.MustCompile(`-?\d+`)

// ParseLearningRate reads the learning_rate field of an LR controller's
// reply as SkillOpt does: a JSON integer or an integral float is taken; a
// string yields the first integer in it (a leading '-' included); a
// negative value becomes 0; the result is clamped to available (the number
// of merged items; a negative available counts as 0). Anything else (a
// bool, null, a non-integral float, a string without digits, a missing
// field, malformed JSON) yields 0 with fallback set.
func ParseLearningRate(raw json.RawMessage, available int) (n int, fallback bool) {
	v, ok := parseLR(raw)
	if !ok {
		return 0, true
	}
	hi := float64(max(available, 0))
	switch {
	case v < 0:
		return 0, false
	case v > hi:
		return int(hi), false
	}
	return int(v), false
}

// parseLR returns the integer value of raw as a float64 (exact for the
// range that matters; huge values only need to compare above available).
func parseLR(raw json.RawMessage) (float64, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return 0, false
	}
	switch raw[0] {
	case '"':
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, false
		}
		m := firstInt.FindString(s)
		if m == "" {
			return 0, false
		}
		v, err := strconv.ParseFloat(m, 64)
		return v, err == nil
	case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		var num json.Number
		if err := json.Unmarshal(raw, &num); err != nil {
			return 0, false
		}
		v, err := strconv.ParseFloat(num.String(), 64)
		if err != nil || math.IsInf(v, 0) || v != math.Trunc(v) {
			return 0, false
		}
		return v, true
	}
	// true, false, null, objects and arrays.
	return 0, false
}
