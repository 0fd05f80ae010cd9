package rundir

import (
	"encoding/json"
	"fmt"
	"strings"
)

// PredictionsFile is the per-item record of a rollout wave, one JSON line
// per item, in the wave's directory of the run dir (see [PredictionsDir]):
// what SkillOpt users read as results.jsonl. The whole trajectory of a
// line stays in the result journal under its task_id (skillfleet inspect
// shows it).
const PredictionsFile = "results.jsonl"

// Prediction is one line of [PredictionsFile].
type Prediction struct {
	ID         string  `json:"id"`
	TaskType   string  `json:"task_type,omitempty"`
	Split      string  `json:"split"`
	Stage      string  `json:"stage"`
	Step       int     `json:"step"`
	Outcome    string  `json:"outcome"`
	Hard       float64 `json:"hard"`
	Soft       float64 `json:"soft"`
	Prediction string  `json:"prediction"`
	FailReason string  `json:"fail_reason,omitempty"`
	Error      string  `json:"error,omitempty"`
	NTurns     int32   `json:"n_turns,omitempty"`
	SkillHash  string  `json:"skill_hash"`
	Sample     int     `json:"sample,omitempty"`
	BatchSeed  int64   `json:"batch_seed,omitempty"`
	Cached     bool    `json:"cached,omitempty"`
	TaskID     string  `json:"task_id"`
}

// PredictionsDir is the run-dir directory of the rollouts of stage at
// step, named as SkillOpt names them where it has a name: the baseline's
// selection_eval_baseline, a step's rollout and selection_eval, the final
// test evaluations test_eval_baseline, test_eval and test_eval_final.
// Epoch stages (step -e) go to <stage>/epoch_EE/rollout.
func PredictionsDir(stage string, step int) string {
	switch {
	case stage == "baseline":
		return "selection_eval_baseline"
	case stage == "final_selection":
		return "final_selection_eval"
	case stage == "test_best":
		return "test_eval"
	case stage == "test_baseline" || stage == "test_final":
		return "test_eval_" + strings.TrimPrefix(stage, "test_")
	case strings.HasPrefix(stage, "test_") || strings.HasPrefix(stage, "eval_"):
		return stage
	case step < 0:
		return fmt.Sprintf("%s/epoch_%02d/rollout", stage, -step)
	case stage == "gate":
		return fmt.Sprintf("steps/step_%04d/selection_eval", step)
	case stage == "gate_current":
		return fmt.Sprintf("steps/step_%04d/selection_eval_current", step)
	}
	return fmt.Sprintf("steps/step_%04d/%s", step, stage)
}

// Minibatch is an analyst call's record, [MinibatchFile]: the items whose
// trajectories it read and its reply (the patch it proposed), as SkillOpt
// keeps the raw analyst replies of a step.
type Minibatch struct {
	Step int `json:"step"`
	// Side is "fail" (the analyst of failures) or "succ" (of successes).
	Side   string   `json:"side"`
	Index  int      `json:"index"`
	Items  []string `json:"items"`
	OK     bool     `json:"ok"`
	Error  string   `json:"error,omitempty"`
	TaskID string   `json:"task_id"`
	// Reply is the analyst's reply object (absent when the call failed).
	Reply json.RawMessage `json:"reply,omitempty"`
}

// MinibatchFile names the record of analyst call index of side at step g.
func MinibatchFile(g int, side string, index int) string {
	return StepFile(g, fmt.Sprintf("patches/minibatch_%s_%03d.json", side, index))
}
