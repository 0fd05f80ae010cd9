package trainer

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/skillfleet/skillfleet/coordinator/plan"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// batchReflect is one accumulation batch whose analyst calls are in
// flight: each call's outcome is taken as it lands (analystOutcome), and
// collect assembles them in call order.
type batchReflect struct {
	o     *batchOut
	wave  *optWave // nil when the batch has nothing to reflect on
	sides []string
	ids   [][]string
	res   []analystOut
}

// analystOut is what one analyst call contributed.
type analystOut struct {
	patch   []prompts.Item
	summary *failureSummary
	notes   []string
}

// startReflect rolls out one accumulation batch with the current skill and
// submits the analyst calls on its failures and successes. The minibatches
// are SkillOpt's (plan.Minibatches over the batch's partition), so they
// need every rollout of the batch.
func (t *Trainer) startReflect(ctx context.Context, g int, current string, b plannedBatch) (*batchReflect, error) {
	rs, _, err := t.rollout(ctx, t.batchRollout(g, current, b))
	if err != nil {
		return nil, err
	}
	o := &batchOut{Batch: b, Results: rs}
	// Infrastructure failures have no score and take no part; the scored
	// results are partitioned by plan.Partition, in item order.
	var scored []int
	var hard []float64
	for i, r := range rs {
		if !r.ok() {
			o.NInfra++
			continue
		}
		scored = append(scored, i)
		hard = append(hard, r.hard())
		o.Hard += r.hard()
		o.Soft += r.soft()
	}
	if n := len(scored); n > 0 {
		o.Hard /= float64(n)
		o.Soft /= float64(n)
	}
	fp, sp := plan.Partition(hard, false)
	fails, succs := make([]int, len(fp)), make([]int, len(sp))
	for k, j := range fp {
		fails[k] = scored[j]
	}
	for k, j := range sp {
		succs[k] = scored[j]
	}
	o.NFail, o.NSucc = len(fails), len(succs)
	for _, i := range fails {
		o.Failed = append(o.Failed, rs[i])
	}
	if t.s.FailureOnly {
		succs = nil
	}
	fmb, smb := minibatches(fails, succs, b.Seed, t.s.MinibatchSize)
	var calls []optCall
	var sides []string
	var mbIDs [][]string
	budget := t.s.LR
	if t.s.UpdateMode == prompts.ModeFullRewrite {
		budget = 0
	}
	mk := func(name string, mb []int, idx int) {
		in := prompts.AnalystInput{
			Kind: name, Mode: t.s.UpdateMode, Skill: current, Budget: budget,
			StepBuffer: t.stepBuffer(), MetaSkill: t.metaSkillBlock(), BatchSize: len(mb), TrainDescription: t.s.TrainDescription && t.s.UpdateMode == prompts.ModePatch,
			SkillAware: t.s.SkillAware && (name == prompts.AnalystFailure || t.s.AppendixSource != "failure_only"),
		}
		var ids []string
		for _, i := range mb {
			tr := t.trajectoryOf(rs[i])
			if len(tr.Messages) == 0 {
				continue // nothing to reflect on
			}
			in.Trajectories = append(in.Trajectories, tr)
			ids = append(ids, rs[i].Item.ID)
		}
		if len(in.Trajectories) == 0 {
			return
		}
		calls = append(calls, optCall{Stage: "reflect", Step: g, Name: name, Index: b.Index*1000 + idx, Mode: t.s.UpdateMode, Payload: in, Skill: current})
		sides = append(sides, name)
		mbIDs = append(mbIDs, ids)
	}
	for i, mb := range fmb {
		mk(prompts.AnalystFailure, mb, i)
	}
	for i, mb := range smb {
		mk(prompts.AnalystSuccess, mb, 500+i)
	}
	br := &batchReflect{o: o, sides: sides, ids: mbIDs, res: make([]analystOut, len(calls))}
	if len(calls) == 0 {
		return br, nil
	}
	if br.wave, err = t.optimizeAsync(ctx, calls); err != nil {
		return nil, err
	}
	return br, nil
}

// analystOutcome waits for analyst call i of a batch and decodes its reply:
// the patch (capped at the learning rate, rejected edits filtered, each
// item stamped with its source and support), the failure summary, the
// appendix notes. Calls of one batch may be taken concurrently.
func (t *Trainer) analystOutcome(ctx context.Context, g int, br *batchReflect, i int) (analystOut, error) {
	r, err := br.wave.wait(ctx, i)
	if err != nil {
		return analystOut{}, err
	}
	t.recordMinibatch(g, br, i, r)
	var out analystOut
	defer func() { br.res[i] = out }()
	if !r.OK {
		return out, nil
	}
	var rep prompts.AnalystReply
	if err := json.Unmarshal(r.JSON, &rep); err != nil {
		t.acct.CountInvalid("reflect")
		t.log.WarnContext(ctx, "analyst reply has the wrong shape", "step", g, "err", err)
		return out, nil
	}
	isFail := br.sides[i] == prompts.AnalystFailure
	if isFail && len(rep.FailureSummary) > 0 {
		out.summary = &failureSummary{Types: rep.FailureSummary, IDs: br.ids[i]}
	}
	out.notes = appendixNotesOf(rep.AppendixNotes)
	if rep.Patch == nil {
		return out, nil
	}
	items := rep.Patch.Items(t.s.UpdateMode)
	if len(items) == 0 {
		return out, nil
	}
	if t.s.UpdateMode != prompts.ModeFullRewrite && len(items) > t.s.LR {
		items = items[:t.s.LR]
	}
	support, ok := intField(rep.BatchSize)
	if !ok {
		support = len(br.ids[i]) // B9: a non-numeric batch_size is not trusted
	}
	src := "success"
	if isFail {
		src = "failure"
	}
	items = t.filterRejected(items)
	if len(items) == 0 {
		return out, nil
	}
	stamped := make([]prompts.Item, len(items))
	for k, it := range items {
		if it.SourceType == "" {
			it.SourceType = src
		}
		if it.SupportCount == 0 {
			it.SupportCount = max(support, 1)
		}
		stamped[k] = it
	}
	out.patch = stamped
	return out, nil
}

// collect assembles the batch's analyst outcomes in call order.
func (br *batchReflect) collect() {
	o := br.o
	for i, r := range br.res {
		if r.summary != nil {
			o.Summaries = append(o.Summaries, *r.summary)
		}
		o.Notes = append(o.Notes, r.notes...)
		if r.patch == nil {
			continue
		}
		if br.sides[i] == prompts.AnalystFailure {
			o.FailPatch = append(o.FailPatch, r.patch)
		} else {
			o.SuccPatch = append(o.SuccPatch, r.patch)
		}
	}
}

// filterRejected drops items identical to an edit rejected earlier in this
// epoch (option optimizer.filter_rejected).
func (t *Trainer) filterRejected(items []prompts.Item) []prompts.Item {
	if !t.s.FilterRejected {
		return items
	}
	rejected := map[string]bool{}
	for _, e := range t.buffer {
		for _, r := range e.RejectedEdits {
			rejected[normKey(r.Op, r.Target, r.Content)] = true
		}
	}
	if len(rejected) == 0 {
		return items
	}
	out := items[:0:0]
	for _, it := range items {
		if rejected[normKey(it.Op, it.Target, it.Content)] {
			continue
		}
		out = append(out, it)
	}
	return out
}

func normKey(op, target, content string) string {
	f := func(s string) string { return strings.Join(strings.Fields(strings.ToLower(s)), " ") }
	return f(op) + "\x00" + f(target) + "\x00" + f(content)
}

// trajectoryOf is r as a prompt shows it. A dispatcher that keeps results
// on disk resolves a rollout without its trajectory (a wave holds scores,
// not transcripts): it is read back here, when a prompt needs it.
func (t *Trainer) trajectoryOf(r rollResult) prompts.Trajectory {
	ro := r.Res.GetRollout()
	tr := prompts.Trajectory{
		ID: r.Item.ID, Task: ro.GetTaskDescription(), TaskType: ro.GetTaskType(), FailReason: ro.GetFailReason(),
		NTurns: int(ro.GetNTurns()), Hard: ro.GetHard(), Soft: ro.GetSoft(), Answer: ro.GetAnswer(),
	}
	raw := ro.GetTrajectory()
	if len(raw) == 0 && ro != nil {
		if full, ok := t.d.Lookup(r.Res.GetTaskId()); ok {
			raw = full.GetRollout().GetTrajectory()
		}
	}
	var msgs []prompts.Message
	if len(raw) > 0 {
		_ = json.Unmarshal(raw, &msgs)
	}
	tr.Messages = msgs
	return tr
}

func appendixNotesOf(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if s = strings.TrimSpace(s); s != "" {
			return []string{s}
		}
		return nil
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) != nil {
		return nil
	}
	var out []string
	for _, e := range list {
		var v string
		if json.Unmarshal(e, &v) == nil {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, v)
			}
			continue
		}
		var m map[string]any
		if json.Unmarshal(e, &m) == nil {
			for _, k := range []string{"note", "content"} {
				if v, ok := m[k].(string); ok && strings.TrimSpace(v) != "" {
					out = append(out, strings.TrimSpace(v))
					break
				}
			}
		}
	}
	return out
}
