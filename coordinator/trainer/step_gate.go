package trainer

import (
	"context"

	"github.com/skillfleet/skillfleet/coordinator/gate"
)

// gate evaluates a candidate on the selection split and returns the verdict.
func (t *Trainer) gate(ctx context.Context, stage string, g int, candidate string, rec *StepRecord) (string, measure, error) {
	ch := skillHash(candidate)
	if ch == t.st.CurrentHash {
		// B8: an unchanged candidate is not re-evaluated; it cannot strictly improve.
		rec.Unchanged = true
		rec.Action = ActReject
		return ActReject, measure{}, nil
	}
	m, hit := t.selCache[ch]
	stopped := false
	if hit {
		rec.CacheHit = true
	} else {
		beat := -1.0
		if t.s.UseGate {
			beat = t.st.CurrentScore
		}
		var err error
		m, stopped, err = t.measureSel(ctx, stage, g, candidate, beat)
		if err != nil {
			return "", measure{}, err
		}
		if !stopped {
			t.selCache[ch] = m
		}
	}
	if stopped {
		rec.EarlyStopped = true
		ub := m.Upper
		rec.UpperBound = &ub
		rec.SelectionScored = m.Scored
		return ActReject, m, nil
	}
	h, s, sc := m.Hard, m.Soft, m.Score
	rec.SelectionHard, rec.SelectionSoft, rec.CandidateScore, rec.SelectionScored = &h, &s, &sc, m.Scored
	if t.s.UseGate && t.s.GateTest == GateTestPaired {
		if !(m.Score > t.st.CurrentScore) {
			return ActReject, m, nil // no improvement: nothing to test
		}
		cur, ok := t.selCache[t.st.CurrentHash]
		if !ok || cur.Items == nil {
			// Not measured by this process (a resumed run): the content-
			// addressed rollouts make this a replay, not new calls.
			var err error
			if cur, _, err = t.measureSel(ctx, stage+"_current", g, t.st.Current, -1); err != nil {
				return "", measure{}, err
			}
			t.selCache[t.st.CurrentHash] = cur
		}
		p, err := t.pairedP(cur, m, g)
		if err != nil {
			return "", measure{}, err
		}
		rec.GateP = &p
		return string(gate.DecidePaired(m.Score, t.st.CurrentScore, t.st.BestScore, p, t.s.GateAlpha).Action), m, nil
	}
	return string(gate.Decide(m.Score, t.st.CurrentScore, t.st.BestScore, t.s.UseGate).Action), m, nil
}

// applyVerdict moves current/best per the gate's action.
func (t *Trainer) applyVerdict(action, candidate string, m measure, origin string, g int) {
	switch action {
	case ActAcceptNewBest:
		t.setCurrent(candidate, m.Score, true, origin)
		t.st.Best, t.st.BestHash, t.st.BestScore, t.st.BestStep, t.st.BestOrigin = candidate, skillHash(candidate), m.Score, g, origin
	case ActAccept:
		t.setCurrent(candidate, m.Score, true, origin)
	case ActForceAccept:
		t.setCurrent(candidate, m.Score, true, origin)
		if m.Score > t.st.BestScore {
			t.st.Best, t.st.BestHash, t.st.BestScore, t.st.BestStep, t.st.BestOrigin = candidate, skillHash(candidate), m.Score, g, origin
		}
	}
}

func (t *Trainer) setCurrent(text string, score float64, scored bool, origin string) {
	t.st.Current, t.st.CurrentHash = text, skillHash(text)
	t.st.CurrentScore, t.st.CurrentScored, t.st.CurrentOrigin = score, scored, origin
}
