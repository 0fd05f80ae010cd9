package nightly

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/skillfleet/skillfleet/internal/jsonx"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// MineHeuristic makes one task per session from its first prompt (at
// least 8 characters), judged by an LLM rubric built from the prompt; the
// outcome comes from the user's feedback signals.
func MineHeuristic(ds []Digest) []Task {
	var out []Task
	for _, d := range ds {
		if len(d.UserPrompts) == 0 {
			continue
		}
		intent := strings.TrimSpace(clip(d.UserPrompts[0], 600))
		if len(intent) < 8 {
			continue
		}
		final := ""
		if n := len(d.AssistantFinals); n > 0 {
			final = clip(d.AssistantFinals[n-1], 400)
		}
		out = append(out, Task{
			ID: TaskID("task_", d.Project, intent), Project: d.Project, Intent: intent,
			Attempt: final, Outcome: outcomeOf(d), Origin: "real", Sessions: []string{d.SessionID},
			SkillHint: firstOr(d.SkillsUsed, ""),
			Judge:     Judge{Kind: JudgeRubric, Rubric: "The reply does what the user asked: " + intent},
		})
	}
	return out
}

func firstOr(l []string, def string) string {
	if len(l) > 0 {
		return l[0]
	}
	return def
}

func outcomeOf(d Digest) string {
	neg, pos := false, false
	for _, s := range d.FeedbackSignals {
		neg = neg || strings.HasPrefix(s, "neg:")
		pos = pos || strings.HasPrefix(s, "pos:")
	}
	switch {
	case neg && pos:
		return "mixed"
	case neg:
		return "fail"
	case pos:
		return "success"
	case d.NUserTurns == 1 && d.NAssistantTurns > 0:
		return "success"
	}
	return "unknown"
}

// MineInput is the LLM miner's payload for one session.
type MineInput struct {
	Kind     string   `json:"kind"`
	Project  string   `json:"project"`
	Prompts  []string `json:"prompts"`
	Final    string   `json:"final_reply"`
	Feedback []string `json:"feedback"`
	MaxTasks int      `json:"max_tasks"`
}

// MinedTask is one task in the miner's reply.
type MinedTask struct {
	Intent    string  `json:"intent"`
	Context   string  `json:"context"`
	Checks    []Check `json:"checks"`
	Rubric    string  `json:"rubric"`
	Reference string  `json:"reference"`
	Satisfied *bool   `json:"satisfied"`
}

// MineReply is the LLM miner's reply schema.
type MineReply struct {
	Tasks []MinedTask `json:"tasks"`
}

// MineResult is what the LLM miner made of the sessions.
type MineResult struct {
	Tasks []Task
	// Dropped explains each mined task that was not kept.
	Dropped []string
	// Fallback counts sessions mined by the heuristic because the model's
	// reply was unusable.
	Fallback int
	Usage    llm.Usage
	Calls    int
}

// MineLLM asks model for at most 3 recurring tasks per session, each with
// checks, a reference or a rubric. A session whose reply is unusable falls
// back to the heuristic miner; a task with an unknown check op is dropped
// and reported. Before each call, spend (if set) is given the usage so far
// and the next call's expected tokens, and asked whether the night's
// budget allows it.
func MineLLM(ctx context.Context, m llm.Model, name string, ds []Digest, spend func(used llm.Usage, next int64) error) (*MineResult, error) {
	res := &MineResult{}
	for _, d := range ds {
		in := MineInput{Kind: KindMine, Project: d.Project, MaxTasks: 3, Feedback: d.FeedbackSignals}
		for i, p := range d.UserPrompts {
			if i == 6 {
				break
			}
			in.Prompts = append(in.Prompts, Redact(clip(p, 240)))
		}
		if n := len(d.AssistantFinals); n > 0 {
			in.Final = Redact(clip(d.AssistantFinals[n-1], 400))
		}
		msgs, err := payloadMessages("You find the recurring, checkable tasks in a developer's session with their coding agent.",
			"From the session in the payload, list at most max_tasks tasks the user is likely to ask again. For each give the intent in the user's words, "+
				"and how to check a reply: checks (ops: "+strings.Join(CheckOps, ", ")+"), a reference answer when one is certain, or a rubric. "+
				"Answer with one JSON object {\"tasks\": [{\"intent\", \"context\", \"checks\": [{\"op\", \"arg\"}], \"reference\", \"rubric\"}]}.", in)
		if err != nil {
			return res, err
		}
		if spend != nil {
			if err := spend(res.Usage, EstimateCall(msgs, 600)); err != nil {
				return res, err
			}
		}
		zero := 0.0
		resp, err := m.Chat(ctx, &llm.Request{Model: name, Messages: msgs, Temperature: &zero, Stage: "sleep_mine"})
		if resp != nil {
			res.Usage.Add(resp.Usage)
			res.Usage.Add(resp.FailedUsage)
			res.Calls += max(resp.Attempts, 1)
		}
		if err != nil {
			if ctx.Err() != nil {
				return res, ctx.Err()
			}
			res.Fallback++
			res.Tasks = append(res.Tasks, MineHeuristic([]Digest{d})...)
			res.Dropped = append(res.Dropped, fmt.Sprintf("session %s: miner call failed (%v); heuristic task used", d.SessionID, err))
			continue
		}
		raw, _, err := jsonx.Extract(resp.Content)
		var rep MineReply
		if err == nil {
			err = json.Unmarshal(raw, &rep)
		}
		if err != nil {
			res.Fallback++
			res.Tasks = append(res.Tasks, MineHeuristic([]Digest{d})...)
			res.Dropped = append(res.Dropped, fmt.Sprintf("session %s: miner reply unusable (%v); heuristic task used", d.SessionID, err))
			continue
		}
		for i, mt := range rep.Tasks {
			if i == 3 {
				res.Dropped = append(res.Dropped, fmt.Sprintf("session %s: %d tasks beyond the 3 allowed dropped", d.SessionID, len(rep.Tasks)-3))
				break
			}
			t, err := taskFromMined(d, mt)
			if err != nil {
				res.Dropped = append(res.Dropped, fmt.Sprintf("session %s: task %d dropped: %v", d.SessionID, i, err))
				continue
			}
			res.Tasks = append(res.Tasks, t)
		}
	}
	return res, nil
}

// taskFromMined turns a mined task into a Task: a reference makes an exact
// judge, else checks a rule judge, else a rubric an LLM judge; the checks
// are kept in every case.
func taskFromMined(d Digest, mt MinedTask) (Task, error) {
	intent := strings.TrimSpace(Redact(mt.Intent))
	if len(intent) < 8 {
		return Task{}, fmt.Errorf("intent %q is shorter than 8 characters", intent)
	}
	j := Judge{Checks: mt.Checks, Reference: strings.TrimSpace(Redact(mt.Reference)), Rubric: strings.TrimSpace(Redact(mt.Rubric))}
	switch {
	case j.Reference != "":
		j.Kind = JudgeExact
	case len(j.Checks) > 0:
		j.Kind = JudgeRule
	case j.Rubric != "":
		j.Kind = JudgeRubric
	default:
		return Task{}, fmt.Errorf("task %q has no checks, reference or rubric", clip(intent, 60))
	}
	for i := range j.Checks {
		j.Checks[i].Arg = Redact(j.Checks[i].Arg)
	}
	if err := j.Validate(); err != nil {
		return Task{}, err
	}
	outcome := outcomeOf(d)
	if mt.Satisfied != nil {
		outcome = map[bool]string{true: "success", false: "fail"}[*mt.Satisfied]
	}
	final := ""
	if n := len(d.AssistantFinals); n > 0 {
		final = clip(d.AssistantFinals[n-1], 400)
	}
	return Task{
		ID: TaskID("llm_", d.Project, intent), Project: d.Project, Intent: intent, Context: clip(Redact(mt.Context), 1200),
		Attempt: final, Outcome: outcome, Judge: j, Origin: "real", Sessions: []string{d.SessionID}, SkillHint: firstOr(d.SkillsUsed, ""),
	}, nil
}
