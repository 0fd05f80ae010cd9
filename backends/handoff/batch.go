package handoff

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/skillfleet/skillfleet/internal/atomicfile"
)

// Batch is pending.json: the calls a night waits for.
type Batch struct {
	Format     string `json:"format"`
	AnswersDir string `json:"answers_dir"`
	Pending    []Call `json:"pending"`
}

// WriteBatch writes the pending calls to pending.json and PROMPTS.md,
// every prompt and message passed through redact first (the redaction
// the night's trajectories get), and makes the answers directory. It
// returns the number of calls written.
func (s *Store) WriteBatch(redact func(string) string) (int, error) {
	calls := s.Pending()
	for i := range calls {
		c := &calls[i]
		c.Prompt = redact(c.Prompt)
		msgs := make([]WireMessage, len(c.Request.Messages))
		for j, m := range c.Request.Messages {
			msgs[j] = WireMessage{Role: m.Role, Content: redact(m.Content)}
		}
		c.Request.Messages = msgs
	}
	if err := os.MkdirAll(s.AnswersDir(), 0o700); err != nil {
		return 0, err
	}
	b, err := json.MarshalIndent(Batch{Format: Format, AnswersDir: s.AnswersDir(), Pending: calls}, "", "  ")
	if err != nil {
		return 0, err
	}
	if err := atomicfile.WriteFile(s.PendingFile(), append(b, '\n'), 0o600); err != nil {
		return 0, err
	}
	if err := atomicfile.WriteFile(s.PromptsFile(), []byte(promptsMarkdown(s, calls)), 0o600); err != nil {
		return 0, err
	}
	return len(calls), nil
}

// ClearBatch removes pending.json and PROMPTS.md (a night that finished,
// or one starting: a stale batch must not be answered for this one).
func (s *Store) ClearBatch() error {
	for _, f := range []string{s.PendingFile(), s.PromptsFile()} {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

func promptsMarkdown(s *Store, calls []Call) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %d model calls wait for answers\n\n", len(calls))
	fmt.Fprintf(&b, "Answer each prompt below as the model in its role would, and write the reply's raw text (nothing around it, "+
		"no code fence) to its answer file. Give each prompt a context of its own (a fresh subagent, say): what this session "+
		"knows, the other prompts, or the night's other answers must not reach an answer, or the night's held-out check "+
		"measures them instead of the skill. Then run the same `skillfleet sleep` command again. pending.json holds the same calls.\n\n")
	fmt.Fprintf(&b, "Answers directory: %s\n", s.AnswersDir())
	for i, c := range calls {
		fmt.Fprintf(&b, "\n## %d. %s %s\n\n", i+1, c.Role, c.ID)
		fmt.Fprintf(&b, "- answer file: %s\n", c.AnswerFile)
		if c.MaxTokens > 0 {
			fmt.Fprintf(&b, "- max tokens: %d\n", c.MaxTokens)
		}
		if c.Sample != nil {
			fmt.Fprintf(&b, "- sample: %d (attempts of one prompt with different samples are answered independently)\n", *c.Sample)
		}
		fence := "````"
		for strings.Contains(c.Prompt, fence) {
			fence += "`"
		}
		fmt.Fprintf(&b, "\n%s\n%s\n%s\n", fence, c.Prompt, fence)
	}
	return b.String()
}
