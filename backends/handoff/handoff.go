// Package handoff is a model backend with no model behind it: every call
// becomes a prompt that someone else answers (the user's own agent
// session, a script), through files.
//
// A call's id is a hash of everything a model would see: its role, its
// messages, the tools it offers, and its sampling settings (temperature,
// max_tokens, seed, JSON mode, stop sequences). The model name is left
// out: for a handoff night it is only a label. Two rollouts of one task
// carry different seeds, so identical prompts that must get independent
// answers get distinct ids, while a request repeated verbatim is one call
// with one answer, as a deterministic model would give.
//
// A call whose answer file (<dir>/answers/<id>.md) exists returns the
// file's text as the reply. One without an answer is recorded as pending
// in the process's [Store] for that directory and fails with a typed
// error wrapping [*PendingError] (an invalid request: never retried,
// never an outage); the caller decides when to stop and writes the batch
// ([Store.WriteBatch]). An answer file that is empty or cannot be read
// fails the call with an [*AnswerError] naming the file and the id.
//
// The answering session reports no usage: each answered call's usage is an
// estimate (four characters a token of the prompt and of the answer),
// counted in [Store.Counts].
package handoff

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// Format is pending.json's format name.
const Format = "skillfleet.handoff.v1"

// ErrPending says a night stopped because model calls wait for answers.
var ErrPending = errors.New("model calls are pending")

// Role names by the request's accounting stage.
var roles = map[string]string{
	"rollout":       "target",
	"sleep_mine":    "miner",
	"sleep_reflect": "optimizer",
	"sleep_judge":   "judge",
}

// RoleOf names the role a request plays, from its stage.
func RoleOf(req *llm.Request) string {
	if r, ok := roles[req.Stage]; ok {
		return r
	}
	return cmp.Or(req.Stage, "model")
}

// Call is one model call waiting for its answer.
type Call struct {
	ID   string `json:"id"`
	Role string `json:"role"`
	// Prompt is the whole prompt as text, each message under a label
	// line ("=== SYSTEM ===", "=== USER ===", ...).
	Prompt    string `json:"prompt"`
	MaxTokens int    `json:"max_tokens"`
	// Sample is the request's seed: attempts of one prompt with different
	// samples are answered independently.
	Sample *int64 `json:"sample,omitempty"`
	// Request is the call as an OpenAI chat-completions body (model,
	// messages, temperature, max_tokens, seed, response_format, stop), for
	// a script that answers through an OpenAI-compatible server.
	Request    WireRequest `json:"request"`
	AnswerFile string      `json:"answer_file"`
}

// WireRequest is a call as an OpenAI chat-completions request body.
type WireRequest struct {
	Model          string            `json:"model"`
	Messages       []WireMessage     `json:"messages"`
	Temperature    *float64          `json:"temperature,omitempty"`
	MaxTokens      int               `json:"max_tokens,omitempty"`
	Seed           *int64            `json:"seed,omitempty"`
	Stop           []string          `json:"stop,omitempty"`
	ResponseFormat map[string]string `json:"response_format,omitempty"`
}

// WireMessage is one message of a [WireRequest].
type WireMessage struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// PendingError is a call with no answer yet.
type PendingError struct {
	ID, Role, AnswerFile string
}

func (e *PendingError) Error() string {
	return fmt.Sprintf("handoff: %s prompt %s has no answer yet (%s)", e.Role, e.ID, e.AnswerFile)
}

// AnswerError is an answer file that exists but cannot be used.
type AnswerError struct {
	ID, Role, File, Reason string
}

func (e *AnswerError) Error() string {
	return fmt.Sprintf("handoff: answer file %s for %s prompt %s %s", e.File, e.Role, e.ID, e.Reason)
}

// Store is the handoff directory of one process: the answers on disk, and
// the calls this process found pending or badly answered since
// [Store.Begin]. [Open] returns one Store per directory, shared by every
// model built on it in the process (the in-process workers' too).
type Store struct {
	dir string

	mu        sync.Mutex
	pending   map[string]Call
	bad       map[string]*AnswerError
	answered  int
	estimated int64
}

var (
	openMu sync.Mutex
	open   = map[string]*Store{}
)

// Open returns the process's Store for dir.
func Open(dir string) (*Store, error) {
	if strings.TrimSpace(dir) == "" {
		return nil, errors.New("handoff: no directory given")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	openMu.Lock()
	defer openMu.Unlock()
	if s, ok := open[abs]; ok {
		return s, nil
	}
	s := &Store{dir: abs, pending: map[string]Call{}, bad: map[string]*AnswerError{}}
	open[abs] = s
	return s, nil
}

// Dir is the handoff directory.
func (s *Store) Dir() string { return s.dir }

// AnswersDir is where answers are read from.
func (s *Store) AnswersDir() string { return filepath.Join(s.dir, "answers") }

// PendingFile is the batch's machine-readable file; PromptsFile its
// readable copy.
func (s *Store) PendingFile() string { return filepath.Join(s.dir, "pending.json") }

// PromptsFile is the batch as Markdown, for a person or an agent to read.
func (s *Store) PromptsFile() string { return filepath.Join(s.dir, "PROMPTS.md") }

// Begin forgets the calls found pending or badly answered so far: a new
// night in this process.
func (s *Store) Begin() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pending, s.bad, s.answered, s.estimated = map[string]Call{}, map[string]*AnswerError{}, 0, 0
}

// Counts returns how many calls were answered from files since Begin,
// and the tokens estimated for them.
func (s *Store) Counts() (answered int, estimatedTokens int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.answered, s.estimated
}

// Pending returns the calls waiting for answers, by role then id (the
// same batch for the same night, whatever order the calls came in).
func (s *Store) Pending() []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Call, 0, len(s.pending))
	for _, c := range s.pending {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Call) int { return cmp.Or(cmp.Compare(a.Role, b.Role), cmp.Compare(a.ID, b.ID)) })
	return out
}

// Err is what a caller checks between waves: an answer file that could
// not be used (the first by id), else an error wrapping [ErrPending] when
// calls wait for answers, else nil.
func (s *Store) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.bad) > 0 {
		return s.bad[slices.Min(slices.Collect(maps.Keys(s.bad)))]
	}
	if n := len(s.pending); n > 0 {
		return fmt.Errorf("%w: %d prompts wait for answers in %s", ErrPending, n, s.AnswersDir())
	}
	return nil
}

// Chat implements llm.Model: the answer file's text, or a pending call.
func (s *Store) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	id, err := ID(req)
	if err != nil {
		return nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: "handoff", Err: err}
	}
	role := RoleOf(req)
	file := filepath.Join(s.AnswersDir(), id+".md")
	b, err := os.ReadFile(file)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		c := s.call(id, role, file, req)
		s.mu.Lock()
		s.pending[id] = c
		s.mu.Unlock()
		return nil, &llm.Error{Kind: llm.KindInvalidRequest, Err: &PendingError{ID: id, Role: role, AnswerFile: file}}
	case err != nil:
		return nil, s.badAnswer(&AnswerError{ID: id, Role: role, File: file, Reason: "cannot be read: " + err.Error()})
	case strings.TrimSpace(string(b)) == "":
		return nil, s.badAnswer(&AnswerError{ID: id, Role: role, File: file, Reason: "is empty: write the reply's text into it (or delete it to be asked again)"})
	}
	answer := string(b)
	var in int64
	for _, m := range req.Messages {
		in += llm.EstimateTokens(m.Text())
	}
	u := llm.Usage{InputTokens: in, OutputTokens: llm.EstimateTokens(answer)}
	s.mu.Lock()
	s.answered++
	s.estimated += u.InputTokens + u.OutputTokens
	s.mu.Unlock()
	return &llm.Response{Content: answer, FinishReason: "stop", Model: req.Model, Usage: u, Attempts: 1}, nil
}

func (s *Store) badAnswer(e *AnswerError) error {
	s.mu.Lock()
	s.bad[e.ID] = e
	s.mu.Unlock()
	return &llm.Error{Kind: llm.KindInvalidRequest, Err: e}
}

// ID is a request's call id: a hash of its role, messages, tools and
// sampling settings (not its model name).
func ID(req *llm.Request) (string, error) {
	key := struct {
		Role            string        `json:"role"`
		Messages        []llm.Message `json:"messages"`
		Tools           []llm.Tool    `json:"tools,omitempty"`
		Temperature     *float64      `json:"temperature,omitempty"`
		MaxTokens       int           `json:"max_tokens,omitempty"`
		ReasoningEffort string        `json:"reasoning_effort,omitempty"`
		JSONMode        bool          `json:"json_mode,omitempty"`
		Stop            []string      `json:"stop,omitempty"`
		Seed            *int64        `json:"seed,omitempty"`
	}{RoleOf(req), req.Messages, req.Tools, req.Temperature, req.MaxTokens, req.ReasoningEffort, req.JSONMode, req.Stop, req.Seed}
	b, err := json.Marshal(key)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(append([]byte(Format+"\x00"), b...))
	return hex.EncodeToString(sum[:16]), nil
}

// call describes a pending request.
func (s *Store) call(id, role, file string, req *llm.Request) Call {
	w := WireRequest{Model: req.Model, Temperature: req.Temperature, MaxTokens: req.MaxTokens, Seed: req.Seed, Stop: req.Stop}
	if req.JSONMode {
		w.ResponseFormat = map[string]string{"type": "json_object"}
	}
	for _, m := range req.Messages {
		w.Messages = append(w.Messages, WireMessage{Role: m.Role, Content: messageText(m)})
	}
	return Call{ID: id, Role: role, Prompt: PromptText(req), MaxTokens: req.MaxTokens, Sample: req.Seed, Request: w, AnswerFile: file}
}

// messageText is a message's text with its tool calls written out.
func messageText(m llm.Message) string {
	t := m.Text()
	for _, tc := range m.ToolCalls {
		t += fmt.Sprintf("\n[tool call %s: %s(%s)]", tc.ID, tc.Name, tc.Arguments)
	}
	return t
}

// PromptText is a request as one text: each message under a label line,
// and the tools it offers (an answer is text only: a tool cannot be
// called through a handoff).
func PromptText(req *llm.Request) string {
	var b strings.Builder
	for i, m := range req.Messages {
		if i > 0 {
			b.WriteString("\n\n")
		}
		label := strings.ToUpper(m.Role)
		if m.Role == llm.RoleTool {
			label += " RESULT " + m.ToolCallID
		}
		fmt.Fprintf(&b, "=== %s ===\n%s", label, messageText(m))
	}
	if len(req.Tools) > 0 {
		b.WriteString("\n\n=== TOOLS OFFERED (answer in text; a handoff cannot call them) ===")
		for _, t := range req.Tools {
			fmt.Fprintf(&b, "\n- %s: %s", t.Name, t.Description)
		}
	}
	if req.JSONMode {
		b.WriteString("\n\n(Answer with one JSON object.)")
	}
	return b.String()
}
