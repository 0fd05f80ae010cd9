package sleep

import (
	"context"
	"fmt"

	"github.com/skillfleet/skillfleet/pkg/nightly"
)

// final checks the changed documents on new attempts of the val tasks
// (fresh samples, never a result measured before in the night), scores the
// test tasks if any, and decides: accepted only when every fresh replay
// was scored, the fresh score strictly beats the baseline, and val was
// held out. A rejected night rolls its trials back.
func (n *night) final(ctx context.Context, in Input, sp splits, docs docState) error {
	out := n.out
	frs, err := n.replayUnchecked(ctx, "final_fresh", docs.composed(), sp.val, FreshSample)
	if err != nil {
		return err
	}
	var trs []Replay
	if len(sp.test) > 0 {
		// The test replays do not depend on the final ones: a handoff
		// night asks both in one round.
		if trs, err = n.replayUnchecked(ctx, "test", docs.composed(), sp.test, FreshSample); err != nil {
			return err
		}
	}
	if err := n.pending(); err != nil {
		return err
	}
	for _, r := range frs {
		if !r.Fresh {
			return fmt.Errorf("final check: the replay of task %s was not a fresh sample", r.TaskID)
		}
	}
	final, _ := n.score(frs)
	out.Final = &final
	if len(sp.test) > 0 {
		ts, _ := n.score(trs)
		out.Test = &ts
	}
	base := out.Baseline
	switch {
	case n.s.GateOff:
		out.Action, out.Accepted = ActionAcceptUngated, true
		out.Reason = fmt.Sprintf("gate_mode off: edits kept without the gate; val score %.4f → %.4f on fresh replays (not verified: review before adopting)", base.Value, final.Value)
	case final.Infra > 0:
		out.Action, out.Reason = ActionReject, fmt.Sprintf("final check: %d fresh replays failed (infrastructure)", final.Infra)
	case !(final.Value > base.Value):
		out.Action, out.Reason = ActionReject, fmt.Sprintf("fresh final score %.4f does not beat the baseline %.4f", final.Value, base.Value)
	case out.Leaked:
		out.Action, out.Reason = ActionRejectUnverified, "val and train overlap (too few tasks): the gain is not verified on held-out tasks"
	default:
		out.Action, out.Accepted = ActionAccept, true
		out.Reason = fmt.Sprintf("val score %.4f → %.4f on fresh replays", base.Value, final.Value)
	}
	if !out.Accepted {
		for i := range out.Trials {
			if out.Trials[i].Accepted {
				out.Trials[i].Accepted = false
				out.Trials[i].Why += "; rolled back: " + out.Reason
			}
		}
		return nil
	}
	out.ProposedSkill, out.ProposedMemory = docs.skill, docs.memory
	out.SkillChanged, out.MemoryChanged = docs.skill != in.Skill, docs.memory != in.Memory
	if in.Package && out.SkillChanged {
		out.FilesChanged = nightly.PackageFiles(in.Skill, docs.skill)
	}
	return nil
}
