// Package livemath is LiveMathematicianBench: multiple-choice questions
// about recent theorems, with the choices permuted per batch seed, scored
// by exact label match.
package livemath

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/skillfleet/skillfleet/internal/pyrand"
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/score"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// Name is the benchmark's registry key.
const Name = "livemath"

// Config is the benchmark's env keys.
type Config struct {
	bench.Common
	// IncludeTheorem and IncludeSketch add the theorem statement and its
	// proof sketch to the prompt. Default false.
	IncludeTheorem bool `json:"include_theorem"`
	IncludeSketch  bool `json:"include_sketch"`
	// PermuteChoices shuffles the choices per batch seed. Default true.
	PermuteChoices *bool `json:"permute_choices"`
}

// Item is a normalised LiveMath item.
type Item struct {
	ID            string         `json:"id"`
	Month         string         `json:"month,omitempty"`
	No            any            `json:"no,omitempty"`
	PaperLink     string         `json:"paper_link,omitempty"`
	Theorem       string         `json:"theorem,omitempty"`
	Sketch        string         `json:"sketch,omitempty"`
	TheoremType   []string       `json:"theorem_type,omitempty"`
	Question      string         `json:"question"`
	Choices       []score.Choice `json:"choices"`
	CorrectChoice score.Choice   `json:"correct_choice"`
}

// Env is the LiveMath environment.
type Env struct{ cfg Config }

var _ bench.Env = (*Env)(nil)

// New returns the environment.
func New(cfg Config) *Env { return &Env{cfg: cfg} }

// Name returns "livemath".
func (e *Env) Name() string { return Name }

// PermutationSeed is the 64-bit seed of an item's choice order in a batch:
// the first 8 bytes (big-endian) of sha256("<batch seed>:<item id>").
func PermutationSeed(batchSeed int64, id string) uint64 {
	sum := sha256.Sum256([]byte(fmt.Sprintf("%d:%s", batchSeed, id)))
	return binary.BigEndian.Uint64(sum[:8])
}

// Permute returns the choices in the order random.Random(seed).shuffle
// gives, relabelled A, B, C… in that order, and the label the correct
// choice (found by its text, else its label) now has.
func Permute(choices []score.Choice, correct score.Choice, seed uint64) ([]score.Choice, string) {
	idx := make([]int, len(choices))
	for i := range idx {
		idx[i] = i
	}
	pyrand.NewUint64(seed).Shuffle(len(idx), func(i, j int) { idx[i], idx[j] = idx[j], idx[i] })
	out := make([]score.Choice, len(choices))
	label := ""
	for k, i := range idx {
		out[k] = score.Choice{Label: string(rune('A' + k)), Text: choices[i].Text}
		if isCorrect(choices[i], correct) {
			label = out[k].Label
		}
	}
	return out, label
}

func isCorrect(c, correct score.Choice) bool {
	if strings.TrimSpace(correct.Text) != "" {
		return strings.TrimSpace(c.Text) == strings.TrimSpace(correct.Text)
	}
	return strings.EqualFold(strings.TrimSpace(c.Label), strings.TrimSpace(correct.Label))
}

const system = `You are a research mathematician answering a multiple-choice question about a recent result.
Think it through, then give the letter of the one correct choice inside <answer></answer>, for example <answer>B</answer>.`

// Prompt renders the user message.
func (e *Env) Prompt(it Item, choices []score.Choice) string {
	var b strings.Builder
	if e.cfg.IncludeTheorem && it.Theorem != "" {
		b.WriteString("Theorem:\n" + it.Theorem + "\n\n")
	}
	if e.cfg.IncludeSketch && it.Sketch != "" {
		b.WriteString("Proof sketch:\n" + it.Sketch + "\n\n")
	}
	b.WriteString("Question:\n" + it.Question + "\n\nChoices:\n")
	for _, c := range choices {
		fmt.Fprintf(&b, "%s. %s\n", c.Label, c.Text)
	}
	b.WriteString("\nAnswer with the letter inside <answer></answer>.")
	return b.String()
}

// TaskType is the item's task type: its theorem types, sorted and joined
// with "+" ("other" when it has none).
func TaskType(it Item) string {
	if len(it.TheoremType) == 0 {
		return "other"
	}
	ts := append([]string(nil), it.TheoremType...)
	sort.Strings(ts)
	return strings.Join(ts, "+")
}

// Episode asks one question.
func (e *Env) Episode(ctx context.Context, m llm.Model, req bench.EpisodeRequest) (*bench.Episode, error) {
	var it Item
	if err := json.Unmarshal(req.Item.Raw, &it); err != nil {
		return nil, fmt.Errorf("livemath item %s: %w", req.Item.ID, err)
	}
	if strings.TrimSpace(it.Question) == "" || len(it.Choices) < 2 {
		return nil, fmt.Errorf("livemath item %s: needs a question and at least two choices", req.Item.ID)
	}
	choices, correct := it.Choices, ""
	for _, c := range it.Choices {
		if isCorrect(c, it.CorrectChoice) {
			correct = score.NormalizeLabel(c.Label)
		}
	}
	if e.cfg.PermuteChoices == nil || *e.cfg.PermuteChoices {
		choices, correct = Permute(it.Choices, it.CorrectChoice, PermutationSeed(req.BatchSeed, req.Item.ID))
	}
	if correct == "" {
		return nil, fmt.Errorf("livemath item %s: correct_choice matches no choice", req.Item.ID)
	}
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: system + "\n\n" + bench.SkillSection(req.Skill)},
		{Role: llm.RoleUser, Content: e.Prompt(it, choices)},
	}
	var rec bench.Recorder
	resp, err := rec.Chat(ctx, m, bench.TargetRequest(req, msgs))
	if err != nil {
		return rec.Failed(Name, req.Item.ID, err)
	}
	msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Content})
	answer, label, valid, hard := Evaluate(resp.Content, choices, correct)
	reason := ""
	switch {
	case !valid:
		reason = fmt.Sprintf("invalid answer: '%s' is not one of the choice labels; correct %s", answer, correct)
	case hard == 1:
	default:
		reason = fmt.Sprintf("wrong choice: predicted %s but the correct choice is %s", label, correct)
	}
	msgs = append(msgs, bench.EvalMessage(hard, hard, label, correct))
	ep := &bench.Episode{Hard: hard, Soft: hard, Answer: label, FailReason: reason, TaskType: TaskType(it),
		TaskDescription: it.Question, Messages: msgs, NTurns: 1}
	rec.Fill(ep)
	return ep, nil
}

// AnalystNotes is LiveMath's failure taxonomy.
func (e *Env) AnalystNotes() string {
	return `LiveMath failures usually fall into: (1) a plausible distractor chosen over the exact statement (a weaker or stronger bound, a missing hypothesis); (2) the answer given as text or with extra words, not as a single letter; (3) quantifiers or edge cases misread; (4) reasoning abandoned midway and a letter guessed. Choices are shuffled between batches, so never rely on a letter's position.`
}
