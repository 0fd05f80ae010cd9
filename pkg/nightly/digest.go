package nightly

import "time"

// Sources of transcripts.
const (
	SourceClaude = "claude"
	SourceCodex  = "codex"
	SourceCursor = "cursor"
)

// Digest is one harvested session, reduced to what mining needs. Every
// text field has been through [Redact].
type Digest struct {
	SessionID string    `json:"session_id"`
	Source    string    `json:"source"`
	Project   string    `json:"project"`
	GitBranch string    `json:"git_branch,omitempty"`
	StartedAt time.Time `json:"started_at"`
	EndedAt   time.Time `json:"ended_at"`
	// UserPrompts are the user's own prompts, meta prompts dropped.
	UserPrompts []string `json:"user_prompts"`
	// AssistantFinals are the last (at most 5) assistant texts.
	AssistantFinals []string `json:"assistant_finals"`
	ToolsUsed       []string `json:"tools_used,omitempty"`
	SkillsUsed      []string `json:"skills_used,omitempty"`
	FilesTouched    []string `json:"files_touched,omitempty"`
	// FeedbackSignals are "neg:<phrase>" / "pos:<phrase>" found in the
	// user's prompts.
	FeedbackSignals []string `json:"feedback_signals,omitempty"`
	NUserTurns      int      `json:"n_user_turns"`
	NAssistantTurns int      `json:"n_assistant_turns"`
	RawPath         string   `json:"raw_path"`
}

// Skipped counts what a harvest left out, and why.
type Skipped struct {
	MalformedLines int `json:"malformed_lines"`
	HugeLines      int `json:"huge_lines"`
	SubAgent       int `json:"subagent_sessions"`
	Headless       int `json:"headless_sessions"`
	Empty          int `json:"empty_sessions"`
	Old            int `json:"older_than_cursor"`
	OtherProject   int `json:"other_project"`
	Unreadable     int `json:"unreadable_files"`
}

func (s *Skipped) add(o Skipped) {
	s.MalformedLines += o.MalformedLines
	s.HugeLines += o.HugeLines
	s.SubAgent += o.SubAgent
	s.Headless += o.Headless
	s.Empty += o.Empty
	s.Old += o.Old
	s.OtherProject += o.OtherProject
	s.Unreadable += o.Unreadable
}
