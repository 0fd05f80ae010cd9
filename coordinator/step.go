package coordinator

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/coordinator/gate"
	"github.com/skillfleet/skillfleet/coordinator/plan"
	"github.com/skillfleet/skillfleet/coordinator/schedule"
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/prompts"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// Step actions, as SkillOpt names them.
const (
	ActAcceptNewBest = string(gate.AcceptNewBest)
	ActAccept        = string(gate.Accept)
	ActReject        = string(gate.Reject)
	ActForceAccept   = string(gate.ForceAccept)
	ActSkipNoPatches = "skip_no_patches"
	ActSkipNoRewrite = "skip_no_rewrite"
)

// plannedBatch is one accumulation batch of a step.
type plannedBatch struct {
	Index   int
	Seed    int64
	Indices []int // into the train split
}

// batchOut is what one accumulation batch's rollout and reflection produced.
type batchOut struct {
	Batch     plannedBatch
	Results   []rollResult
	NFail     int
	NSucc     int
	NInfra    int
	FailPatch [][]prompts.Item
	SuccPatch [][]prompts.Item
	// Summaries are the failure analysts' failure types, with the ids of the
	// failures each analyst saw (for the step buffer).
	Summaries []failureSummary
	Notes     []string
	Hard      float64
	Soft      float64
	Failed    []rollResult
}

type failureSummary struct {
	Types []prompts.FailureType
	IDs   []string
}

// StepRecord is written to steps/step_NNNN/record.json.
type StepRecord struct {
	Step              int                  `json:"step"`
	Epoch             int                  `json:"epoch"`
	StepInEpoch       int                  `json:"step_in_epoch"`
	Timing            map[string]float64   `json:"timing_s"`
	Tokens            map[string]Totals    `json:"tokens"`
	RolloutHard       float64              `json:"rollout_hard"`
	RolloutSoft       float64              `json:"rollout_soft"`
	RolloutN          int                  `json:"rollout_n"`
	RolloutInfraFails int                  `json:"rollout_infra_failures"`
	Batches           []BatchRecord        `json:"accumulation_batches"`
	NFailurePatches   int                  `json:"n_failure_patches"`
	NSuccessPatches   int                  `json:"n_success_patches"`
	NMerged           int                  `json:"n_edits_merged"`
	NRanked           int                  `json:"n_edits_ranked"`
	EditBudget        *int                 `json:"edit_budget"`
	LRControl         schedule.ControlMode `json:"lr_control_mode"`
	LRDecision        *LRDecision          `json:"lr_decision,omitempty"`
	CandidateHash     string               `json:"candidate_hash,omitempty"`
	CandidateLen      int                  `json:"candidate_skill_len,omitempty"`
	EditApply         map[string]int       `json:"edit_apply_summary,omitempty"`
	RewriteSummary    []string             `json:"rewrite_change_summary,omitempty"`
	SelectionHard     *float64             `json:"selection_hard"`
	SelectionSoft     *float64             `json:"selection_soft"`
	SelectionScored   int                  `json:"selection_scored"`
	GateMetric        gate.Metric          `json:"gate_metric"`
	CandidateScore    *float64             `json:"candidate_gate_score"`
	EarlyStopped      bool                 `json:"early_stopped,omitempty"`
	UpperBound        *float64             `json:"candidate_score_upper_bound,omitempty"`
	// GateP is the paired gate's p-value (evaluation.gate_test: paired).
	GateP            *float64 `json:"gate_p,omitempty"`
	CacheHit         bool     `json:"selection_cache_hit,omitempty"`
	Unchanged        bool     `json:"candidate_unchanged,omitempty"`
	Action           string   `json:"action"`
	CurrentScore     float64  `json:"current_score"`
	BestScore        float64  `json:"best_score"`
	BestStep         int      `json:"best_step"`
	CurrentOrigin    string   `json:"current_origin"`
	BestOrigin       string   `json:"best_origin"`
	SkillLen         int      `json:"skill_len"`
	WallTime         float64  `json:"wall_time_s"`
	InvalidReplies   int      `json:"invalid_replies,omitempty"`
	FilteredRejected int      `json:"filtered_rejected_edits,omitempty"`
	AppendixNotes    int      `json:"appendix_notes,omitempty"`
	// CoordinatorCPU is the CPU time this process spent during the step:
	// the coordinator's own cost when workers run in other processes.
	CoordinatorCPU float64 `json:"process_cpu_s"`

	cpuStart time.Duration // processCPU() when the step began
}

// BatchRecord describes one accumulation batch.
type BatchRecord struct {
	Index    int     `json:"batch_idx"`
	Seed     int64   `json:"batch_seed"`
	N        int     `json:"n_envs"`
	Hard     float64 `json:"hard"`
	Soft     float64 `json:"soft"`
	NFailure int     `json:"n_failure_patches"`
	NSuccess int     `json:"n_success_patches"`
}

// LRDecision is the autonomous learning-rate controller's decision.
type LRDecision struct {
	LearningRate int    `json:"learning_rate"`
	Fallback     bool   `json:"fallback"`
	Reasoning    string `json:"reasoning,omitempty"`
	Confidence   string `json:"confidence,omitempty"`
}

func (t *Trainer) runStep(ctx context.Context, epoch, inEpoch, g int, batches []plannedBatch) error {
	start := time.Now()
	rec := &StepRecord{Step: g, Epoch: epoch, StepInEpoch: inEpoch + 1, Timing: map[string]float64{}, GateMetric: t.s.GateMetric, LRControl: t.s.LRControl, cpuStart: processCPU()}
	tokBefore := t.acct.Snapshot()
	t.prog.Step(epoch, t.s.NumEpochs, g, t.st.TotalSteps, t.st.CurrentScore, t.st.BestScore)
	current := t.st.Current

	// ① rollout and ② reflect: each accumulation batch independently.
	ts := time.Now()
	outs := make([]*batchOut, len(batches))
	fns := make([]func() error, len(batches))
	for i, b := range batches {
		fns[i] = func() error {
			o, err := t.rolloutAndReflect(ctx, g, current, b)
			outs[i] = o
			return err
		}
	}
	if err := parallel(fns...); err != nil {
		return err
	}
	rec.Timing["rollout_reflect"] = time.Since(ts).Seconds()
	var failPatches, succPatches [][]prompts.Item
	var notes []string
	var nScored int
	var hard, soft float64
	for _, o := range outs {
		failPatches = append(failPatches, o.FailPatch...)
		succPatches = append(succPatches, o.SuccPatch...)
		notes = append(notes, o.Notes...)
		n := o.NFail + o.NSucc
		nScored += n
		hard += o.Hard * float64(n)
		soft += o.Soft * float64(n)
		rec.RolloutN += len(o.Results)
		rec.RolloutInfraFails += o.NInfra
		rec.Batches = append(rec.Batches, BatchRecord{Index: o.Batch.Index, Seed: o.Batch.Seed, N: len(o.Results), Hard: o.Hard, Soft: o.Soft, NFailure: len(o.FailPatch), NSuccess: len(o.SuccPatch)})
	}
	if nScored > 0 {
		rec.RolloutHard, rec.RolloutSoft = hard/float64(nScored), soft/float64(nScored)
	}
	rec.NFailurePatches, rec.NSuccessPatches = len(failPatches), len(succPatches)
	if err := t.checkStop(); err != nil {
		return err
	}

	if len(failPatches) == 0 && len(succPatches) == 0 {
		t.flushAppendix(ctx, g, notes, rec)
		return t.finishStep(ctx, rec, ActSkipNoPatches, nil, start, tokBefore, outs, nil, current)
	}

	// ③ aggregate: the two merge trees concurrently, then the final merge.
	ts = time.Now()
	var failMerged, succMerged []prompts.Item
	err := parallel(
		func() (err error) { failMerged, err = t.mergeTree(ctx, g, "failure", failPatches); return },
		func() (err error) { succMerged, err = t.mergeTree(ctx, g, "success", succPatches); return },
	)
	if err != nil {
		return err
	}
	merged, err := t.mergeFinal(ctx, g, failMerged, succMerged)
	if err != nil {
		return err
	}
	rec.NMerged = len(merged)
	rec.Timing["aggregate"] = time.Since(ts).Seconds()
	t.rd.writeJSON(stepFile(g, "merged_patch.json"), map[string]any{prompts.PayloadKey(t.s.UpdateMode): merged})
	if err := t.checkStop(); err != nil {
		return err
	}

	// ④ select: budget, then rank and clip.
	ts = time.Now()
	ranked := merged
	if t.s.UpdateMode != prompts.ModeFullRewrite {
		budget, dec, err := t.budget(ctx, g, merged, rec)
		if err != nil {
			return err
		}
		rec.EditBudget, rec.LRDecision = &budget, dec
		ranked, err = t.rankAndSelect(ctx, g, merged, budget)
		if err != nil {
			return err
		}
	}
	rec.NRanked = len(ranked)
	rec.Timing["select"] = time.Since(ts).Seconds()
	t.rd.writeJSON(stepFile(g, "ranked_edits.json"), map[string]any{prompts.PayloadKey(t.s.UpdateMode): ranked})
	if err := t.checkStop(); err != nil {
		return err
	}

	// ⑤ update.
	ts = time.Now()
	candidate, ok, err := t.update(ctx, g, current, ranked, rec)
	if err != nil {
		return err
	}
	rec.Timing["update"] = time.Since(ts).Seconds()
	if !ok {
		t.flushAppendix(ctx, g, notes, rec)
		return t.finishStep(ctx, rec, ActSkipNoRewrite, nil, start, tokBefore, outs, ranked, current)
	}
	rec.CandidateHash, rec.CandidateLen = skillHash(candidate), len(candidate)
	t.rd.writeFile(stepFile(g, "candidate_skill.md"), candidate)
	if err := t.checkStop(); err != nil {
		return err
	}

	// ⑥ gate (with the next step's rollouts started for both outcomes
	// when speculating).
	spec, err := t.speculate(ctx, g+1, candidate, current)
	if err != nil {
		return err
	}
	ts = time.Now()
	action, m, err := t.gate(ctx, "gate", g, candidate, rec)
	if err != nil {
		return err
	}
	rec.Timing["evaluate"] = time.Since(ts).Seconds()
	t.applyVerdict(action, candidate, m, fmt.Sprintf("step_%04d", g), g)
	t.flushAppendix(ctx, g, notes, rec)
	spec.settle(ctx, t.st.Current)
	return t.finishStep(ctx, rec, action, &m, start, tokBefore, outs, ranked, current)
}

// rolloutAndReflect rolls out one accumulation batch with the current skill
// and runs the analysts on its failures and successes.
func (t *Trainer) rolloutAndReflect(ctx context.Context, g int, current string, b plannedBatch) (*batchOut, error) {
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
			StepBuffer: t.stepBuffer(), MetaSkill: t.metaSkillBlock(), BatchSize: len(mb),
			SkillAware: t.s.SkillAware && (name == prompts.AnalystFailure || t.s.AppendixSource != "failure_only"),
		}
		var ids []string
		for _, i := range mb {
			tr := trajectoryOf(rs[i])
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
	if len(calls) == 0 {
		return o, nil
	}
	res, err := t.optimize(ctx, calls)
	if err != nil {
		return nil, err
	}
	for i, r := range res {
		if !r.OK {
			continue
		}
		var rep prompts.AnalystReply
		if err := json.Unmarshal(r.JSON, &rep); err != nil {
			t.acct.CountInvalid("reflect")
			t.log.WarnContext(ctx, "analyst reply has the wrong shape", "step", g, "err", err)
			continue
		}
		isFail := sides[i] == prompts.AnalystFailure
		if isFail && len(rep.FailureSummary) > 0 {
			o.Summaries = append(o.Summaries, failureSummary{Types: rep.FailureSummary, IDs: mbIDs[i]})
		}
		o.Notes = append(o.Notes, appendixNotesOf(rep.AppendixNotes)...)
		if rep.Patch == nil {
			continue
		}
		items := rep.Patch.Items(t.s.UpdateMode)
		if len(items) == 0 {
			continue
		}
		if t.s.UpdateMode != prompts.ModeFullRewrite && len(items) > t.s.LR {
			items = items[:t.s.LR]
		}
		support, ok := intField(rep.BatchSize)
		if !ok {
			support = len(mbIDs[i]) // B9: a non-numeric batch_size is not trusted
		}
		src := "success"
		if isFail {
			src = "failure"
		}
		items = t.filterRejected(items)
		if len(items) == 0 {
			continue
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
		if isFail {
			o.FailPatch = append(o.FailPatch, stamped)
		} else {
			o.SuccPatch = append(o.SuccPatch, stamped)
		}
	}
	return o, nil
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

func trajectoryOf(r rollResult) prompts.Trajectory {
	ro := r.Res.GetRollout()
	tr := prompts.Trajectory{
		ID: r.Item.ID, Task: ro.GetTaskDescription(), TaskType: ro.GetTaskType(), FailReason: ro.GetFailReason(),
		NTurns: int(ro.GetNTurns()), Hard: ro.GetHard(), Soft: ro.GetSoft(), Answer: ro.GetAnswer(),
	}
	var msgs []prompts.Message
	if len(ro.GetTrajectory()) > 0 {
		_ = json.Unmarshal(ro.GetTrajectory(), &msgs)
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

// mergeTree merges one side's patches level by level in groups of
// merge_batch_size until one patch remains.
func (t *Trainer) mergeTree(ctx context.Context, g int, side string, patches [][]prompts.Item) ([]prompts.Item, error) {
	switch len(patches) {
	case 0:
		return nil, nil
	case 1:
		return patches[0], nil
	}
	name := prompts.MergeFailure
	if side == "success" {
		name = prompts.MergeSuccess
	}
	cur := patches
	for level := 1; len(cur) > 1; level++ {
		var groups [][][]prompts.Item
		for i := 0; i < len(cur); i += t.s.MergeBatchSize {
			groups = append(groups, cur[i:min(i+t.s.MergeBatchSize, len(cur))])
		}
		var calls []optCall
		var callGroup []int
		for gi, grp := range groups {
			if len(grp) == 1 {
				continue
			}
			calls = append(calls, optCall{Stage: "merge", Step: g, Name: name, Index: level*100 + gi, Mode: t.s.UpdateMode, Skill: t.st.Current,
				Payload: prompts.MergeInput{Kind: name, Mode: t.s.UpdateMode, Skill: t.st.Current, MetaSkill: t.metaSkillBlock(), Level: level, Patches: grp}})
			callGroup = append(callGroup, gi)
		}
		merged := make([][]prompts.Item, len(groups))
		for gi, grp := range groups {
			if len(grp) == 1 {
				merged[gi] = grp[0]
			}
		}
		if len(calls) > 0 {
			res, err := t.optimize(ctx, calls)
			if err != nil {
				return nil, err
			}
			for ci, r := range res {
				gi := callGroup[ci]
				var rep prompts.MergeReply
				var items []prompts.Item
				if r.OK && json.Unmarshal(r.JSON, &rep) == nil {
					items = rep.Items(t.s.UpdateMode)
				}
				if items == nil {
					// Fallback: the group's items concatenated.
					for _, p := range groups[gi] {
						for _, it := range p {
							if it.MergeLevel == 0 {
								it.MergeLevel = level
							}
							items = append(items, it)
						}
					}
				} else {
					for k := range items {
						items[k].MergeLevel = level
					}
				}
				merged[gi] = items
			}
		}
		cur = merged
	}
	return cur[0], nil
}

func (t *Trainer) mergeFinal(ctx context.Context, g int, fail, succ []prompts.Item) ([]prompts.Item, error) {
	switch {
	case len(fail) == 0 && len(succ) == 0:
		return nil, nil
	case len(succ) == 0:
		return fail, nil
	case len(fail) == 0:
		return succ, nil
	}
	var rep prompts.MergeReply
	ok, err := t.optimizeOne(ctx, optCall{Stage: "merge", Step: g, Name: prompts.MergeFinal, Mode: t.s.UpdateMode, Skill: t.st.Current,
		Payload: prompts.MergeFinalInput{Kind: prompts.MergeFinal, Mode: t.s.UpdateMode, Skill: t.st.Current, MetaSkill: t.metaSkillBlock(), Failure: fail, Success: succ}}, &rep)
	if err != nil {
		return nil, err
	}
	if ok {
		if items := rep.Items(t.s.UpdateMode); items != nil {
			return items, nil
		}
	}
	return append(append([]prompts.Item{}, fail...), succ...), nil
}

// budget returns the step's edit budget (and advances the scheduler in fixed mode).
func (t *Trainer) budget(ctx context.Context, g int, merged []prompts.Item, rec *StepRecord) (int, *LRDecision, error) {
	if t.s.LRControl != schedule.ControlAutonomous {
		t.st.SchedulerT++
		return scheduleBudget(t.s.LRScheduler, t.s.LR, t.s.MinLR, t.st.TotalSteps, t.st.SchedulerT), nil, nil
	}
	descs := make([]string, len(merged))
	for i, it := range merged {
		descs[i] = describeItem(it)
	}
	in := prompts.LRInput{Kind: prompts.LRController, Skill: t.st.Current, MetaSkill: t.metaSkillBlock(), StepBuffer: t.stepBuffer(), Items: descs,
		N: rec.RolloutN, Hard: round6(rec.RolloutHard), Soft: round6(rec.RolloutSoft)}
	var rep prompts.LRReply
	ok, err := t.optimizeOne(ctx, optCall{Stage: "lr", Step: g, Name: prompts.LRController, Skill: t.st.Current, Payload: in}, &rep)
	if err != nil {
		return 0, nil, err
	}
	dec := &LRDecision{Fallback: true}
	if ok {
		dec.LearningRate, dec.Fallback = parseLR(rep.LearningRate, len(merged))
		dec.Reasoning, dec.Confidence = rep.Reasoning, rep.Confidence
	}
	return dec.LearningRate, dec, nil
}

func describeItem(it prompts.Item) string {
	switch {
	case it.Op != "":
		return fmt.Sprintf("%s: %s", it.Op, firstLine(it.Content+it.Target))
	case it.Title != "":
		return fmt.Sprintf("%s: %s", it.Type, it.Title)
	default:
		return firstLine(strings.Join(it.ChangeSummary, "; "))
	}
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if len(s) > 160 {
		s = s[:160]
	}
	return s
}

func (t *Trainer) rankAndSelect(ctx context.Context, g int, merged []prompts.Item, budget int) ([]prompts.Item, error) {
	if budget <= 0 {
		return nil, nil // B11: a zero budget makes no ranking call
	}
	if len(merged) <= budget {
		return merged, nil
	}
	var rep prompts.RankReply
	ok, err := t.optimizeOne(ctx, optCall{Stage: "rank", Step: g, Name: prompts.Ranking, Mode: t.s.UpdateMode, Skill: t.st.Current,
		Payload: prompts.RankInput{Kind: prompts.Ranking, Mode: t.s.UpdateMode, Skill: t.st.Current, MetaSkill: t.metaSkillBlock(), Budget: budget, Items: merged}}, &rep)
	if err != nil {
		return nil, err
	}
	var out []prompts.Item
	if ok {
		seen := map[int]bool{}
		for _, raw := range rep.SelectedIndices {
			i, valid := strictInt(raw)
			if !valid || i < 0 || i >= len(merged) || seen[i] {
				continue
			}
			seen[i] = true
			out = append(out, merged[i])
			if len(out) == budget {
				break
			}
		}
	}
	if len(out) == 0 {
		out = merged[:budget]
	}
	return out, nil
}

// strictInt accepts JSON integers (and integral floats) only.
func strictInt(raw json.RawMessage) (int, bool) {
	var f float64
	if err := json.Unmarshal(raw, &f); err != nil || f != float64(int(f)) {
		return 0, false
	}
	return int(f), true
}

// update builds the candidate skill.
func (t *Trainer) update(ctx context.Context, g int, current string, ranked []prompts.Item, rec *StepRecord) (string, bool, error) {
	switch t.s.UpdateMode {
	case prompts.ModeRewrite:
		var rep prompts.RewriteReply
		model := t.s.Rewriter
		ok, err := t.optimizeOne(ctx, optCall{Stage: "rewrite", Step: g, Name: prompts.Rewrite, Model: model, Skill: current,
			Payload: prompts.RewriteInput{Kind: prompts.Rewrite, Skill: current, Suggestions: ranked, StepBuffer: t.stepBuffer()}}, &rep)
		if err != nil || !ok || strings.TrimSpace(rep.NewSkill) == "" {
			return "", false, err
		}
		rec.RewriteSummary = rep.ChangeSummary
		return restoreProtected(strings.TrimRight(rep.NewSkill, " \t\r\n")+"\n", current), true, nil
	case prompts.ModeFullRewrite:
		for _, it := range ranked {
			if strings.TrimSpace(it.NewSkill) != "" {
				rec.RewriteSummary = it.ChangeSummary
				return restoreProtected(strings.TrimRight(it.NewSkill, " \t\r\n")+"\n", current), true, nil
			}
		}
		return "", false, nil
	default:
		cand, reports := applyEdits(current, ranked, t.s.NormalizeOps)
		rec.EditApply = map[string]int{}
		for _, r := range reports {
			rec.EditApply[string(r.Status)]++
		}
		t.rd.writeJSON(stepFile(g, "edit_apply_report.json"), reports)
		return cand, true, nil
	}
}

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
func (t *Trainer) finishStep(ctx context.Context, rec *StepRecord, action string, m *measure, start time.Time, tokBefore map[string]Totals, outs []*batchOut, ranked []prompts.Item, scoreBefore string) error {
	_ = scoreBefore
	if rec.Action == "" {
		rec.Action = action
	}
	rec.Action = action
	if action != ActSkipNoPatches && action != ActSkipNoRewrite {
		t.buffer = append(t.buffer, t.bufferEntry(rec, action, m, outs, ranked))
	}
	rec.CurrentScore, rec.BestScore, rec.BestStep = t.st.CurrentScore, t.st.BestScore, t.st.BestStep
	rec.CurrentOrigin, rec.BestOrigin, rec.SkillLen = t.st.CurrentOrigin, t.st.BestOrigin, len(t.st.Current)
	rec.Tokens = t.acct.Since(tokBefore)
	rec.WallTime = time.Since(start).Seconds()
	rec.CoordinatorCPU = (processCPU() - rec.cpuStart).Seconds()
	t.st.Step = rec.Step
	t.st.Phase = fmt.Sprintf("step_%04d", rec.Step)
	t.rd.writeJSON(stepFile(rec.Step, "record.json"), rec)
	t.rd.writeFile(skillFile(rec.Step), t.st.Current)
	t.rd.writeFile("best_skill.md", t.st.Best)
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
	if err := t.rd.emit(ev); err != nil {
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
		// With early stop on, a rejected candidate's score may be partial,
		// so the buffer never shows one: what the optimizer sees must not
		// depend on whether (or when) an evaluation stopped.
		if m != nil && !t.s.EarlyStop && !rec.Unchanged {
			after := round6(m.Score)
			e.ScoreAfter = &after
		}
		e.EarlyStopped = t.s.EarlyStop && !rec.Unchanged
		for _, it := range ranked {
			e.RejectedEdits = append(e.RejectedEdits, prompts.RejectedEdit{
				Op: it.Op, Target: it.Target, Content: it.Content, Type: it.Type, Title: it.Title,
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

func dedupStrings(in []string) []string {
	seen := map[string]bool{}
	out := in[:0:0]
	for _, s := range in {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

func round6(f float64) float64 {
	return float64(int64(f*1e6+0.5*sign(f))) / 1e6
}

func sign(f float64) float64 {
	if f < 0 {
		return -1
	}
	return 1
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

func (t *Trainer) densityBonus(skillText string) float64 {
	if !t.s.UseDensity {
		return 0
	}
	return gate.DensityBonus(skillText, t.s.LeadingWords, t.s.DensityWeight)
}

// speculation is the next step's rollouts started before the gate decided
// which skill the step will use.
type speculation struct {
	t       *Trainer
	bySkill map[string][]*pb.Task
}

// speculate submits step g's rollouts for each of skills when the run
// speculates and step g is in the current epoch. The real step later
// submits the same task ids and so picks up these futures or results.
func (t *Trainer) speculate(ctx context.Context, g int, skills ...string) (*speculation, error) {
	sp := &speculation{t: t}
	if !t.s.Speculate || t.nextBatches == nil {
		return sp, nil
	}
	sp.bySkill = map[string][]*pb.Task{}
	for _, sk := range skills {
		if _, dup := sp.bySkill[sk]; dup {
			continue
		}
		var tasks []*pb.Task
		for _, b := range t.nextBatches {
			tasks = append(tasks, t.rolloutTasks(t.batchRollout(g, sk, b))...)
		}
		futs, err := t.submit(ctx, tasks)
		if err != nil {
			return nil, err
		}
		sp.bySkill[sk] = tasks
		// Account each result as it lands: a branch the gate rules out is
		// still paid for (the real step's use of the other counts once).
		for i, f := range futs {
			go func() {
				select {
				case <-f.Done():
				case <-ctx.Done():
					return
				}
				if res := f.Result(); res.GetOutcome() != pb.Outcome_OUTCOME_CANCELLED {
					t.account("rollout", "target", tasks[i], res)
				}
			}()
		}
	}
	return sp, nil
}

// settle cancels the speculative rollouts of every skill but next (the one
// the next step will use), accounting any a worker finishes anyway.
func (sp *speculation) settle(ctx context.Context, next string) {
	keep := map[string]bool{}
	for _, task := range sp.bySkill[next] {
		keep[task.GetId()] = true
	}
	var ids []string
	byID := map[string]*pb.Task{}
	for sk, tasks := range sp.bySkill {
		if sk == next {
			continue
		}
		for _, task := range tasks {
			if !keep[task.GetId()] {
				ids = append(ids, task.GetId())
				byID[task.GetId()] = task
			}
		}
	}
	if len(ids) > 0 {
		sp.t.hub.D.CancelWith(ctx, func(res *pb.Result) {
			if task := byID[res.GetTaskId()]; task != nil {
				sp.t.account("rollout", "target", task, res)
			}
		}, ids...)
	}
}

// batchRollout is the training rollout of one accumulation batch of step g
// with a skill.
func (t *Trainer) batchRollout(g int, skill string, b plannedBatch) rolloutReq {
	items := make([]bench.Item, len(b.Indices))
	for i, idx := range b.Indices {
		items[i] = t.splits.Train[idx]
	}
	return rolloutReq{Stage: "rollout", Step: g, Skill: skill, Items: items, Split: bench.SplitTrain, Feedback: true, BatchSeed: b.Seed}
}
