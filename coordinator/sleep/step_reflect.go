package sleep

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/skillfleet/skillfleet/coordinator/gate"
	"github.com/skillfleet/skillfleet/pkg/nightly"
)

// evolve runs one document's turn: the train replays under the documents
// so far, one reflection on their failures, and a gate trial of each
// proposed edit in order (an accepted edit is kept for the next trial). It
// reports whether any train replay failed.
func (n *night) evolve(ctx context.Context, in Input, doc string, sp splits, docs *docState, cur *current) (bool, error) {
	fails, err := n.failures(ctx, doc, sp.train, *docs)
	if err != nil || len(fails) == 0 {
		return false, err
	}
	edits, err := n.reflect(ctx, in, doc, docs.text(doc), fails)
	if err != nil {
		return true, err
	}
	pkg := in.Package && doc == "skill"
	for _, ed := range edits {
		trial, applied, err := n.apply(ctx, doc, docs.text(doc), ed, pkg, in)
		if err != nil {
			return true, err
		}
		if !applied {
			continue
		}
		if err := n.trial(ctx, doc, ed, docs.with(doc, trial), sp.val, docs, cur); err != nil {
			return true, err
		}
	}
	return true, nil
}

// failures replays the train tasks (DreamRollouts attempts of each, as
// samples 0..K-1) and returns the failed ones: a task fails when its worst
// scored attempt is below hard 1. With more than one attempt, a failure
// also carries the task's best attempt, so the reflector can contrast the
// two. An infrastructure failure is not a failure to learn from.
func (n *night) failures(ctx context.Context, doc string, train []nightly.Task, docs docState) ([]nightly.Failure, error) {
	k := max(n.s.DreamRollouts, 1)
	attempts := map[string][]Replay{}
	for sample := range k {
		// The attempts do not depend on each other: a handoff night asks
		// them all in one round.
		rs, err := n.replayUnchecked(ctx, "train_"+doc, docs.composed(), train, sample)
		if err != nil {
			return nil, err
		}
		for _, r := range rs {
			if r.Err == "" {
				attempts[r.TaskID] = append(attempts[r.TaskID], r)
			}
		}
	}
	if err := n.pending(); err != nil {
		return nil, err
	}
	var fails []nightly.Failure
	for _, t := range train {
		rs := attempts[t.ID]
		if len(rs) == 0 {
			continue
		}
		best, worst, passed := rs[0], rs[0], 0
		for _, r := range rs {
			if r.Hard >= 1 {
				passed++
			}
			if g := n.gateScore(r); g > n.gateScore(best) {
				best = r
			}
			if g := n.gateScore(r); g < n.gateScore(worst) || (g == n.gateScore(worst) && r.Hard < worst.Hard) {
				worst = r
			}
		}
		if worst.Hard >= 1 {
			continue
		}
		f := nightly.Failure{TaskID: t.ID, Intent: t.Intent, Wanted: wanted(t.Judge), Got: worst.Answer, Why: worst.FailReason}
		if k > 1 {
			f.Attempts, f.Passed = len(rs), passed
			f.Score = n.gateScore(worst)
			if n.gateScore(best) > f.Score {
				f.Best = &nightly.Attempt{Reply: best.Answer, Score: n.gateScore(best), Why: best.FailReason}
			}
		}
		fails = append(fails, f)
	}
	if len(fails) == 0 {
		n.d.Logger.InfoContext(ctx, "no failures to learn from", "stage", doc)
	}
	return fails, nil
}

// gateScore is one replay's score under the night's gate metric.
func (n *night) gateScore(r Replay) float64 { return gate.Score(r.Hard, r.Soft, n.metric, n.weight) }

// reflect asks the optimizer for at most EditBudget edits of doc.
func (n *night) reflect(ctx context.Context, in Input, doc, text string, fails []nightly.Failure) ([]nightly.Edit, error) {
	if err := n.afford("reflect_"+doc, "optimizer", reflectEstimate(text, fails)); err != nil {
		return nil, err
	}
	ri := nightly.ReflectInput{Document: doc, Current: nightly.LearnedLines(text), Failures: fails, Budget: n.s.EditBudget, Preferences: n.s.Preferences,
		Lessons: slices.Clone(n.s.Lessons)}
	if in.Package && doc == "skill" {
		ri.Current, ri.Package = nightly.LearnedLines(nightly.SkillEntry(text)), nightly.ViewPackage(text)
	}
	edits, u, calls, err := nightly.Reflect(ctx, n.d.Optimizer, n.d.OptimizerName, ri)
	n.charge("optimizer", u, calls)
	if err != nil {
		return nil, fmt.Errorf("reflect on the %s: %w", doc, err)
	}
	return edits, nil
}

// apply applies one edit to text, recording what matched nothing or was
// refused; applied is false when the edit changed nothing.
func (n *night) apply(ctx context.Context, doc, text string, ed nightly.Edit, pkg bool, in Input) (string, bool, error) {
	trial, applied, unmatched, refused, err := nightly.ApplyDocEdits(doc, text, []nightly.Edit{ed}, pkg, in.PackageLimits)
	if err != nil {
		return "", false, fmt.Errorf("%s: %w", doc, err)
	}
	out := n.out
	out.Unmatched = append(out.Unmatched, unmatched...)
	for _, r := range refused {
		out.Refused = append(out.Refused, r)
		if out.RefusedByReason == nil {
			out.RefusedByReason = map[string]int{}
		}
		out.RefusedByReason[r.Reason]++
		n.d.Logger.InfoContext(ctx, "edit refused", "stage", doc, "op", r.Edit.Op, "file", r.Edit.File, "reason", r.Reason)
	}
	return trial, len(applied) > 0, nil
}

// wanted says what a task's judge wants, for the reflector.
func wanted(j nightly.Judge) string {
	var parts []string
	if j.Reference != "" {
		parts = append(parts, "the answer "+j.Reference)
	}
	for _, c := range j.Checks {
		parts = append(parts, c.Op+" "+c.Arg)
	}
	if j.Kind == nightly.JudgeRubric {
		parts = append(parts, "rubric: "+j.Rubric)
	}
	return strings.Join(parts, "; ")
}
