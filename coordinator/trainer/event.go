package trainer

import "fmt"

// Event is one line of events.jsonl: a decision. Events carry no wall-clock
// times, so two runs that decide alike write identical logs.
type Event struct {
	Type           string             `json:"type"`
	Epoch          int                `json:"epoch,omitempty"`
	Step           int                `json:"step,omitempty"`
	Action         string             `json:"action,omitempty"`
	CandidateHash  string             `json:"candidate_hash,omitempty"`
	CurrentHash    string             `json:"current_hash,omitempty"`
	BestHash       string             `json:"best_hash,omitempty"`
	CandidateScore *float64           `json:"candidate_score,omitempty"`
	CurrentScore   float64            `json:"current_score"`
	BestScore      float64            `json:"best_score"`
	EarlyStopped   bool               `json:"early_stopped,omitempty"`
	Unchanged      bool               `json:"unchanged,omitempty"`
	CacheHit       bool               `json:"cache_hit,omitempty"`
	Unscored       bool               `json:"unscored,omitempty"`
	MetaHash       string             `json:"meta_hash,omitempty"`
	Counts         map[string]int     `json:"counts,omitempty"`
	Scores         map[string]float64 `json:"scores,omitempty"`
}

// StepFile names a file of step g's directory in the run dir.
func StepFile(g int, name string) string { return fmt.Sprintf("steps/step_%04d/%s", g, name) }

// SkillFile names the skill snapshot after step g in the run dir.
func SkillFile(g int) string { return fmt.Sprintf("skills/skill_v%04d.md", g) }
