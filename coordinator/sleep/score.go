package sleep

import (
	"fmt"
	"math"

	"github.com/skillfleet/skillfleet/coordinator/gate"
)

// Score is a gate measurement of one wave of replays.
type Score struct {
	Value float64 `json:"score"`
	Hard  float64 `json:"hard"`
	Soft  float64 `json:"soft"`
	N     int     `json:"n"`
	Infra int     `json:"infra_failures"`
}

// defaultMixedWeight is the soft weight of a night that names no gate
// metric (SkillOpt-Sleep's gate_mixed_weight default).
const defaultMixedWeight = 0.5

// gateMetric returns the settings' gate metric and mixed weight: no
// metric at all is mixed at [defaultMixedWeight]; an unknown metric or a
// weight outside [0, 1] is an error.
func (s Settings) gateMetric() (gate.Metric, float64, error) {
	if s.GateMetric == "" {
		return gate.Mixed, defaultMixedWeight, nil
	}
	m, err := gate.ParseMetric(s.GateMetric)
	if err != nil {
		return "", 0, err
	}
	if !(s.MixedWeight >= 0 && s.MixedWeight <= 1) {
		return "", 0, fmt.Errorf("gate_mixed_weight: %v: want 0..1", s.MixedWeight)
	}
	return m, s.MixedWeight, nil
}

// Measure scores replays as the trainer scores a selection evaluation:
// each replay is a gate item (an infrastructure failure has no score and
// is counted in Infra), the means are [gate.Measure]'s over the scored
// items in replay order, and the value is [gate.Score] of the means. The
// per-task map holds each scored task's own gate score (the no-regression
// rule compares them).
func Measure(rs []Replay, m gate.Metric, mixedWeight float64) (Score, map[string]float64) {
	items := make([]gate.Item, len(rs))
	per := map[string]float64{}
	for i, r := range rs {
		if r.Err != "" {
			items[i] = gate.Item{Status: gate.Failed}
			continue
		}
		items[i] = gate.Item{Status: gate.Scored, Hard: r.Hard, Soft: r.Soft}
		per[r.TaskID] = gate.Score(r.Hard, r.Soft, m, mixedWeight)
	}
	ms := gate.Measure(items)
	return Score{Value: gate.Score(ms.Hard, ms.Soft, m, mixedWeight), Hard: ms.Hard, Soft: ms.Soft, N: ms.Scored, Infra: ms.Total - ms.Scored}, per
}

func (n *night) score(rs []Replay) (Score, map[string]float64) {
	return Measure(rs, n.metric, n.weight)
}

// regressed names a task whose score dropped (or went missing).
func regressed(before, after map[string]float64) string {
	for id, b := range before {
		a, ok := after[id]
		if !ok || math.IsNaN(a) || a < b-1e-9 {
			return id
		}
	}
	return ""
}
