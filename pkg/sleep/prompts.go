package sleep

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// PromptMarker opens every prompt this package builds for a model. A
// session whose only user turn carries it was started by a skillfleet
// night (a CLI agent used as the backend), and is never harvested.
const PromptMarker = "[skillfleet-sleep]"

// payloadMessages builds a prompt: a system message opening with
// [PromptMarker], and a user message with the instructions and the inputs
// as a fenced JSON payload whose "kind" names the prompt. Every string in
// the payload has already been redacted by the caller; the rendered text is
// checked once more, and a secret-shaped string is an error, never sent.
func payloadMessages(role, instructions string, payload any) ([]llm.Message, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(payload); err != nil {
		return nil, err
	}
	user := instructions + "\n\n```json\n" + strings.TrimRight(buf.String(), "\n") + "\n```\n"
	if ContainsSecret(user) {
		return nil, errors.New("prompt: a secret-shaped string reached a prompt; refusing to send it")
	}
	return []llm.Message{
		{Role: llm.RoleSystem, Content: PromptMarker + " " + role},
		{Role: llm.RoleUser, Content: user},
	}, nil
}
