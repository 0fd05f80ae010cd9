package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// Common are the generic env keys every benchmark's config JSON carries
// (see coordinator.BenchConfig).
type Common struct {
	Name                string `json:"name"`
	MaxTurns            int    `json:"max_turns"`
	MaxCompletionTokens int    `json:"max_completion_tokens"`
	ExecTimeout         string `json:"exec_timeout"`
	// SplitDir is the absolute split directory (or the raw data file's
	// directory in ratio mode); relative asset paths resolve against it.
	SplitDir string `json:"split_dir"`
}

// DecodeConfig decodes a benchmark's config JSON into dst (its own keys,
// which should embed [Common]); an empty config decodes to zero values.
func DecodeConfig(cfg json.RawMessage, dst any) error {
	if len(cfg) == 0 {
		return nil
	}
	return json.Unmarshal(cfg, dst)
}

// Timeout returns exec_timeout as a duration (def when unset or invalid).
func (c Common) Timeout(def time.Duration) time.Duration {
	if d, err := time.ParseDuration(c.ExecTimeout); err == nil && d > 0 {
		return d
	}
	return def
}

// Resolve returns path itself when absolute, else path under the split
// directory (or the working directory when there is none).
func (c Common) Resolve(path string) string {
	if path == "" || filepath.IsAbs(path) || c.SplitDir == "" {
		return path
	}
	return filepath.Join(c.SplitDir, path)
}

// SkillSection renders the skill as the section a target prompt carries.
func SkillSection(skill string) string {
	return "## Skill\n\nApply the following skill wherever it is relevant.\n\n" + strings.TrimSpace(skill) + "\n"
}

// Recorder counts an episode's model calls: usage (failed attempts
// included), calls, retries and 429s.
type Recorder struct {
	Usage       llm.Usage
	Calls       int
	FailedCalls int
	Retries     int
	RateLimited int
}

// Chat calls m and counts the call, whether it succeeded or not.
func (r *Recorder) Chat(ctx context.Context, m llm.Model, req *llm.Request) (*llm.Response, error) {
	resp, err := m.Chat(ctx, req)
	if resp != nil {
		r.Usage.Add(resp.Usage)
		r.Usage.Add(resp.FailedUsage)
		attempts := max(resp.Attempts, 1)
		r.Calls += attempts
		r.FailedCalls += attempts - 1
		r.Retries += attempts - 1
		r.RateLimited += resp.RateLimited
	} else if err != nil {
		r.Calls++
		r.FailedCalls++
	}
	return resp, err
}

// Fill copies the counts into ep.
func (r *Recorder) Fill(ep *Episode) {
	ep.Usage, ep.Calls, ep.FailedCalls, ep.Retries, ep.RateLimited = r.Usage, r.Calls, r.FailedCalls, r.Retries, r.RateLimited
}

// Failed returns a partial episode carrying the usage so far, for an
// infrastructure error, and the error naming the item.
func (r *Recorder) Failed(bench, item string, err error) (*Episode, error) {
	ep := &Episode{}
	r.Fill(ep)
	return ep, fmt.Errorf("%s item %s: %w", bench, item, err)
}

// EvalMessage is the system message appended to every trajectory for the
// analysts: the verdict and the gold answer.
func EvalMessage(hard, soft float64, predicted, gold string) llm.Message {
	verdict := "correct"
	if hard < 1 {
		verdict = "incorrect"
	}
	return llm.Message{Role: llm.RoleSystem, Content: fmt.Sprintf("evaluation result: %s (hard %.3g, soft %.3g); predicted %q; gold answer %s", verdict, hard, soft, predicted, gold)}
}

// TargetRequest is a target call of an episode: its messages with the
// request's model, sampling settings, timeout and the sample index as seed
// (repeated samples of one item differ; a repeated call is reproducible).
func TargetRequest(req EpisodeRequest, msgs []llm.Message) *llm.Request {
	seed := int64(req.Sample)
	return &llm.Request{Model: req.Model, Messages: msgs, Temperature: req.Temperature,
		MaxTokens: req.MaxTokens, Seed: &seed, Timeout: req.Timeout, Stage: "rollout"}
}

// FirstString returns the first of keys whose value in m is a non-empty
// string once trimmed ("" when none is).
func FirstString(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if v, ok := m[k]; ok && v != nil {
			if s := strings.TrimSpace(fmt.Sprint(v)); s != "" {
				return s
			}
		}
	}
	return ""
}
