package prompts

import (
	"encoding/json"

	"github.com/skillfleet/skillfleet/pkg/skill"
)

// Prompt names. Each names an embedded template; a benchmark may override
// the analyst ones. The names are also the payload's "kind".
const (
	AnalystFailure = "analyst_failure"
	AnalystSuccess = "analyst_success"
	MergeFailure   = "merge_failure"
	MergeSuccess   = "merge_success"
	MergeFinal     = "merge_final"
	Ranking        = "ranking"
	LRController   = "lr_controller"
	Rewrite        = "rewrite"
	SlowUpdate     = "slow_update"
	MetaSkill      = "meta_skill"
	Consolidate    = "appendix_consolidate"
)

// Update modes (optimizer.skill_update_mode).
const (
	ModePatch       = "patch"
	ModeRewrite     = "rewrite_from_suggestions"
	ModeFullRewrite = "full_rewrite_minibatch"
)

// PayloadKey returns the JSON key that holds a mode's item list.
func PayloadKey(mode string) string {
	switch mode {
	case ModeRewrite:
		return "revise_suggestions"
	case ModeFullRewrite:
		return "skill_candidates"
	default:
		return "edits"
	}
}

// Item is one proposed change, in any update mode: an edit (patch mode), a
// revise suggestion (rewrite mode) or a whole skill candidate (full-rewrite
// mode). Fields that a mode does not use stay empty.
type Item struct {
	// File is the package file a patch-mode edit touches (a skill package,
	// pkg/skillpkg): "" is SKILL.md, so a single-file skill's edits are
	// unchanged. A package edit may also create_file or remove_file.
	File string `json:"file,omitempty"`
	// Patch mode: op is append, insert_after, replace or delete.
	Op      string `json:"op,omitempty"`
	Target  string `json:"target,omitempty"`
	Content string `json:"content,omitempty"`

	// Rewrite mode.
	Type         string `json:"type,omitempty"`
	Title        string `json:"title,omitempty"`
	Motivation   string `json:"motivation,omitempty"`
	Instruction  string `json:"instruction,omitempty"`
	PriorityHint string `json:"priority_hint,omitempty"`

	// Full-rewrite mode.
	ChangeSummary []string `json:"change_summary,omitempty"`
	NewSkill      string   `json:"new_skill,omitempty"`

	// Bookkeeping added by the coordinator and the merge calls.
	SupportCount int    `json:"support_count,omitempty"`
	SourceType   string `json:"source_type,omitempty"`
	MergeLevel   int    `json:"merge_level,omitempty"`
	// Label is the skill-aware classification (DISCOVERY, OPTIMIZATION, ...), logged only.
	Label string `json:"label,omitempty"`
}

// Edits returns the edits of patch-mode items, for [skill.Apply].
func Edits(items []Item) []skill.Edit {
	edits := make([]skill.Edit, len(items))
	for i, it := range items {
		edits[i] = skill.Edit{Op: it.Op, Target: it.Target, Content: it.Content}
	}
	return edits
}

// Message is one line of a rendered trajectory.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Trajectory is one scored rollout as the analysts see it.
type Trajectory struct {
	ID         string    `json:"id"`
	Task       string    `json:"task"`
	TaskType   string    `json:"task_type,omitempty"`
	FailReason string    `json:"fail_reason,omitempty"`
	NTurns     int       `json:"n_turns"`
	Hard       float64   `json:"hard"`
	Soft       float64   `json:"soft"`
	Answer     string    `json:"answer,omitempty"`
	Reference  string    `json:"reference,omitempty"`
	Messages   []Message `json:"messages"`
	// AgentTrace holds the summaries of what an agent CLI target did
	// (trace.go), lifted out of its replies when the payload is written.
	AgentTrace []string `json:"agent_trace,omitempty"`
}

// RejectedEdit summarises one ranked item of a rejected step.
type RejectedEdit struct {
	// File is the package file the edit named ("" = SKILL.md).
	File          string   `json:"file,omitempty"`
	Op            string   `json:"op,omitempty"`
	Target        string   `json:"target,omitempty"`
	Content       string   `json:"content,omitempty"`
	Type          string   `json:"type,omitempty"`
	Title         string   `json:"title,omitempty"`
	Instruction   string   `json:"instruction,omitempty"`
	ChangeSummary []string `json:"change_summary,omitempty"`
	SourceType    string   `json:"source_type,omitempty"`
}

// FailurePattern is one group of failures in a step-buffer entry.
type FailurePattern struct {
	Pattern string   `json:"pattern"`
	Count   int      `json:"count"`
	TaskIDs []string `json:"task_ids"`
}

// BufferEntry is one evaluated step of the current epoch (the step buffer).
type BufferEntry struct {
	Step            int              `json:"step"`
	Action          string           `json:"action"`
	NTotal          int              `json:"n_total"`
	NFail           int              `json:"n_fail"`
	FailurePatterns []FailurePattern `json:"failure_patterns"`
	ScoreBefore     *float64         `json:"score_before,omitempty"`
	ScoreAfter      *float64         `json:"score_after,omitempty"`
	// EarlyStopped marks a rejected candidate whose evaluation stopped as
	// soon as it could no longer beat ScoreBefore (ScoreAfter is then unset).
	EarlyStopped  bool           `json:"early_stopped,omitempty"`
	RejectedEdits []RejectedEdit `json:"rejected_edits,omitempty"`
}

// AnalystInput is the payload of analyst_failure and analyst_success.
type AnalystInput struct {
	Kind string `json:"kind"`
	Mode string `json:"mode"`
	// Skill is filled in by the worker from the task's skill hash.
	Skill string `json:"skill"`
	// Budget is the most items the reply may hold (0 in full-rewrite mode).
	Budget       int           `json:"budget"`
	StepBuffer   []BufferEntry `json:"step_buffer,omitempty"`
	MetaSkill    string        `json:"meta_skill,omitempty"`
	SkillAware   bool          `json:"skill_aware,omitempty"`
	BatchSize    int           `json:"batch_size"`
	Trajectories []Trajectory  `json:"trajectories"`
	// TrainDescription: the run trains SKILL.md's front-matter description
	// (config train_description), so a patch-mode analyst may propose
	// set_description (the description.md block explains it).
	TrainDescription bool `json:"train_description,omitempty"`
}

// FailureType is one row of an analyst's failure summary.
type FailureType struct {
	FailureType string `json:"failure_type"`
	Count       int    `json:"count"`
	Description string `json:"description"`
}

// PatchBody is the "patch" object of an analyst reply.
type PatchBody struct {
	Reasoning         string `json:"reasoning"`
	Edits             []Item `json:"edits,omitempty"`
	ReviseSuggestions []Item `json:"revise_suggestions,omitempty"`
	SkillCandidates   []Item `json:"skill_candidates,omitempty"`
}

// Items returns the body's item list for a mode.
func (p *PatchBody) Items(mode string) []Item {
	switch mode {
	case ModeRewrite:
		return p.ReviseSuggestions
	case ModeFullRewrite:
		return p.SkillCandidates
	default:
		return p.Edits
	}
}

// SetItems sets the body's item list for a mode.
func (p *PatchBody) SetItems(mode string, items []Item) {
	switch mode {
	case ModeRewrite:
		p.ReviseSuggestions = items
	case ModeFullRewrite:
		p.SkillCandidates = items
	default:
		p.Edits = items
	}
}

// AnalystReply is what an analyst returns. BatchSize is kept raw: models
// send strings and floats, and it is parsed defensively.
type AnalystReply struct {
	BatchSize       json.RawMessage `json:"batch_size,omitempty"`
	FailureSummary  []FailureType   `json:"failure_summary,omitempty"`
	SuccessPatterns []string        `json:"success_patterns,omitempty"`
	Patch           *PatchBody      `json:"patch,omitempty"`
	AppendixNotes   json.RawMessage `json:"appendix_notes,omitempty"`
}

// MergeInput is the payload of merge_failure and merge_success.
type MergeInput struct {
	Kind      string `json:"kind"`
	Mode      string `json:"mode"`
	Skill     string `json:"skill"`
	MetaSkill string `json:"meta_skill,omitempty"`
	Level     int    `json:"level"`
	// Patches is the group: one item list per patch.
	Patches [][]Item `json:"patches"`
}

// MergeFinalInput is the payload of merge_final.
type MergeFinalInput struct {
	Kind      string `json:"kind"`
	Mode      string `json:"mode"`
	Skill     string `json:"skill"`
	MetaSkill string `json:"meta_skill,omitempty"`
	Failure   []Item `json:"failure"`
	Success   []Item `json:"success"`
}

// MergeReply is what a merge call returns (items under the mode's key).
type MergeReply struct {
	Reasoning         string `json:"reasoning"`
	Edits             []Item `json:"edits,omitempty"`
	ReviseSuggestions []Item `json:"revise_suggestions,omitempty"`
	SkillCandidates   []Item `json:"skill_candidates,omitempty"`
}

// Items returns the reply's item list for a mode.
func (m *MergeReply) Items(mode string) []Item {
	b := PatchBody{Edits: m.Edits, ReviseSuggestions: m.ReviseSuggestions, SkillCandidates: m.SkillCandidates}
	return b.Items(mode)
}

// RankInput is the payload of ranking.
type RankInput struct {
	Kind      string `json:"kind"`
	Mode      string `json:"mode"`
	Skill     string `json:"skill"`
	MetaSkill string `json:"meta_skill,omitempty"`
	Budget    int    `json:"budget"`
	Items     []Item `json:"items"`
}

// RankReply is what ranking returns: indices into RankInput.Items in priority order.
type RankReply struct {
	Reasoning       string            `json:"reasoning"`
	SelectedIndices []json.RawMessage `json:"selected_indices"`
}

// LRInput is the payload of lr_controller.
type LRInput struct {
	Kind       string        `json:"kind"`
	Skill      string        `json:"skill"`
	MetaSkill  string        `json:"meta_skill,omitempty"`
	N          int           `json:"n"`
	Hard       float64       `json:"hard"`
	Soft       float64       `json:"soft"`
	Items      []string      `json:"items"`
	StepBuffer []BufferEntry `json:"step_buffer,omitempty"`
}

// LRReply is what lr_controller returns; learning_rate is parsed defensively.
type LRReply struct {
	LearningRate json.RawMessage `json:"learning_rate"`
	Reasoning    string          `json:"reasoning"`
	Confidence   string          `json:"confidence,omitempty"`
	RiskNotes    []string        `json:"risk_notes,omitempty"`
}

// RewriteInput is the payload of rewrite.
type RewriteInput struct {
	Kind        string        `json:"kind"`
	Skill       string        `json:"skill"`
	Suggestions []Item        `json:"suggestions"`
	StepBuffer  []BufferEntry `json:"step_buffer,omitempty"`
}

// RewriteReply is what rewrite returns.
type RewriteReply struct {
	Reasoning     string   `json:"reasoning"`
	ChangeSummary []string `json:"change_summary"`
	NewSkill      string   `json:"new_skill"`
}

// Outcome is one side of a longitudinal pair.
type Outcome struct {
	Hard            float64 `json:"hard"`
	Soft            float64 `json:"soft"`
	PredictedAnswer string  `json:"predicted_answer,omitempty"`
	FailReason      string  `json:"fail_reason,omitempty"`
}

// Pair compares one train item under the previous and the current skill.
type Pair struct {
	ID       string  `json:"id"`
	Task     string  `json:"task"`
	Category string  `json:"category"` // improved, regressed, persistent_fail, stable_success
	Prev     Outcome `json:"prev"`
	Curr     Outcome `json:"curr"`
	// Trajectories are omitted for stable successes.
	PrevTrajectory []Message `json:"prev_trajectory,omitempty"`
	CurrTrajectory []Message `json:"curr_trajectory,omitempty"`
}

// EpochInput is the payload of slow_update and meta_skill.
type EpochInput struct {
	Kind string `json:"kind"`
	// PrevSkill is the previous epoch's last-step skill; Skill the current one.
	PrevSkill string `json:"prev_skill"`
	Skill     string `json:"skill"`
	// Previous is the current slow-update guidance or meta skill ("" = none yet).
	Previous string         `json:"previous,omitempty"`
	Counts   map[string]int `json:"counts"`
	Pairs    []Pair         `json:"pairs"`
}

// SlowUpdateReply is what slow_update returns.
type SlowUpdateReply struct {
	Reasoning         string `json:"reasoning"`
	SlowUpdateContent string `json:"slow_update_content"`
}

// MetaSkillReply is what meta_skill returns.
type MetaSkillReply struct {
	Reasoning        string `json:"reasoning"`
	MetaSkillContent string `json:"meta_skill_content"`
}

// ConsolidateInput is the payload of appendix_consolidate.
type ConsolidateInput struct {
	Kind  string   `json:"kind"`
	Notes []string `json:"notes"`
}

// ConsolidateReply is what appendix_consolidate returns.
type ConsolidateReply struct {
	Notes []string `json:"notes"`
}
