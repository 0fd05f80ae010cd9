// Package searchqa is the SearchQA benchmark: a question over retrieved
// search snippets, answered in one target call (or with self-review turns),
// scored by SQuAD exact match (hard) and token F1 (soft).
package searchqa

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/skillfleet/skillfleet/internal/pystr"
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// Name is the benchmark's registry key.
const Name = "searchqa"

// MaxContext is the context budget in characters.
const MaxContext = 6000

// TruncMarker ends a context cut inside its first document.
const TruncMarker = "\n[... document truncated ...]"

// Config is the benchmark's env keys.
type Config struct {
	bench.Common
}

// Item is a SearchQA item.
type Item struct {
	ID       string   `json:"id"`
	Question string   `json:"question"`
	Context  string   `json:"context"`
	Answers  []string `json:"answers"`
	TaskType string   `json:"task_type,omitempty"`
}

// Env is the SearchQA environment.
type Env struct{ cfg Config }

var _ bench.Env = (*Env)(nil)

// New returns the environment.
func New(cfg Config) *Env { return &Env{cfg: cfg} }

// Name returns "searchqa".
func (e *Env) Name() string { return Name }

// TruncateContext keeps whole "[DOC]"-separated documents while they fit
// in limit characters; when even the first does not fit, it is cut hard
// and marked.
func TruncateContext(ctx string, limit int) string {
	if len(ctx) <= limit {
		return ctx
	}
	// Document starts: every "[DOC]" (the text before the first one, if
	// any, belongs to the first document).
	var starts []int
	for i := 0; ; {
		j := strings.Index(ctx[i:], "[DOC]")
		if j < 0 {
			break
		}
		starts = append(starts, i+j)
		i += j + len("[DOC]")
	}
	end := 0
	for _, s := range starts {
		if s == 0 {
			continue
		}
		if s <= limit {
			end = s
		}
	}
	if end == 0 {
		cut := limit - len(TruncMarker)
		for cut > 0 && !utf8Start(ctx[cut]) {
			cut--
		}
		return ctx[:cut] + TruncMarker
	}
	return strings.TrimRight(ctx[:end], " \n")
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

const system = `You answer trivia-style questions using the search results you are given.
Read the results, decide on the shortest answer that fully answers the question (usually a name, a number, a date or a short phrase), and give it inside <answer></answer> at the end of your reply.`

const review = `Check your answer against the search results once more. If it is right, repeat it; if not, correct it. End with the final answer inside <answer></answer>.`

// Prompts returns the system and user messages for an item.
func Prompts(skill string, it Item) (sys, user string) {
	sys = system + "\n\n" + bench.SkillSection(skill)
	user = "Search results:\n" + TruncateContext(it.Context, MaxContext) + "\n\nQuestion: " + it.Question + "\n\nGive the answer inside <answer></answer>."
	return sys, user
}

// Episode answers one question.
func (e *Env) Episode(ctx context.Context, m llm.Model, req bench.EpisodeRequest) (*bench.Episode, error) {
	var it Item
	if err := json.Unmarshal(req.Item.Raw, &it); err != nil {
		return nil, fmt.Errorf("searchqa item %s: %w", req.Item.ID, err)
	}
	if strings.TrimSpace(it.Question) == "" {
		return nil, fmt.Errorf("searchqa item %s: no question", req.Item.ID)
	}
	if len(it.Answers) == 0 {
		return nil, fmt.Errorf("searchqa item %s: no answers", req.Item.ID)
	}
	sys, user := Prompts(req.Skill, it)
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: sys}, {Role: llm.RoleUser, Content: user}}
	var rec bench.Recorder
	turns := max(e.cfg.MaxTurns, 1)
	var reply string
	for turn := range turns {
		if turn > 0 {
			msgs = append(msgs, llm.Message{Role: llm.RoleUser, Content: review})
		}
		resp, err := rec.Chat(ctx, m, bench.TargetRequest(req, msgs))
		if err != nil {
			return rec.Failed(Name, req.Item.ID, err)
		}
		reply = resp.Content
		msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: reply})
	}
	answer, hard, soft := Evaluate(reply, it.Answers)
	reason := ""
	if hard < 1 {
		reason = fmt.Sprintf("EM=0: predicted '%s' but expected %s", answer, pyList(it.Answers))
	}
	gold, _ := json.Marshal(it.Answers)
	msgs = append(msgs, bench.EvalMessage(hard, soft, answer, string(gold)))
	ep := &bench.Episode{Hard: hard, Soft: soft, Answer: answer, FailReason: reason,
		TaskType: cmp.Or(it.TaskType, req.Item.TaskType), TaskDescription: it.Question, Messages: msgs, NTurns: turns}
	rec.Fill(ep)
	return ep, nil
}

// pyList renders golds as Python's repr of a list, as SkillOpt's reasons
// do (["O'Neil"] keeps its apostrophe inside double quotes).
func pyList(xs []string) string {
	q := make([]string, len(xs))
	for i, x := range xs {
		q[i] = pystr.StrRepr(x)
	}
	return "[" + strings.Join(q, ", ") + "]"
}

// AnalystNotes is SearchQA's failure taxonomy for the analysts.
func (e *Env) AnalystNotes() string {
	return `SearchQA failures usually fall into: (1) the answer is in the results but a different candidate was chosen; (2) the answer carries extra words, so exact match fails although F1 is partial; (3) the wrong granularity (a country for a city, a year for a date); (4) the question's type was misread (who vs what); (5) no result supports any answer and a guess was made.`
}
