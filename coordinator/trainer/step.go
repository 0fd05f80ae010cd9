package trainer

import (
	"context"
	"fmt"
	"time"

	"github.com/skillfleet/skillfleet/coordinator/gate"
	"github.com/skillfleet/skillfleet/coordinator/schedule"
	"github.com/skillfleet/skillfleet/pkg/prompts"
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
	start := t.now()
	rec := &StepRecord{Step: g, Epoch: epoch, StepInEpoch: inEpoch + 1, Timing: map[string]float64{}, GateMetric: t.s.GateMetric, LRControl: t.s.LRControl, cpuStart: processCPU()}
	tokBefore := t.acct.Snapshot()
	t.prog.Step(epoch, t.s.NumEpochs, g, t.st.TotalSteps, t.st.CurrentScore, t.st.BestScore)
	current := t.st.Current

	// ① rollout, ② reflect and ③'s merge trees as one stream: each
	// batch's analysts start when its rollouts are in, each merge when its
	// patches exist (see step_stream.go).
	ts := t.now()
	outs, failMerged, succMerged, reflected, err := t.reflectAndMerge(ctx, g, current, batches)
	if err != nil {
		return err
	}
	rec.Timing["rollout_reflect"] = reflected.Sub(ts).Seconds()
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
		return t.finishStep(rec, ActSkipNoPatches, nil, start, tokBefore, outs, nil)
	}

	// ③ aggregate: the final merge of the two trees.
	ts = reflected
	merged, err := t.mergeFinal(ctx, g, failMerged, succMerged)
	if err != nil {
		return err
	}
	rec.NMerged = len(merged)
	rec.Timing["aggregate"] = t.now().Sub(ts).Seconds()
	t.rd.WriteJSON(StepFile(g, "merged_patch.json"), map[string]any{prompts.PayloadKey(t.s.UpdateMode): merged})
	if err := t.checkStop(); err != nil {
		return err
	}

	// ④ select: budget, then rank and clip.
	ts = t.now()
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
	rec.Timing["select"] = t.now().Sub(ts).Seconds()
	t.rd.WriteJSON(StepFile(g, "ranked_edits.json"), map[string]any{prompts.PayloadKey(t.s.UpdateMode): ranked})
	if err := t.checkStop(); err != nil {
		return err
	}

	// ⑤ update.
	ts = t.now()
	candidate, ok, err := t.update(ctx, g, current, ranked, rec)
	if err != nil {
		return err
	}
	rec.Timing["update"] = t.now().Sub(ts).Seconds()
	if !ok {
		t.flushAppendix(ctx, g, notes, rec)
		return t.finishStep(rec, ActSkipNoRewrite, nil, start, tokBefore, outs, ranked)
	}
	rec.CandidateHash, rec.CandidateLen = skillHash(candidate), len(candidate)
	t.rd.WriteFile(StepFile(g, "candidate_skill.md"), candidate)
	if err := t.checkStop(); err != nil {
		return err
	}

	// ⑥ gate (with the next step's rollouts started for both outcomes
	// when speculating).
	spec, err := t.speculate(ctx, g+1, candidate, current)
	if err != nil {
		return err
	}
	ts = t.now()
	action, m, err := t.gate(ctx, "gate", g, candidate, rec)
	if err != nil {
		return err
	}
	rec.Timing["evaluate"] = t.now().Sub(ts).Seconds()
	t.applyVerdict(action, candidate, m, fmt.Sprintf("step_%04d", g), g)
	t.flushAppendix(ctx, g, notes, rec)
	spec.settle(ctx, t.st.Current)
	return t.finishStep(rec, action, &m, start, tokBefore, outs, ranked)
}
