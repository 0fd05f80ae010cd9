package nightly

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/skillfleet/skillfleet/internal/jsonx"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// Verdict is a judged reply.
type Verdict struct {
	Hard   float64 `json:"hard"`
	Soft   float64 `json:"soft"`
	Reason string  `json:"reason,omitempty"`
	// Failed names the checks that did not pass ("op:arg").
	Failed []string `json:"failed,omitempty"`
}

// RubricJudge asks a model to grade a reply against a rubric.
type RubricJudge struct {
	Model llm.Model
	// Name is the model name sent with each request.
	Name string
	// Usage, if set, sees the usage of every judge call.
	Usage func(llm.Usage)
}

// Score judges reply for task t. An unknown check op, an unusable check
// argument or a rubric judge that answers out of schema is an error, never
// a score. A tool_called check looks for a "TOOL_CALL: <name>" line in
// the reply (an API target has no tool loop to record a call).
func Score(ctx context.Context, t Task, reply string, rj *RubricJudge) (Verdict, error) {
	return score(ctx, t, reply, nil, rj)
}

// ScoreAgent is [Score] for a reply of an agent CLI whose tool calls were
// recorded from its event stream (calls, as a [prompts.ToolsNote] names
// them; none when it called none): a tool_called check passes only when
// one of them is a call of its tool ([prompts.ToolCallMatches]); what the
// reply itself says about tools does not count.
func ScoreAgent(ctx context.Context, t Task, reply string, calls []string, rj *RubricJudge) (Verdict, error) {
	if calls == nil {
		calls = []string{}
	}
	return score(ctx, t, reply, calls, rj)
}

// score is Score, with the recorded tool calls of an agent (nil: none
// recorded, read the reply's markers).
func score(ctx context.Context, t Task, reply string, calls []string, rj *RubricJudge) (Verdict, error) {
	j := t.Judge
	if err := j.Validate(); err != nil {
		return Verdict{}, fmt.Errorf("task %s: %w", t.ID, err)
	}
	pass, failed := 0, []string(nil)
	for _, c := range j.Checks {
		ok, err := runCheck(c, reply, calls)
		if err != nil {
			return Verdict{}, fmt.Errorf("task %s: %w", t.ID, err)
		}
		if ok {
			pass++
		} else {
			failed = append(failed, c.Op+":"+c.Arg)
		}
	}
	checksOK := pass == len(j.Checks)
	frac := 1.0
	if len(j.Checks) > 0 {
		frac = float64(pass) / float64(len(j.Checks))
	}
	var v Verdict
	switch j.Kind {
	case JudgeRule:
		v = Verdict{Hard: b2f(checksOK), Soft: frac}
	case JudgeExact:
		h, s := exactScore(j.Reference, reply)
		if !h {
			failed = append(failed, "exact:"+j.Reference)
		}
		v = Verdict{Hard: b2f(h && checksOK), Soft: mean(s, frac, len(j.Checks) > 0)}
	case JudgeRubric:
		if rj == nil || rj.Model == nil {
			return Verdict{}, fmt.Errorf("task %s: rubric judge: no judge model", t.ID)
		}
		score, reason, err := rj.grade(ctx, t, reply)
		if err != nil {
			return Verdict{}, fmt.Errorf("task %s: rubric judge: %w", t.ID, err)
		}
		v = Verdict{Hard: b2f(score >= 0.8 && checksOK), Soft: mean(score, frac, len(j.Checks) > 0), Reason: Redact(reason)}
		if score < 0.8 {
			failed = append(failed, "rubric")
		}
	}
	v.Failed = failed
	return v, nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func mean(a, b float64, withB bool) float64 {
	if !withB {
		return a
	}
	return (a + b) / 2
}

var nonWord = regexp.MustCompile(`[^\p{L}\p{N}]+`)

// normalize lower-cases s, turns every run of non-word characters into a
// space and trims.
func normalize(s string) string {
	return strings.TrimSpace(nonWord.ReplaceAllString(strings.ToLower(s), " "))
}

// exactScore: hard when the normalised reference is the normalised reply
// or a whole-word part of it; soft is at least the share of reference
// tokens longer than two characters found in the reply.
func exactScore(ref, reply string) (bool, float64) {
	r, p := normalize(ref), normalize(reply)
	hard := r != "" && (r == p || strings.Contains(" "+p+" ", " "+r+" "))
	if hard {
		return true, 1
	}
	words := map[string]bool{}
	for _, w := range strings.Fields(p) {
		words[w] = true
	}
	n, got := 0, 0
	for _, w := range strings.Fields(r) {
		if len(w) <= 2 {
			continue
		}
		n++
		if words[w] {
			got++
		}
	}
	if n == 0 {
		return false, 0
	}
	return false, float64(got) / float64(n)
}

var refusalOpeners = []string{"i can't", "i cannot", "i'm sorry", "i am sorry", "i am unable", "i'm unable", "as an ai", "i won't", "i will not"}

var toolCallRe = regexp.MustCompile(`(?m)^\s*TOOL_CALL:\s*([A-Za-z0-9_.\-]+)`)

// runCheck evaluates one check on a reply; calls are an agent's recorded
// tool calls (nil: none recorded).
func runCheck(c Check, reply string, calls []string) (bool, error) {
	if err := c.validate(); err != nil {
		return false, err
	}
	low := strings.ToLower(reply)
	switch c.Op {
	case OpContains:
		return strings.Contains(low, strings.ToLower(c.Arg)), nil
	case OpNotContains:
		return !strings.Contains(low, strings.ToLower(c.Arg)), nil
	case OpRegex:
		re, _ := regexp.Compile(c.Arg)
		return re.MatchString(reply), nil
	case OpMaxChars:
		n, _ := strconv.Atoi(strings.TrimSpace(c.Arg))
		return len([]rune(reply)) <= n, nil
	case OpMinChars:
		n, _ := strconv.Atoi(strings.TrimSpace(c.Arg))
		return len([]rune(strings.TrimSpace(reply))) >= n, nil
	case OpNoRefusal:
		t := strings.TrimSpace(low)
		if len(t) > 400 {
			return true, nil
		}
		for _, o := range refusalOpeners {
			if strings.HasPrefix(t, o) {
				return false, nil
			}
		}
		return true, nil
	case OpSectionPresent:
		_, ok := section(reply, c.Arg)
		return ok, nil
	case OpSectionContains:
		h, want, _ := strings.Cut(c.Arg, "|")
		body, ok := section(reply, h)
		return ok && strings.Contains(strings.ToLower(body), strings.ToLower(strings.TrimSpace(want))), nil
	case OpToolCalled:
		if calls != nil {
			return slices.ContainsFunc(calls, func(call string) bool { return prompts.ToolCallMatches(call, c.Arg) }), nil
		}
		for _, m := range toolCallRe.FindAllStringSubmatch(reply, -1) {
			if strings.EqualFold(m[1], strings.TrimSpace(c.Arg)) {
				return true, nil
			}
		}
		return false, nil
	}
	return false, fmt.Errorf("unknown op %q", c.Op)
}

// section returns the text under a Markdown heading whose text is heading
// (case-insensitive), up to the next heading of the same or a higher level.
func section(doc, heading string) (string, bool) {
	want := strings.ToLower(strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(heading), "#")))
	lines := strings.Split(doc, "\n")
	for i, l := range lines {
		lvl, text := headingOf(l)
		if lvl == 0 || strings.ToLower(text) != want {
			continue
		}
		var body []string
		for _, m := range lines[i+1:] {
			if l2, _ := headingOf(m); l2 > 0 && l2 <= lvl {
				break
			}
			body = append(body, m)
		}
		return strings.Join(body, "\n"), true
	}
	return "", false
}

func headingOf(l string) (int, string) {
	t := strings.TrimSpace(l)
	n := 0
	for n < len(t) && t[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || (len(t) > n && t[n] != ' ') {
		return 0, ""
	}
	return n, strings.TrimSpace(t[n:])
}

// JudgeReply is the rubric judge's reply schema.
type JudgeReply struct {
	Score  *float64 `json:"score"`
	Reason string   `json:"reason"`
}

// JudgeInput is the rubric judge's payload.
type JudgeInput struct {
	Kind   string `json:"kind"`
	Intent string `json:"intent"`
	Rubric string `json:"rubric"`
	Reply  string `json:"reply"`
}

// KindJudge, KindMine, KindReflect and KindAttempt name this package's
// prompts (the payload's "kind").
const (
	KindJudge   = "sleep_judge"
	KindMine    = "sleep_mine"
	KindReflect = "sleep_reflect"
	KindAttempt = "sleep_attempt"
)

func (rj *RubricJudge) grade(ctx context.Context, t Task, reply string) (float64, string, error) {
	in := JudgeInput{Kind: KindJudge, Intent: Redact(t.Intent), Rubric: Redact(t.Judge.Rubric), Reply: Redact(clip(reply, 6000))}
	msgs, err := payloadMessages("You grade an assistant's reply against a rubric, strictly and fairly.",
		"Grade the reply in the payload against its rubric. Answer with one JSON object: {\"score\": a number from 0 to 1, \"reason\": one sentence}.", in)
	if err != nil {
		return 0, "", err
	}
	zero := 0.0
	resp, err := rj.Model.Chat(ctx, &llm.Request{Model: rj.Name, Messages: msgs, Temperature: &zero, Stage: "sleep_judge"})
	if resp != nil && rj.Usage != nil {
		u := resp.Usage
		u.Add(resp.FailedUsage)
		rj.Usage(u)
	}
	if err != nil {
		return 0, "", err
	}
	raw, _, err := jsonx.Extract(resp.Content)
	if err != nil {
		return 0, "", &llm.Error{Kind: llm.KindInvalidReply, Msg: "judge reply has no JSON object", Err: err}
	}
	var jr JudgeReply
	if err := json.Unmarshal(raw, &jr); err != nil || jr.Score == nil {
		return 0, "", &llm.Error{Kind: llm.KindInvalidReply, Msg: "judge reply: want {\"score\": 0..1, \"reason\": …}", Err: errors.Join(err)}
	}
	if *jr.Score < 0 || *jr.Score > 1 || *jr.Score != *jr.Score {
		return 0, "", &llm.Error{Kind: llm.KindInvalidReply, Msg: fmt.Sprintf("judge score %v is outside [0, 1]", *jr.Score)}
	}
	return *jr.Score, jr.Reason, nil
}
