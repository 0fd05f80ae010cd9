package trainer

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// flushAppendix writes the step's execution notes into the current skill
// (skill-aware reflection). The change is unscored.
func (t *Trainer) flushAppendix(ctx context.Context, g int, notes []string, rec *StepRecord) {
	if !t.s.SkillAware || len(notes) == 0 {
		return
	}
	all := dedupNotes(append(appendixNotes(t.st.Current), notes...))
	if th := t.s.ConsolidateThreshold; th > 0 && len(all) > th {
		var rep prompts.ConsolidateReply
		ok, err := t.optimizeOne(ctx, optCall{Stage: "appendix_consolidate", Step: g, Name: prompts.Consolidate, Skill: t.st.Current,
			Payload: prompts.ConsolidateInput{Kind: prompts.Consolidate, Notes: all}}, &rep)
		if err == nil && ok && len(rep.Notes) > 0 && len(rep.Notes) < len(all) {
			all = rep.Notes
		}
	}
	next := writeAppendix(t.st.Current, all)
	if next != t.st.Current {
		t.setCurrent(next, t.st.CurrentScore, false, t.st.CurrentOrigin)
	}
	rec.AppendixNotes = len(all)
}

// finishStep records the step: buffer entry, snapshots, state, event.
func (t *Trainer) finishStep(rec *StepRecord, action string, m *measure, start time.Time, cpuStart time.Duration, tokBefore map[string]Totals, outs []*batchOut, ranked []prompts.Item) error {
	rec.Action = action
	if action != ActSkipNoPatches && action != ActSkipNoRewrite {
		t.buffer = append(t.buffer, t.bufferEntry(rec, action, m, outs, ranked))
	}
	rec.CurrentScore, rec.BestScore, rec.BestStep = t.st.CurrentScore, t.st.BestScore, t.st.BestStep
	rec.CurrentOrigin, rec.BestOrigin, rec.SkillLen = t.st.CurrentOrigin, t.st.BestOrigin, len(t.st.Current)
	rec.Tokens = t.acct.Since(tokBefore)
	rec.WallTime = t.now().Sub(start).Seconds()
	rec.CoordinatorCPU = (processCPU() - cpuStart).Seconds()
	t.st.Step = rec.Step
	t.st.Phase = fmt.Sprintf("step_%04d", rec.Step)
	t.rd.WriteJSON(StepFile(rec.Step, "record.json"), rec)
	t.rd.WriteFile(SkillFile(rec.Step), t.st.Current)
	t.writeBest()
	ev := Event{Type: "step", Step: rec.Step, Epoch: rec.Epoch, Action: action,
		CandidateHash: rec.CandidateHash, CurrentHash: t.st.CurrentHash, BestHash: t.st.BestHash,
		CurrentScore: round6(t.st.CurrentScore), BestScore: round6(t.st.BestScore),
		Counts: map[string]int{"rollout": rec.RolloutN, "failure_patches": rec.NFailurePatches, "success_patches": rec.NSuccessPatches, "merged": rec.NMerged, "ranked": rec.NRanked}}
	if rec.EditBudget != nil {
		ev.Counts["budget"] = *rec.EditBudget
	}
	if rec.CandidateScore != nil {
		v := round6(*rec.CandidateScore)
		ev.CandidateScore = &v
	}
	ev.EarlyStopped, ev.Unchanged, ev.CacheHit = rec.EarlyStopped, rec.Unchanged, rec.CacheHit
	if err := t.rd.Emit(ev); err != nil {
		return err
	}
	t.prog.Decision(fmt.Sprintf("step %d: %s", rec.Step, action), t.st.CurrentScore, t.st.BestScore)
	return t.saveState()
}

// bufferEntry builds the step-buffer entry of an evaluated step.
func (t *Trainer) bufferEntry(rec *StepRecord, action string, m *measure, outs []*batchOut, ranked []prompts.Item) prompts.BufferEntry {
	e := prompts.BufferEntry{Step: rec.Step, Action: action}
	groups := map[string]*prompts.FailurePattern{}
	var order []string
	add := func(pat string, count int, ids []string) {
		p, ok := groups[pat]
		if !ok {
			p = &prompts.FailurePattern{Pattern: pat}
			groups[pat] = p
			order = append(order, pat)
		}
		p.Count += count
		p.TaskIDs = append(p.TaskIDs, ids...)
	}
	for _, o := range outs {
		e.NTotal += len(o.Results)
		e.NFail += o.NFail
		if len(o.Summaries) > 0 {
			// B10: patterns are the analysts' own failure types.
			for _, s := range o.Summaries {
				for _, ft := range s.Types {
					label := strings.TrimSpace(ft.FailureType)
					if label == "" {
						continue
					}
					if d := strings.TrimSpace(ft.Description); d != "" {
						label += ": " + firstLine(d)
					}
					add(label, max(ft.Count, 0), s.IDs)
				}
			}
			continue
		}
		for _, r := range o.Failed {
			reason := r.Res.GetRollout().GetFailReason()
			if i := strings.IndexByte(reason, ':'); i >= 0 {
				reason = reason[:i]
			}
			if reason == "" {
				reason = "failed"
			}
			add(reason, 1, []string{r.Item.ID})
		}
	}
	for _, k := range order {
		p := groups[k]
		p.TaskIDs = dedupStrings(p.TaskIDs)
		e.FailurePatterns = append(e.FailurePatterns, *p)
	}
	if strings.Contains(action, "reject") {
		before := round6(t.st.CurrentScore)
		e.ScoreBefore = &before
		// What the optimizer sees must not depend on whether (or when) an
		// evaluation stopped early, so it is the same with early stop on or
		// off: a candidate that did not score higher than current — the
		// only kind early stop can stop — is shown as "not higher", never
		// with its score (a stopped evaluation has only a partial one, and
		// the full one exists only with early stop off). A candidate that
		// scored higher and was still rejected (the paired gate found the
		// gain not significant) was never stoppable, so its full score is
		// known in both modes and shown. See docs/skillopt.md.
		if m != nil && !rec.Unchanged {
			if !rec.EarlyStopped && m.Score > t.st.CurrentScore {
				after := round6(m.Score)
				e.ScoreAfter = &after
			} else {
				e.EarlyStopped = true
			}
		}
		for _, it := range ranked {
			e.RejectedEdits = append(e.RejectedEdits, prompts.RejectedEdit{
				File: it.File, Op: it.Op, Target: it.Target, Content: it.Content, Type: it.Type, Title: it.Title,
				Instruction: it.Instruction, ChangeSummary: it.ChangeSummary, SourceType: sourceIfRewrite(it, t.s.UpdateMode),
			})
		}
	}
	return e
}

func sourceIfRewrite(it prompts.Item, mode string) string {
	if mode == prompts.ModeFullRewrite {
		return it.SourceType
	}
	return ""
}

// stepBuffer is what the optimizer sees of the epoch's previous steps.
func (t *Trainer) stepBuffer() []prompts.BufferEntry {
	if !t.s.UseStepBuffer {
		return nil
	}
	return t.buffer
}

func (t *Trainer) metaSkillBlock() string {
	if t.metaSkill == "" {
		return ""
	}
	return t.metaSkill
}
