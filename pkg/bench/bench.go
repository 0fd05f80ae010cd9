// Package bench defines the benchmark environment contract that workers
// drive: an item, an episode run with a target model and a skill, and the
// scored result. Benchmarks live in subpackages (sim, searchqa, ...).
package bench

import (
	"context"
	"encoding/json"
	"time"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// Split names.
const (
	SplitTrain = "train"
	SplitVal   = "val"
	SplitTest  = "test"
)

// Item is one benchmark item: its id, task type and the benchmark's own
// JSON object, passed through unchanged to the episode.
type Item struct {
	ID       string          `json:"id"`
	TaskType string          `json:"task_type,omitempty"`
	Raw      json.RawMessage `json:"raw"`
}

// EpisodeRequest is everything one episode needs besides the model.
type EpisodeRequest struct {
	Item  Item
	Skill string
	Split string
	// Sample is the sample index (repeated measurements of one item differ).
	Sample int
	// EvalFeedback lets training rollouts see evaluation feedback where the
	// benchmark defines it.
	EvalFeedback bool
	BatchSeed    int64
	// Target model settings.
	Model       string
	Temperature *float64
	MaxTokens   int
	Timeout     time.Duration
}

// Episode is a scored trajectory.
type Episode struct {
	Hard            float64       `json:"hard"`
	Soft            float64       `json:"soft"`
	Answer          string        `json:"answer"`
	FailReason      string        `json:"fail_reason,omitempty"`
	TaskType        string        `json:"task_type,omitempty"`
	TaskDescription string        `json:"task_description,omitempty"`
	Messages        []llm.Message `json:"messages"`
	NTurns          int           `json:"n_turns"`
	// Usage sums the target calls of the episode, failed attempts included.
	Usage       llm.Usage `json:"usage"`
	Calls       int       `json:"calls"`
	FailedCalls int       `json:"failed_calls,omitempty"`
	RateLimited int       `json:"rate_limited,omitempty"`
	Retries     int       `json:"retries,omitempty"`
}

// Env is one benchmark. Implementations are safe for concurrent use.
//
// Episode returns an error only for infrastructure failures (the model call
// failed after retries, the task timed out, the item is malformed); a wrong
// answer is a scored Episode, never an error.
type Env interface {
	Name() string
	Episode(ctx context.Context, m llm.Model, req EpisodeRequest) (*Episode, error)
}

// Analyst is implemented by benchmarks that add their own failure taxonomy
// to the analyst prompts.
type Analyst interface {
	AnalystNotes() string
}
