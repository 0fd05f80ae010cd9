package nightly

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// EnvName is the replay benchmark's registry name: a night's replays are
// ordinary rollout tasks of this benchmark, whose items are [Task]s.
const EnvName = "sleep"

// MemoryDelimiter separates the skill from the memory file in the one
// document a replay carries (a rollout carries one skill text by hash).
const MemoryDelimiter = "\n<!-- SKILLFLEET-SLEEP:MEMORY -->\n"

// ComposeDocs joins a skill and a memory file into a replay's document.
func ComposeDocs(skill, memory string) string { return skill + MemoryDelimiter + memory }

// SplitDocs undoes [ComposeDocs]; a text without the delimiter is all skill.
func SplitDocs(doc string) (skill, memory string) {
	s, m, _ := strings.Cut(doc, MemoryDelimiter)
	return s, m
}

// EnvConfig is the replay benchmark's config.
type EnvConfig struct {
	bench.Common
	// JudgeModel is the rubric judge's model name (default: the target's).
	JudgeModel string `json:"judge_model"`
	// AgentTarget says the target is an agent CLI: the skill, a single
	// SKILL.md too, goes between the SkillOpen and SkillClose lines, where
	// the exec backend takes it from to install it as a skill directory,
	// and the note of the skill files the agent opened is left out of
	// what the judge reads.
	AgentTarget bool `json:"agent_target,omitempty"`
}

// Env replays mined tasks: one attempt by the target model under the
// night's skill and memory, judged by the task's judge.
type Env struct{ cfg EnvConfig }

var _ bench.Env = (*Env)(nil)

// NewEnv returns the replay benchmark.
func NewEnv(cfg EnvConfig) *Env { return &Env{cfg: cfg} }

// Name returns [EnvName].
func (e *Env) Name() string { return EnvName }

// AttemptMessages is the prompt of one attempt: the task's own output
// contract (its System template with {skill_section}) or a generic one,
// the skill and the memory, then the request.
//
// The live skill and memory are the user's own files and may hold a
// secret; the prompt carries them redacted. A skill package (a bundle)
// is given as a package runs in training: its bundle, each file redacted,
// between a "<skill>" line and a "</skill>" line, where an agent CLI
// backend finds it and installs it as a skill directory and the
// read_skill_file tool finds it to offer its files.
func AttemptMessages(t Task, skill, memory string) []llm.Message {
	return attemptMessages(t, skill, memory, false)
}

// attemptMessages is [AttemptMessages]; framed puts a single SKILL.md
// between the SkillOpen and SkillClose lines too.
func attemptMessages(t Task, skill, memory string, framed bool) []llm.Message {
	section := skillSection(skill, framed)
	if strings.TrimSpace(memory) != "" {
		section += "\n## Project memory\n\n" + strings.TrimSpace(Redact(memory)) + "\n"
	}
	sys := PromptMarker + " attempt. You are the user's coding agent, answering one of their recurring requests.\n\n" + section
	if strings.TrimSpace(t.System) != "" {
		sys = PromptMarker + " attempt. " + strings.ReplaceAll(t.System, "{skill_section}", section)
	}
	// The marker opens the user turn too: a CLI agent used as the target
	// (the exec backend) records the call as a session of its own, which a
	// later harvest must recognise as headless.
	user := PromptMarker + " Request: " + Redact(t.Intent)
	if strings.TrimSpace(t.Context) != "" {
		user += "\n\nContext:\n" + Redact(t.Context)
	}
	user += "\n\nReturn only the answer."
	return []llm.Message{{Role: llm.RoleSystem, Content: sys}, {Role: llm.RoleUser, Content: user}}
}

// SkillOpen and SkillClose frame a skill package's bundle in an attempt's
// system message.
const (
	SkillOpen  = "<skill>"
	SkillClose = "</skill>"
)

// skillSection is the attempt's skill section: the redacted SKILL.md, or
// a package's redacted bundle framed by SkillOpen and SkillClose lines.
func skillSection(skill string, framed bool) string {
	if skillpkg.IsBundle(skill) {
		if p, err := skillpkg.Decode(skill); err == nil {
			if q, err := p.MapText(func(_, text string) string { return Redact(text) }); err == nil {
				return bench.SkillSection(SkillOpen + "\n" + skillpkg.Encode(q) + "\n" + SkillClose)
			}
		}
	}
	if framed {
		return bench.SkillSection(SkillOpen + "\n" + Redact(skill) + "\n" + SkillClose)
	}
	return bench.SkillSection(Redact(skill))
}

// Episode runs one attempt and judges it. A malformed task or an unusable
// judge is an error (an infrastructure failure), never a score.
func (e *Env) Episode(ctx context.Context, m llm.Model, req bench.EpisodeRequest) (*bench.Episode, error) {
	var t Task
	if err := json.Unmarshal(req.Item.Raw, &t); err != nil {
		return nil, fmt.Errorf("sleep item %s: %w", req.Item.ID, err)
	}
	if err := t.Validate(); err != nil {
		return nil, fmt.Errorf("sleep item %s: %w", req.Item.ID, err)
	}
	skill, memory := SplitDocs(req.Skill)
	msgs := attemptMessages(t, skill, memory, e.cfg.AgentTarget)
	var (
		rec   bench.Recorder
		reply string
		// calls are the judged tools an API attempt called (nil: it was
		// offered none); turns its tool-call exchange.
		calls []string
		turns []llm.Message
		err   error
	)
	if tools, by := offeredTools(t); len(tools) > 0 && !e.cfg.AgentTarget {
		reply, calls, turns, err = attemptWithTools(ctx, &rec, m, bench.TargetRequest(req, msgs), tools, by)
	} else {
		var resp *llm.Response
		if resp, err = rec.Chat(ctx, m, bench.TargetRequest(req, msgs)); err == nil {
			reply = resp.Content
		}
	}
	if err != nil {
		return rec.Failed(EnvName, t.ID, err)
	}
	rj := &RubricJudge{Model: m, Name: e.cfg.JudgeModel, Usage: func(u llm.Usage) { rec.Usage.Add(u); rec.Calls++ }}
	if rj.Name == "" {
		rj.Name = req.Model
	}
	var v Verdict
	if e.cfg.AgentTarget {
		// An agent's reply leads with the backend's notes (the skill
		// files it opened, the tool calls its stream showed, its trace
		// summary; backends/exec): the judge reads the answer alone, and
		// a tool_called check the recorded calls. A reply without the
		// tools note recorded no call: whatever the agent wrote is not
		// taken for one.
		rest, calls, _ := prompts.CutToolsNote(skillpkg.CutNote(reply))
		judged, _ := prompts.CutTrace(rest)
		v, err = ScoreAgent(ctx, t, judged, calls, rj)
	} else if calls != nil {
		// The judged tools were offered: the recorded calls count, not
		// what the reply says.
		v, err = ScoreAgent(ctx, t, reply, calls, rj)
	} else {
		v, err = Score(ctx, t, reply, rj)
	}
	if err != nil {
		return rec.Failed(EnvName, t.ID, err)
	}
	answer := reply
	if calls != nil {
		answer = toolsLead(calls) + reply
	}
	ep := &bench.Episode{
		Hard: v.Hard, Soft: v.Soft, Answer: Redact(clip(answer, 4000)), FailReason: strings.Join(v.Failed, "; "),
		TaskType: EnvName, TaskDescription: t.Intent, NTurns: 1 + len(turns)/2,
		Messages: append(append(msgs, turns...), llm.Message{Role: llm.RoleAssistant, Content: reply},
			bench.EvalMessage(v.Hard, v.Soft, clip(reply, 200), judgeSummary(t.Judge))),
	}
	rec.Fill(ep)
	return ep, nil
}

// judgeSummary says in a line what a judge wants.
func judgeSummary(j Judge) string {
	var parts []string
	if j.Reference != "" {
		parts = append(parts, "reference "+j.Reference)
	}
	if j.Rubric != "" && j.Kind == JudgeRubric {
		parts = append(parts, "rubric: "+j.Rubric)
	}
	for _, c := range j.Checks {
		parts = append(parts, c.Op+" "+c.Arg)
	}
	return strings.Join(parts, "; ")
}
