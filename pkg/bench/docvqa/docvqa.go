// Package docvqa is DocVQA: a question about a document page image, sent
// to a vision model as a data URI, scored by ANLS (soft) and ANLS ≥ 0.999
// (hard).
package docvqa

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// Name is the benchmark's registry key.
const Name = "docvqa"

// Config is the benchmark's env keys.
type Config struct {
	bench.Common
	// ImageDetail is the vision detail hint: "" or "auto" (omitted), "low", "high".
	ImageDetail string `json:"image_detail"`
	// ImageRoot resolves relative image paths (default: the split dir).
	ImageRoot string `json:"image_root"`
	// GoldCellsAsText is a named deviation from SkillOpt (off by default):
	// an answer cell that is neither a Python list nor a string literal
	// is taken as written (".5", "3.50", "10,000") instead of through
	// ast.literal_eval (0.5, 3.5, the tuple (10, 0)).
	GoldCellsAsText bool `json:"gold_cells_as_text"`
}

// Item is a normalised DocVQA item.
type Item struct {
	ID       string   `json:"id"`
	Question string   `json:"question"`
	Answers  []string `json:"answers"`
	// AnswersAsText is the answer cell read with GoldCellsAsText, when
	// that differs from Answers.
	AnswersAsText []string `json:"answers_as_text,omitempty"`
	ImagePath     string   `json:"image_path"`
	TaskType      string   `json:"task_type,omitempty"`
}

// Env is the DocVQA environment.
type Env struct{ cfg Config }

var _ bench.Env = (*Env)(nil)

// New returns the environment.
func New(cfg Config) *Env { return &Env{cfg: cfg} }

// Name returns "docvqa".
func (e *Env) Name() string { return Name }

// Normalize maps a DocVQA CSV row (or JSON item) to the item schema:
// questionId|id → id, answer|ground_truth (a Python list literal or one
// string) → answers, topic|category → task_type, and a "document_path:"
// suffix of the question → image_path when that is empty.
func Normalize(m map[string]any) (map[string]any, error) {
	str := func(keys ...string) string { return bench.FirstString(m, keys...) }
	out := map[string]any{}
	for k, v := range m {
		out[k] = v
	}
	out["id"] = str("questionId", "id")
	q := str("question")
	if i := strings.Index(q, "document_path:"); i >= 0 {
		if str("image_path") == "" {
			out["image_path"] = strings.TrimSpace(q[i+len("document_path:"):])
		}
		q = strings.TrimSpace(q[:i])
	}
	if q == "" {
		return nil, errors.New("question: empty")
	}
	out["question"] = q
	var answers []string
	switch v := cmp.Or(m["answers"], m["answer"], m["ground_truth"]).(type) {
	case []any:
		for _, a := range v {
			answers = append(answers, fmt.Sprint(a))
		}
	case string:
		// The cell as SkillOpt reads it, and as the gold_cells_as_text
		// deviation reads it when that differs.
		answers = ParseAnswers(v, GoldOptions{})
		if asText := ParseAnswers(v, GoldOptions{CellsAsText: true}); !slices.Equal(asText, answers) {
			out["answers_as_text"] = asText
		}
	case nil:
		return nil, errors.New("answer: missing (want answer or ground_truth)")
	default:
		answers = []string{fmt.Sprint(v)}
	}
	if answers == nil {
		answers = []string{}
	}
	out["answers"] = answers
	if tt := str("task_type", "topic", "category"); tt != "" {
		out["task_type"] = tt
	}
	return out, nil
}

// DataURI reads an image file into a data: URI with its MIME type.
func DataURI(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	mime := http.DetectContentType(data)
	if !strings.HasPrefix(mime, "image/") {
		return "", fmt.Errorf("%s is not an image (%s)", path, mime)
	}
	return "data:" + mime + ";base64," + base64.StdEncoding.EncodeToString(data), nil
}

const system = `You answer questions about a scanned document page shown as an image.
Read the page carefully, find the text that answers the question and copy it exactly as printed (no extra words, no units unless printed with the value). End with the answer inside <answer></answer>.`

// Episode answers one question about one page.
func (e *Env) Episode(ctx context.Context, m llm.Model, req bench.EpisodeRequest) (*bench.Episode, error) {
	var it Item
	if err := json.Unmarshal(req.Item.Raw, &it); err != nil {
		return nil, fmt.Errorf("docvqa item %s: %w", req.Item.ID, err)
	}
	if it.ImagePath == "" {
		return nil, fmt.Errorf("docvqa item %s: no image_path", req.Item.ID)
	}
	path := it.ImagePath
	if !filepath.IsAbs(path) {
		if e.cfg.ImageRoot != "" {
			path = filepath.Join(e.cfg.Resolve(e.cfg.ImageRoot), path)
		} else {
			path = e.cfg.Resolve(path)
		}
	}
	uri, err := DataURI(path)
	if err != nil {
		return nil, fmt.Errorf("docvqa item %s: image: %w", req.Item.ID, err)
	}
	detail := e.cfg.ImageDetail
	if detail == "auto" {
		detail = ""
	}
	msgs := []llm.Message{
		{Role: llm.RoleSystem, Content: system + "\n\n" + bench.SkillSection(req.Skill)},
		{Role: llm.RoleUser, Parts: []llm.Part{
			{Type: "image", ImageURL: uri, Detail: detail},
			{Type: "text", Text: "Question: " + it.Question + "\n\nGive the answer inside <answer></answer>."},
		}},
	}
	var rec bench.Recorder
	resp, err := rec.Chat(ctx, m, bench.TargetRequest(req, msgs))
	if err != nil {
		return rec.Failed(Name, req.Item.ID, err)
	}
	golds := it.Answers
	if e.cfg.GoldCellsAsText && it.AnswersAsText != nil {
		golds = it.AnswersAsText
	}
	answer, soft := Evaluate(resp.Content, golds)
	hard := 0.0
	if soft >= 0.999 {
		hard = 1
	}
	reason := ""
	if soft <= 0 {
		reason = fmt.Sprintf("ANLS=0: predicted '%s' but expected one of %q", answer, golds)
	}
	// The trajectory keeps the image's path, not its bytes: analysts read text.
	msgs[1] = llm.Message{Role: llm.RoleUser, Content: "[page image: " + it.ImagePath + "]\nQuestion: " + it.Question}
	gold, _ := json.Marshal(golds)
	msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Content}, bench.EvalMessage(hard, soft, answer, string(gold)))
	ep := &bench.Episode{Hard: hard, Soft: soft, Answer: answer, FailReason: reason,
		TaskType: cmp.Or(it.TaskType, req.Item.TaskType), TaskDescription: it.Question, Messages: msgs, NTurns: 1}
	rec.Fill(ep)
	return ep, nil
}

// AnalystNotes is DocVQA's failure taxonomy.
func (e *Env) AnalystNotes() string {
	return `DocVQA failures usually fall into: (1) the right region read but the value copied with changes (reformatted dates or numbers, added units or currency); (2) a neighbouring field read instead (the label next to the one asked, another row of a table); (3) extra words around the value; (4) handwriting or small print misread; (5) the question's scope misread (first vs last, total vs subtotal). Scoring is edit-distance based: near-exact copies score partially, anything half wrong scores zero.`
}
