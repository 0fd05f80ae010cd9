package nightly

import (
	"errors"

	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// PromptMarker opens every prompt this package builds for a model. A
// session whose only user turn carries it was started by a skillfleet
// night (a CLI agent used as the backend), and is never harvested.
const PromptMarker = "[skillfleet-sleep]"

// payloadMessages builds a prompt: a system message opening with
// [PromptMarker], and a user message with the instructions and the inputs
// as pkg/prompts' fenced JSON payload ([prompts.JSONFence]), whose "kind"
// names the prompt. Every string in
// the payload has already been redacted by the caller; the rendered text is
// checked once more, and a secret-shaped string is an error, never sent.
func payloadMessages(role, instructions string, payload any) ([]llm.Message, error) {
	fenced, err := prompts.JSONFence(payload)
	if err != nil {
		return nil, err
	}
	user := PromptMarker + " " + instructions + "\n\n" + fenced
	if ContainsSecret(user) {
		return nil, errors.New("prompt: a secret-shaped string reached a prompt; refusing to send it")
	}
	return []llm.Message{
		{Role: llm.RoleSystem, Content: PromptMarker + " " + role},
		{Role: llm.RoleUser, Content: user},
	}, nil
}

// EstimateCall is the tokens a call is expected to spend: its prompt (four
// bytes a token) and a reply allowance.
func EstimateCall(msgs []llm.Message, reply int64) int64 {
	n := 0
	for _, m := range msgs {
		n += len(m.Text())
	}
	return int64((n+3)/4) + reply
}

// EstimateReplay is the tokens one replay of t under skill and memory is
// expected to spend: the attempt, and the rubric judge's call if any.
func EstimateReplay(t Task, skill, memory string) int64 {
	est := EstimateCall(AttemptMessages(t, skill, memory), 300)
	if t.Judge.Kind == JudgeRubric {
		est += 2*EstimateCall(nil, 300) + int64(len(t.Judge.Rubric)+len(t.Intent))/4 + 300
	}
	return est
}
