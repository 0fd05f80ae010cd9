package rundir

import "github.com/skillfleet/skillfleet/pkg/usage"

// Summary is summary.json, written at the end of a run.
type Summary struct {
	Version        int                             `json:"version"`
	RunID          string                          `json:"run_id"`
	Bench          string                          `json:"benchmark"`
	TotalSteps     int                             `json:"total_steps"`
	BaselineScore  float64                         `json:"baseline_selection_score"`
	BestScore      float64                         `json:"best_selection_score"`
	FinalScore     *float64                        `json:"final_selection_score"`
	BestStep       int                             `json:"best_step"`
	BestOrigin     string                          `json:"best_origin"`
	CurrentOrigin  string                          `json:"final_origin"`
	Promoted       bool                            `json:"final_promoted_to_best"`
	Accepts        int                             `json:"accepts"`
	Rejects        int                             `json:"rejects"`
	Skips          int                             `json:"skips"`
	Test           map[string]map[string]TypeScore `json:"test,omitempty"`
	TestHard       map[string]float64              `json:"test_hard,omitempty"`
	TestSoft       map[string]float64              `json:"test_soft,omitempty"`
	DeltaBestHard  *float64                        `json:"delta_best_vs_baseline_hard,omitempty"`
	DeltaFinalHard *float64                        `json:"delta_final_vs_baseline_hard,omitempty"`
	BestSkillHash  string                          `json:"best_skill_hash"`
	FinalSkillHash string                          `json:"final_skill_hash"`
	BaselineHash   string                          `json:"baseline_skill_hash"`
	Tokens         usage.Totals                    `json:"tokens"`
	WallTime       float64                         `json:"wall_time_s"`
	BestSkillPath  string                          `json:"best_skill_path"`
	SelectionEvalN int                             `json:"selection_items"`
	TestEvalN      int                             `json:"test_items"`
	Prefetch       *PrefetchCounts                 `json:"prefetch,omitempty"`
	Hedge          map[string]HedgeCounts          `json:"hedge,omitempty"`
}

// HedgeCounts is what wave hedging did in one stage: the copies made of
// its stragglers and those whose answer came first (the rest lost to
// their original and were withdrawn).
type HedgeCounts struct {
	Copies int `json:"copies"`
	Won    int `json:"won"`
}

// PrefetchCounts is what a run prefetched (runtime.prefetch): the steps
// whose next step's rollouts it queued, the tasks it released into idle
// target slots, those the next step took over (the gate kept the skill)
// and those withdrawn or wasted because the gate accepted.
type PrefetchCounts struct {
	Steps     int `json:"steps"`
	Released  int `json:"released"`
	Kept      int `json:"kept"`
	Discarded int `json:"discarded"`
}

// TypeScore is the score of one task type (or "overall") on a split.
type TypeScore struct {
	Total  int     `json:"total"`
	Scored int     `json:"scored"`
	Hard   float64 `json:"hard_acc"`
	Soft   float64 `json:"soft_acc"`
}

// StepRecord is a step's record, [StepRecordFile] in its [StepFile]
// directory. GateMetric and LRControl hold the names the trainer's typed
// values marshal to (gate.Metric and schedule.ControlMode are strings).
type StepRecord struct {
	Step              int                     `json:"step"`
	Epoch             int                     `json:"epoch"`
	StepInEpoch       int                     `json:"step_in_epoch"`
	Timing            map[string]float64      `json:"timing_s"`
	Tokens            map[string]usage.Totals `json:"tokens"`
	RolloutHard       float64                 `json:"rollout_hard"`
	RolloutSoft       float64                 `json:"rollout_soft"`
	RolloutN          int                     `json:"rollout_n"`
	RolloutInfraFails int                     `json:"rollout_infra_failures"`
	Batches           []BatchRecord           `json:"accumulation_batches"`
	NFailurePatches   int                     `json:"n_failure_patches"`
	NSuccessPatches   int                     `json:"n_success_patches"`
	NMerged           int                     `json:"n_edits_merged"`
	NRanked           int                     `json:"n_edits_ranked"`
	EditBudget        *int                    `json:"edit_budget"`
	LRControl         string                  `json:"lr_control_mode"`
	LRDecision        *LRDecision             `json:"lr_decision,omitempty"`
	CandidateHash     string                  `json:"candidate_hash,omitempty"`
	CandidateLen      int                     `json:"candidate_skill_len,omitempty"`
	EditApply         map[string]int          `json:"edit_apply_summary,omitempty"`
	RewriteSummary    []string                `json:"rewrite_change_summary,omitempty"`
	SelectionHard     *float64                `json:"selection_hard"`
	SelectionSoft     *float64                `json:"selection_soft"`
	SelectionScored   int                     `json:"selection_scored"`
	GateMetric        string                  `json:"gate_metric"`
	CandidateScore    *float64                `json:"candidate_gate_score"`
	EarlyStopped      bool                    `json:"early_stopped,omitempty"`
	UpperBound        *float64                `json:"candidate_score_upper_bound,omitempty"`
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
	// CoordinatorCPU is the CPU time the coordinator process spent during
	// the step: its own cost when workers run in other processes.
	CoordinatorCPU float64 `json:"process_cpu_s"`
}

// BatchRecord describes one accumulation batch of a step.
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
