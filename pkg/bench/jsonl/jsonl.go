// Package jsonl is the generic benchmark for a user's own data: items from
// a JSONL or JSON file, a prompt template, and a scorer chosen in config.
package jsonl

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"text/template"
	"time"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/score"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// Name is the benchmark's registry key.
const Name = "jsonl"

// Scorers.
const (
	ScorerExact      = "exact"
	ScorerNormalized = "normalized_exact"
	ScorerF1         = "f1"
	ScorerNumeric    = "numeric"
	ScorerRegex      = "regex"
	ScorerChoice     = "choice"
	ScorerCommand    = "command"
	ScorerJudge      = "judge"
)

var scorers = []string{ScorerExact, ScorerNormalized, ScorerF1, ScorerNumeric, ScorerRegex, ScorerChoice, ScorerCommand, ScorerJudge}

// Config is the benchmark's env keys.
type Config struct {
	bench.Common
	// PromptTemplate is a Go text/template over the item's fields
	// ({{.question}}); default: the item's question, else its prompt.
	PromptTemplate string `json:"prompt_template"`
	// SystemPrompt opens the system message; the skill follows it.
	SystemPrompt string `json:"system_prompt"`
	// AnswerField holds the gold: a string, a number or a list of golds.
	AnswerField string `json:"answer_field"`
	// Extract is how the answer is read from the reply: answer_tag
	// (default: the last <answer>…</answer>, else the last line),
	// last_line or whole.
	Extract string `json:"extract"`
	// Scorer is one of exact, normalized_exact, f1, numeric, regex,
	// choice, command, judge. Default normalized_exact.
	Scorer string `json:"scorer"`
	// ToleranceAbs and ToleranceRel bound |answer − gold| for numeric:
	// it passes when within abs + rel·|gold|.
	ToleranceAbs float64 `json:"tolerance_abs"`
	ToleranceRel float64 `json:"tolerance_rel"`
	// ScorerPattern is the regex scorer's pattern (default: the gold is
	// the pattern).
	ScorerPattern string `json:"scorer_pattern"`
	// ChoicesField holds the choice scorer's options: a list of strings
	// (labelled A, B, …) or of {label, text}. Default "choices".
	ChoicesField string `json:"choices_field"`
	// ScorerCommand is the command scorer's argv: the answer on stdin,
	// SKILLFLEET_GOLD and SKILLFLEET_ITEM (JSON) in its environment; it
	// prints a score in [0, 1], or "hard soft". A failing command or any
	// other output is an error naming the item.
	ScorerCommand []string `json:"scorer_command"`
	// ScorerTimeout bounds one command (default 30s).
	ScorerTimeout string `json:"scorer_timeout"`
	// JudgeRubric is the LLM judge's instructions; JudgeModel its model
	// (default: the target model, on the target's endpoint).
	JudgeRubric string `json:"judge_rubric"`
	JudgeModel  string `json:"judge_model"`
	// HardThreshold: for f1, command and judge, hard = 1 when the score is
	// at least this (default 1). The other scorers are pass/fail.
	HardThreshold *float64 `json:"hard_threshold"`
}

// Env is the generic environment.
type Env struct {
	cfg     Config
	tmpl    *template.Template
	pattern *regexp.Regexp
	timeout time.Duration
}

var _ bench.Env = (*Env)(nil)

// New validates the config and returns the environment.
func New(cfg Config) (*Env, error) {
	cfg.AnswerField = cmp.Or(cfg.AnswerField, "answer")
	cfg.Extract = cmp.Or(cfg.Extract, "answer_tag")
	cfg.Scorer = cmp.Or(cfg.Scorer, ScorerNormalized)
	cfg.ChoicesField = cmp.Or(cfg.ChoicesField, "choices")
	e := &Env{cfg: cfg, timeout: 30 * time.Second}
	if !slices.Contains(scorers, cfg.Scorer) {
		return nil, fmt.Errorf("env.scorer: %q is not one of %s", cfg.Scorer, strings.Join(scorers, ", "))
	}
	if !slices.Contains([]string{"answer_tag", "last_line", "whole"}, cfg.Extract) {
		return nil, fmt.Errorf("env.extract: %q is not one of answer_tag, last_line, whole", cfg.Extract)
	}
	if cfg.PromptTemplate != "" {
		t, err := template.New("prompt").Option("missingkey=error").Parse(cfg.PromptTemplate)
		if err != nil {
			return nil, fmt.Errorf("env.prompt_template: %w", err)
		}
		e.tmpl = t
	}
	if cfg.ScorerPattern != "" {
		re, err := regexp.Compile(cfg.ScorerPattern)
		if err != nil {
			return nil, fmt.Errorf("env.scorer_pattern: %w", err)
		}
		e.pattern = re
	}
	if cfg.Scorer == ScorerCommand && len(cfg.ScorerCommand) == 0 {
		return nil, errors.New("env.scorer_command: required by scorer command (an argv list)")
	}
	if cfg.Scorer == ScorerJudge && strings.TrimSpace(cfg.JudgeRubric) == "" {
		return nil, errors.New("env.judge_rubric: required by scorer judge")
	}
	if cfg.ToleranceAbs < 0 || cfg.ToleranceRel < 0 {
		return nil, errors.New("env.tolerance_abs / env.tolerance_rel: must not be negative")
	}
	if cfg.ScorerTimeout != "" {
		d, err := time.ParseDuration(cfg.ScorerTimeout)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("env.scorer_timeout: %q is not a positive duration", cfg.ScorerTimeout)
		}
		e.timeout = d
	}
	return e, nil
}

// Name returns "jsonl".
func (e *Env) Name() string { return Name }

func (e *Env) prompt(item map[string]any, id string) (string, error) {
	if e.tmpl == nil {
		for _, k := range []string{"question", "prompt", "input"} {
			if s, ok := item[k].(string); ok && strings.TrimSpace(s) != "" {
				return s, nil
			}
		}
		return "", fmt.Errorf("jsonl item %s: no question, prompt or input field (or set env.prompt_template)", id)
	}
	var b bytes.Buffer
	if err := e.tmpl.Execute(&b, item); err != nil {
		return "", fmt.Errorf("jsonl item %s: env.prompt_template: %w", id, err)
	}
	return b.String(), nil
}

// golds reads the gold answers.
func (e *Env) golds(item map[string]any, id string) ([]string, error) {
	v, ok := item[e.cfg.AnswerField]
	if !ok || v == nil {
		return nil, fmt.Errorf("jsonl item %s: no %q field (env.answer_field)", id, e.cfg.AnswerField)
	}
	switch g := v.(type) {
	case []any:
		var out []string
		for _, x := range g {
			out = append(out, str(x))
		}
		if len(out) == 0 {
			return nil, fmt.Errorf("jsonl item %s: %q is an empty list", id, e.cfg.AnswerField)
		}
		return out, nil
	default:
		return []string{str(g)}, nil
	}
}

func str(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case json.Number:
		return x.String()
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64)
	default:
		b, _ := json.Marshal(x)
		return string(b)
	}
}

func (e *Env) extract(reply string) string {
	switch e.cfg.Extract {
	case "whole":
		return strings.TrimSpace(reply)
	case "last_line":
		lines := strings.Split(strings.TrimSpace(reply), "\n")
		return strings.TrimSpace(lines[len(lines)-1])
	default:
		return score.ExtractAnswer(reply)
	}
}

const defaultSystem = `Answer the task below. Give your final answer inside <answer></answer> at the end of your reply.`

// Episode runs one item.
func (e *Env) Episode(ctx context.Context, m llm.Model, req bench.EpisodeRequest) (*bench.Episode, error) {
	item := map[string]any{}
	dec := json.NewDecoder(bytes.NewReader(req.Item.Raw))
	dec.UseNumber()
	if err := dec.Decode(&item); err != nil {
		return nil, fmt.Errorf("jsonl item %s: %w", req.Item.ID, err)
	}
	user, err := e.prompt(item, req.Item.ID)
	if err != nil {
		return nil, err
	}
	golds, err := e.golds(item, req.Item.ID)
	if err != nil {
		return nil, err
	}
	g, err := e.check(item, golds)
	if err != nil {
		return nil, fmt.Errorf("jsonl item %s: %w", req.Item.ID, err)
	}
	sys := cmp.Or(e.cfg.SystemPrompt, defaultSystem) + "\n\n" + bench.SkillSection(req.Skill)
	msgs := []llm.Message{{Role: llm.RoleSystem, Content: sys}, {Role: llm.RoleUser, Content: user}}
	var rec bench.Recorder
	resp, err := rec.Chat(ctx, m, bench.TargetRequest(req, msgs))
	if err != nil {
		return rec.Failed(Name, req.Item.ID, err)
	}
	msgs = append(msgs, llm.Message{Role: llm.RoleAssistant, Content: resp.Content})
	answer := e.extract(resp.Content)
	hard, soft, reason, err := e.score(ctx, m, &rec, req, item, user, answer, g)
	if err != nil {
		return rec.Failed(Name, req.Item.ID, err)
	}
	gold, _ := json.Marshal(golds)
	msgs = append(msgs, bench.EvalMessage(hard, soft, answer, string(gold)))
	tt, _ := item["task_type"].(string)
	ep := &bench.Episode{Hard: hard, Soft: soft, Answer: answer, FailReason: reason,
		TaskType: cmp.Or(tt, req.Item.TaskType), TaskDescription: user, Messages: msgs, NTurns: 1}
	rec.Fill(ep)
	return ep, nil
}

func (e *Env) threshold() float64 {
	if e.cfg.HardThreshold != nil {
		return *e.cfg.HardThreshold
	}
	return 1
}

func passFail(ok bool) (float64, float64) {
	if ok {
		return 1, 1
	}
	return 0, 0
}

// gold is an item's golds, read for the configured scorer.
type gold struct {
	texts   []string
	nums    []float64        // numeric
	res     []*regexp.Regexp // regex (the golds as patterns, or scorer_pattern)
	choices []score.Choice   // choice
	labels  []string         // choice: the golds' labels
}

// check reads the item's golds for the scorer before the model is called:
// a numeric gold without a number, a gold that is not a valid pattern, or
// choices the golds name none of are errors in the item, not 0 scores.
func (e *Env) check(item map[string]any, golds []string) (*gold, error) {
	g := &gold{texts: golds}
	field := "field " + strconv.Quote(e.cfg.AnswerField)
	switch e.cfg.Scorer {
	case ScorerNumeric:
		for _, t := range golds {
			if v, ok := ParseNumber(t); ok {
				g.nums = append(g.nums, v)
			}
		}
		if len(g.nums) == 0 {
			return nil, fmt.Errorf("%s: no number in %q (scorer numeric)", field, golds)
		}
	case ScorerRegex:
		if e.pattern != nil {
			g.res = []*regexp.Regexp{e.pattern}
			break
		}
		for _, t := range golds {
			re, err := regexp.Compile(t)
			if err != nil {
				return nil, fmt.Errorf("%s: %q is not a valid pattern (scorer regex): %w", field, t, err)
			}
			g.res = append(g.res, re)
		}
	case ScorerChoice:
		choices, err := choicesOf(item[e.cfg.ChoicesField])
		if err != nil {
			return nil, fmt.Errorf("field %q (env.choices_field): %w", e.cfg.ChoicesField, err)
		}
		g.choices = choices
		for _, t := range golds {
			if l, ok := score.ChoiceLabel(t, choices); ok {
				g.labels = append(g.labels, l)
			}
		}
		if len(g.labels) == 0 {
			return nil, fmt.Errorf("%s: %q names none of the choices (scorer choice)", field, golds)
		}
	}
	return g, nil
}

// score applies the configured scorer. An error is an infrastructure
// failure (the judge's model call failed, the scorer command is broken); an
// answer the scorer cannot read scores 0 with a reason.
func (e *Env) score(ctx context.Context, m llm.Model, rec *bench.Recorder, req bench.EpisodeRequest, item map[string]any, question, answer string, g *gold) (hard, soft float64, reason string, err error) {
	golds := g.texts
	wrong := func() string { return fmt.Sprintf("%s: predicted '%s' but expected %q", e.cfg.Scorer, answer, golds) }
	switch e.cfg.Scorer {
	case ScorerExact:
		for _, t := range golds {
			if strings.TrimSpace(t) == strings.TrimSpace(answer) {
				hard, soft = 1, 1
			}
		}
	case ScorerNormalized:
		hard, soft = passFail(score.ExactMatch(answer, golds) == 1)
	case ScorerF1:
		soft = score.F1(answer, golds)
		if soft >= e.threshold() {
			hard = 1
		}
	case ScorerNumeric:
		a, ok := ParseNumber(answer)
		if !ok {
			return 0, 0, fmt.Sprintf("numeric: no number in the answer '%s'", answer), nil
		}
		for _, gv := range g.nums {
			if math.Abs(a-gv) <= e.cfg.ToleranceAbs+e.cfg.ToleranceRel*math.Abs(gv) {
				hard, soft = 1, 1
			}
		}
	case ScorerRegex:
		for _, re := range g.res {
			if re.MatchString(strings.TrimSpace(answer)) {
				hard, soft = 1, 1
			}
		}
	case ScorerChoice:
		label, ok := score.ChoiceLabel(answer, g.choices)
		if !ok {
			return 0, 0, fmt.Sprintf("choice: '%s' names no choice", answer), nil
		}
		hard, soft = passFail(slices.Contains(g.labels, label))
	case ScorerCommand:
		h, s, cerr := e.runCommand(ctx, item, answer, golds)
		if cerr != nil {
			return 0, 0, "", cerr
		}
		hard, soft = h, s
	case ScorerJudge:
		s, r, jerr := e.judge(ctx, m, rec, req, question, answer, golds)
		if jerr != nil {
			return 0, 0, "", jerr
		}
		if r != "" {
			return 0, 0, r, nil
		}
		soft = s
		if soft >= e.threshold() {
			hard = 1
		}
	}
	if hard < 1 {
		reason = wrong()
	}
	return hard, soft, reason, nil
}

var numberRe = regexp.MustCompile(`[-+]?\d[\d,]*\.?\d*(?:[eE][-+]?\d+)?|[-+]?\.\d+`)

// ParseNumber reads the last number in s ("$1,250.5" → 1250.5, "about
// -3e2 m" → -300).
func ParseNumber(s string) (float64, bool) {
	all := numberRe.FindAllString(s, -1)
	if len(all) == 0 {
		return 0, false
	}
	v, err := strconv.ParseFloat(strings.ReplaceAll(all[len(all)-1], ",", ""), 64)
	return v, err == nil
}

func choicesOf(v any) ([]score.Choice, error) {
	list, ok := v.([]any)
	if !ok || len(list) == 0 {
		return nil, errors.New("want a non-empty list of choices")
	}
	out := make([]score.Choice, len(list))
	for i, c := range list {
		switch x := c.(type) {
		case string:
			out[i] = score.Choice{Label: string(rune('A' + i)), Text: x}
		case map[string]any:
			out[i] = score.Choice{Label: str(x["label"]), Text: str(x["text"])}
		default:
			return nil, fmt.Errorf("choice %d is neither a string nor {label, text}", i)
		}
	}
	return out, nil
}

// runCommand runs the scoring command. A command that fails (non-zero
// exit, timeout) or prints anything but one or two scores in [0, 1] is an
// error: the scorer is broken, not the answer (a wrong or unreadable
// answer is the command's to score 0).
func (e *Env) runCommand(ctx context.Context, item map[string]any, answer string, golds []string) (hard, soft float64, err error) {
	ctx, cancel := context.WithTimeout(ctx, e.timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.cfg.ScorerCommand[0], e.cfg.ScorerCommand[1:]...)
	// The command and anything it starts die together at the timeout.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	cmd.Stdin = strings.NewReader(answer)
	gold, _ := json.Marshal(golds)
	itemJSON, _ := json.Marshal(item)
	cmd.Env = append(os.Environ(), "SKILLFLEET_GOLD="+string(gold), "SKILLFLEET_ITEM="+string(itemJSON))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if ctx.Err() == context.DeadlineExceeded {
		return 0, 0, fmt.Errorf("env.scorer_command timed out after %s", e.timeout)
	}
	if err != nil {
		return 0, 0, fmt.Errorf("env.scorer_command failed: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	printed := strings.TrimSpace(string(out))
	f := strings.Fields(printed)
	if len(f) != 1 && len(f) != 2 {
		return 0, 0, fmt.Errorf("env.scorer_command printed %q, want a score in [0, 1] or \"hard soft\"", printed)
	}
	vals := make([]float64, len(f))
	for i, s := range f {
		v, err := strconv.ParseFloat(s, 64)
		if err != nil || v < 0 || v > 1 || math.IsNaN(v) {
			return 0, 0, fmt.Errorf("env.scorer_command printed %q, want numbers in [0, 1]", printed)
		}
		vals[i] = v
	}
	if len(vals) == 2 {
		return vals[0], vals[1], nil
	}
	if vals[0] >= e.threshold() {
		return 1, vals[0], nil
	}
	return 0, vals[0], nil
}

const judgeSystem = `You grade an answer against a reference. Follow the rubric. Reply with JSON only: {"score": <a number from 0 to 1>, "reason": "<one sentence>"}.`

var judgeNumber = regexp.MustCompile(`^\s*([01](?:\.\d+)?|\.\d+)\s*$`)

// judge asks the judge model for a score. reason is set (score 0) when the
// reply cannot be read; err when the call itself failed.
func (e *Env) judge(ctx context.Context, m llm.Model, rec *bench.Recorder, req bench.EpisodeRequest, question, answer string, golds []string) (float64, string, error) {
	user := fmt.Sprintf("Rubric:\n%s\n\nTask:\n%s\n\nReference answer(s): %q\n\nAnswer to grade:\n%s", e.cfg.JudgeRubric, question, golds, answer)
	zero := 0.0
	resp, err := rec.Chat(ctx, m, &llm.Request{Model: cmp.Or(e.cfg.JudgeModel, req.Model), Temperature: &zero, Timeout: req.Timeout,
		Messages: []llm.Message{{Role: llm.RoleSystem, Content: judgeSystem}, {Role: llm.RoleUser, Content: user}}, Stage: "judge"})
	if err != nil {
		return 0, "", fmt.Errorf("judge: %w", err)
	}
	text := strings.TrimSpace(resp.Content)
	var v struct {
		Score *float64 `json:"score"`
	}
	if i, j := strings.Index(text, "{"), strings.LastIndex(text, "}"); i >= 0 && j > i && json.Unmarshal([]byte(text[i:j+1]), &v) == nil && v.Score != nil {
		if *v.Score >= 0 && *v.Score <= 1 {
			return *v.Score, "", nil
		}
	}
	if m := judgeNumber.FindStringSubmatch(text); m != nil {
		if s, err := strconv.ParseFloat(m[1], 64); err == nil && s >= 0 && s <= 1 {
			return s, "", nil
		}
	}
	return 0, "judge reply unparseable", nil
}
