package sleep

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/skillfleet/skillfleet/pkg/jsonx"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// Failure is one failed replay shown to the reflector.
type Failure struct {
	TaskID string `json:"task_id"`
	Intent string `json:"intent"`
	Wanted string `json:"wanted"`
	Got    string `json:"got"`
	Why    string `json:"why"`
}

// ReflectInput is the reflector's payload.
type ReflectInput struct {
	Kind string `json:"kind"`
	// Document is "skill" or "memory"; Current its learned lines.
	Document    string    `json:"document"`
	Current     []string  `json:"current_lines"`
	Failures    []Failure `json:"failures"`
	Budget      int       `json:"budget"`
	Preferences string    `json:"preferences,omitempty"`
}

// ReflectReply is the reflector's reply schema.
type ReflectReply struct {
	Edits []Edit `json:"edits"`
}

// Reflect asks model for at most in.Budget edits to the learned block that
// would fix the failures (≤ 8 shown). An unusable reply is retried once
// with a stricter instruction; a second unusable reply is an error.
func Reflect(ctx context.Context, m llm.Model, name string, in ReflectInput) ([]Edit, llm.Usage, int, error) {
	in.Kind = KindReflect
	if len(in.Failures) > 8 {
		in.Failures = in.Failures[:8]
	}
	for i := range in.Failures {
		f := &in.Failures[i]
		f.Intent, f.Wanted, f.Got, f.Why = Redact(clip(f.Intent, 400)), Redact(clip(f.Wanted, 400)), Redact(clip(f.Got, 600)), Redact(clip(f.Why, 300))
	}
	in.Preferences = Redact(in.Preferences)
	var usage llm.Usage
	calls := 0
	instr := fmt.Sprintf("The %s document's learned lines are below, with replies that failed the user's recurring tasks. "+
		"Propose at most %d edits to the learned lines, each a short imperative habit that would have made the failed replies pass. "+
		"Answer with one JSON object {\"edits\": [{\"op\": \"add|replace|delete\", \"content\", \"anchor\", \"rationale\"}]}.", in.Document, in.Budget)
	for attempt := range 2 {
		if attempt == 1 {
			instr += " Reply with the JSON object only, no prose."
		}
		msgs, err := payloadMessages("You improve an agent's skill document from its failures, with small, general edits.", instr, in)
		if err != nil {
			return nil, usage, calls, err
		}
		zero := 0.0
		resp, err := m.Chat(ctx, &llm.Request{Model: name, Messages: msgs, Temperature: &zero, Stage: "sleep_reflect"})
		if resp != nil {
			usage.Add(resp.Usage)
			usage.Add(resp.FailedUsage)
			calls += max(resp.Attempts, 1)
		}
		if err != nil {
			return nil, usage, calls, err
		}
		raw, _, err := jsonx.Extract(resp.Content)
		var rep ReflectReply
		if err == nil {
			err = json.Unmarshal(raw, &rep)
		}
		if err != nil {
			continue
		}
		if len(rep.Edits) > in.Budget {
			rep.Edits = rep.Edits[:in.Budget]
		}
		return rep.Edits, usage, calls, nil
	}
	return nil, usage, calls, &llm.Error{Kind: llm.KindInvalidReply, Msg: "reflect: two replies without a usable {\"edits\": [...]} object"}
}
