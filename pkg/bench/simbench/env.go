package simbench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// Name is the benchmark's registry key.
const Name = "sim"

// Config is the sim benchmark's options: the env keys of a run config
// (env: {name: sim, preset: demo, seed: 7}).
type Config struct {
	// Preset is the world's size: demo (default) or paper.
	Preset string `yaml:"preset" json:"preset,omitempty"`
	// Seed is the world seed. Default 0.
	Seed int64 `yaml:"seed" json:"seed,omitempty"`
}

// PresetName returns the preset, with the default filled in.
func (c Config) PresetName() string { return cmp.Or(c.Preset, PresetDemo) }

// WorldSeed returns the world seed.
func (c Config) WorldSeed() int64 { return c.Seed }

// Env is the sim benchmark's environment. Items come from split files
// written by [WriteSplits]; the Env itself holds no world, so any split
// directory of sim items works with it. It is safe for concurrent use.
type Env struct {
	cfg Config
}

var _ bench.Env = (*Env)(nil)

// New returns the sim environment.
func New(cfg Config) *Env { return &Env{cfg: cfg} }

// Name returns "sim".
func (e *Env) Name() string { return Name }

// Markers of the target prompt.
const (
	SkillOpen         = "<skill>"
	SkillClose        = "</skill>"
	AnswerInstruction = "Answer inside <answer></answer>."
	// scaffold opens the system message; it holds no pitfall stem.
	scaffold = "You are an assistant that answers questions about archived records. " +
		"Each question quotes one record value: report it in the form the skill below asks for, " +
		"and follow the skill wherever it applies.\n\n"
)

// SystemPrompt returns the target's system message for a skill: a fixed
// scaffold, then the skill between lines "<skill>" and "</skill>".
func SystemPrompt(skill string) string {
	return scaffold + SkillOpen + "\n" + skill + "\n" + SkillClose
}

// UserPrompt returns the target's user message for a question.
func UserPrompt(question string) string { return question + "\n\n" + AnswerInstruction }

// SkillOf returns the skill inside a system message built by
// [SystemPrompt]: the text between the first "<skill>" line and the last
// "</skill>" line.
func SkillOf(system string) (string, bool) {
	start := strings.Index(system, SkillOpen+"\n")
	end := strings.LastIndex(system, "\n"+SkillClose)
	if start < 0 || end < start+len(SkillOpen) {
		return "", false
	}
	return system[start+len(SkillOpen)+1 : end], true
}

// QuestionOf returns the question inside a user message built by
// [UserPrompt].
func QuestionOf(user string) string {
	return strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(user), AnswerInstruction))
}

// ExtractAnswer returns the text of the last <answer>...</answer> in a
// reply, or else its last non-empty line, trimmed.
func ExtractAnswer(reply string) string {
	if end := strings.LastIndex(reply, "</answer>"); end >= 0 {
		if start := strings.LastIndex(reply[:end], "<answer>"); start >= 0 {
			return strings.TrimSpace(reply[start+len("<answer>") : end])
		}
	}
	lines := strings.Split(reply, "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		if s := strings.TrimSpace(lines[i]); s != "" {
			return s
		}
	}
	return ""
}

// Score compares an answer with the gold answer, both trimmed. hard is 1
// for an exact match, else 0. soft is 1 for a match, 0.5 when the answer
// keeps exactly the gold's digits in other dressing ("4,821", "$4821",
// "4821 mi", "(4821)"), and 0 otherwise (changed digits: "4820", "1284",
// "4821.00").
func Score(answer, gold string) (hard, soft float64) {
	answer, gold = strings.TrimSpace(answer), strings.TrimSpace(gold)
	switch {
	case answer == gold:
		return 1, 1
	case gold != "" && digits(answer) == digits(gold):
		return 0, 0.5
	default:
		return 0, 0
	}
}

func digits(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c >= '0' && c <= '9' {
			b.WriteRune(c)
		}
	}
	return b.String()
}

// Episode asks the target one item's question under the skill and scores
// the answer. The sample index is the request's seed, so repeated samples
// of one item may differ while a repeated call is reproducible.
func (e *Env) Episode(ctx context.Context, m llm.Model, req bench.EpisodeRequest) (*bench.Episode, error) {
	var it Item
	if err := json.Unmarshal(req.Item.Raw, &it); err != nil {
		return nil, fmt.Errorf("sim item %s: %w", req.Item.ID, err)
	}
	if strings.TrimSpace(it.Question) == "" || strings.TrimSpace(it.Answer) == "" {
		return nil, fmt.Errorf("sim item %s: needs a question and an answer", req.Item.ID)
	}
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: SystemPrompt(req.Skill)},
		{Role: llm.RoleUser, Content: UserPrompt(it.Question)},
	}
	seed := int64(req.Sample)
	resp, err := m.Chat(ctx, &llm.Request{
		Model: req.Model, Messages: msgs, Temperature: req.Temperature, MaxTokens: req.MaxTokens,
		Seed: &seed, Timeout: req.Timeout, Stage: "rollout",
	})
	if err != nil {
		return nil, fmt.Errorf("sim item %s: %w", req.Item.ID, err)
	}
	answer := ExtractAnswer(resp.Content)
	hard, soft := Score(answer, it.Answer)
	verdict, reason := "correct", ""
	if hard < 1 {
		verdict = "wrong"
		reason = fmt.Sprintf("wrong_answer: predicted '%s' but expected '%s'", answer, it.Answer)
	}
	msgs = append(msgs,
		llm.Message{Role: llm.RoleAssistant, Content: resp.Content},
		llm.Message{Role: llm.RoleSystem, Content: fmt.Sprintf("evaluation result: %s (predicted '%s', gold answer '%s')", verdict, answer, it.Answer)},
	)
	usage := resp.Usage
	usage.Add(resp.FailedUsage)
	attempts := max(resp.Attempts, 1)
	return &bench.Episode{
		Hard: hard, Soft: soft, Answer: answer, FailReason: reason,
		TaskType: cmp.Or(it.TaskType, req.Item.TaskType), TaskDescription: it.Question,
		Messages: msgs, NTurns: 1, Usage: usage,
		Calls: attempts, FailedCalls: attempts - 1, Retries: attempts - 1, RateLimited: resp.RateLimited,
	}, nil
}

// GoldFromFeedback recovers the gold answer from what an analyst sees of a
// failed episode: the fail reason ("... expected 'Y'") or the evaluation
// message ("... gold answer 'Y')").
func GoldFromFeedback(texts ...string) (string, bool) {
	for _, t := range texts {
		for _, marker := range []string{"expected '", "gold answer '"} {
			at := strings.LastIndex(t, marker)
			if at < 0 {
				continue
			}
			rest := t[at+len(marker):]
			if end := strings.LastIndex(rest, "'"); end >= 0 {
				return rest[:end], true
			}
		}
	}
	return "", false
}
