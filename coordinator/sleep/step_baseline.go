package sleep

import (
	"context"
	"fmt"

	"github.com/skillfleet/skillfleet/pkg/nightly"
)

// current is the gate's standing: the score every trial must beat, and
// its per-task scores.
type current struct {
	score Score
	per   map[string]float64
}

// baseline replays the val tasks under the live documents.
func (n *night) baseline(ctx context.Context, in Input, val []nightly.Task) (current, error) {
	if err := n.afford("baseline", "target", 0); err != nil {
		return current{}, err
	}
	rs, err := n.replay(ctx, "baseline", nightly.ComposeDocs(in.Skill, in.Memory), val, 0)
	if err != nil {
		return current{}, err
	}
	base, per := n.score(rs)
	n.out.Baseline = base
	if base.N == 0 {
		return current{}, fmt.Errorf("baseline: all %d val replays failed (infrastructure); first error: %s", len(rs), firstErr(rs))
	}
	return current{base, per}, nil
}

func firstErr(rs []Replay) string {
	for _, r := range rs {
		if r.Err != "" {
			return r.Err
		}
	}
	return ""
}
