package sleep

import (
	"context"
	"fmt"

	"github.com/skillfleet/skillfleet/pkg/nightly"
)

// trial replays the val tasks under the documents with one edit applied
// (cand) and keeps the edit when its gate score strictly beats the
// current one, every replay was scored, and (with NoRegression) no task
// scores lower; docs and cur then move to it.
func (n *night) trial(ctx context.Context, doc string, ed nightly.Edit, cand docState, val []nightly.Task, docs *docState, cur *current) error {
	rs, err := n.replay(ctx, "gate_"+doc, cand.composed(), val, 0)
	if err != nil {
		return err
	}
	score, per := n.score(rs)
	tr := Trial{Document: doc, Edit: ed, Before: cur.score.Value, After: score.Value}
	switch {
	case score.Infra > 0:
		tr.Why = fmt.Sprintf("not measured: %d val replays failed (infrastructure)", score.Infra)
	case n.s.GateOff:
		tr.Accepted, tr.Why = true, fmt.Sprintf("kept ungated (gate_mode off): val score %.4f → %.4f", cur.score.Value, score.Value)
		*docs, *cur = cand, current{score, per}
	case !(score.Value > cur.score.Value):
		tr.Why = fmt.Sprintf("val score %.4f does not beat %.4f", score.Value, cur.score.Value)
	case n.s.NoRegression && regressed(cur.per, per) != "":
		tr.Why = "no-regression rule: task " + regressed(cur.per, per) + " scores lower"
	default:
		tr.Accepted, tr.Why = true, fmt.Sprintf("val score %.4f → %.4f", cur.score.Value, score.Value)
		*docs, *cur = cand, current{score, per}
	}
	n.out.Trials = append(n.out.Trials, tr)
	n.d.Logger.InfoContext(ctx, "gate trial", "stage", doc, "op", ed.Op, "file", ed.File, "accepted", tr.Accepted, "before", tr.Before, "after", tr.After)
	return nil
}
