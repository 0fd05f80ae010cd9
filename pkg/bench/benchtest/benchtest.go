// Package benchtest holds test helpers for benchmarks: a scripted model
// that answers with recorded replies and keeps every request it got.
package benchtest

import (
	"context"
	"fmt"
	"sync"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// Scripted is an llm.Model answering with Replies in order (the last one
// repeats once they run out). Usage per reply is 10 input and 5 output
// tokens, so tests can check episode accounting.
type Scripted struct {
	Replies []*llm.Response
	// Err, when set, is returned by every call.
	Err error

	mu       sync.Mutex
	Requests []*llm.Request
}

// Text returns a script of plain-text replies.
func Text(replies ...string) *Scripted {
	s := &Scripted{}
	for _, r := range replies {
		s.Replies = append(s.Replies, &llm.Response{Content: r})
	}
	return s
}

// Chat records the request and returns the next reply.
func (s *Scripted) Chat(_ context.Context, req *llm.Request) (*llm.Response, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	cp := *req
	cp.Messages = append([]llm.Message(nil), req.Messages...)
	s.Requests = append(s.Requests, &cp)
	if s.Err != nil {
		return nil, s.Err
	}
	if len(s.Replies) == 0 {
		return nil, fmt.Errorf("benchtest: no scripted reply")
	}
	i := min(len(s.Requests)-1, len(s.Replies)-1)
	r := *s.Replies[i]
	r.Usage = llm.Usage{InputTokens: 10, OutputTokens: 5}
	r.Attempts = 1
	return &r, nil
}

// Calls returns how many requests were made.
func (s *Scripted) Calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.Requests)
}

// Last returns the last request.
func (s *Scripted) Last() *llm.Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.Requests) == 0 {
		return nil
	}
	return s.Requests[len(s.Requests)-1]
}
