package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// errWriter writes an error body in one API's format.
type errWriter func(w http.ResponseWriter, status int, typ, msg string)

func openAIError(w http.ResponseWriter, status int, typ, msg string) {
	code := ""
	switch status {
	case http.StatusUnauthorized:
		code = "invalid_api_key"
	case http.StatusTooManyRequests:
		code = "rate_limit_exceeded"
	}
	writeError(w, status, typ, code, msg)
}

// agentAuthorized checks the API key: "Authorization: Bearer <key>", or for
// the Messages API also "x-api-key: <key>".
func (s *Server) agentAuthorized(r *http.Request) bool {
	if s.o.APIKey == "" {
		return true
	}
	return r.Header.Get("Authorization") == "Bearer "+s.o.APIKey || r.Header.Get("X-Api-Key") == s.o.APIKey
}

// admit applies the rate limits to a request for model of tokens input
// tokens, draws the request's fault and plays it out. It returns the fault
// and the request's generator (the latency is drawn from it next); ok is
// false when the request has been answered (429 or an injected fault). A
// malformed-reply fault applies only where malformable, when given, says
// so (optimizer requests, which must carry JSON).
func (s *Server) admit(w http.ResponseWriter, r *http.Request, seq int64, model string, tokens int64, malformable func() bool, errw errWriter) (fault string, fr *simbench.RNG, ok bool) {
	if wait, limited := s.limit(tokens); limited {
		s.count(model, func(st *Stats, ms *ModelStats) { st.RateLimited++; ms.RateLimited++ })
		w.Header().Set("Retry-After", strconv.FormatInt(int64(math.Ceil(wait.Seconds())), 10))
		errw(w, http.StatusTooManyRequests, "rate_limit_error",
			fmt.Sprintf("sim: rate limit reached for %s; try again in %s", model, wait.Round(time.Millisecond)))
		return "", nil, false
	}
	fr = simbench.HashRNG([]byte("fault"), i64(s.o.FaultSeed), i64(seq))
	u := fr.Float64()
	switch o := s.o; {
	case u < o.FaultRate500:
		fault = FaultServerError
	case u < o.FaultRate500+o.FaultRateDrop:
		fault = FaultDrop
	case u < o.FaultRate500+o.FaultRateDrop+o.FaultRateStall:
		fault = FaultStall
	case u < o.FaultRate500+o.FaultRateDrop+o.FaultRateStall+o.FaultRateMalformed:
		if malformable != nil && malformable() {
			fault = FaultMalformed
		}
	}
	if fault != "" {
		s.count("", func(st *Stats, _ *ModelStats) { st.Faults[fault]++ })
		if s.faultHook != nil {
			s.faultHook(fault)
		}
	}
	switch fault {
	case FaultServerError:
		errw(w, http.StatusInternalServerError, "server_error", "sim: injected server error")
		return "", nil, false
	case FaultDrop:
		dropConnection(w)
		return "", nil, false
	case FaultStall:
		t := time.NewTimer(s.o.StallFor)
		defer t.Stop()
		select {
		case <-r.Context().Done():
		case <-t.C:
		}
		dropConnection(w)
		return "", nil, false
	}
	return fault, fr, true
}

// agentAdmit admits an agent request ([Server.admit]; agent replies are
// never malformed), then waits the added latency. It returns false when
// the request has been answered (429, an injected fault, or the client
// gone).
func (s *Server) agentAdmit(w http.ResponseWriter, r *http.Request, seq int64, model string, tokens int64, errw errWriter) bool {
	_, fr, ok := s.admit(w, r, seq, model, tokens, nil, errw)
	if !ok {
		return false
	}
	if d := s.latency(fr); d > 0 {
		t := time.NewTimer(d)
		select {
		case <-r.Context().Done():
			t.Stop()
			dropConnection(w) // the client is gone or the server stops
			return false
		case <-t.C:
		}
	}
	return true
}

// APIs of the agent endpoints, as the request log names them.
const (
	APIResponses = "responses"
	APIMessages  = "messages"
)

// agent serves an agent API (the Responses API or the Messages API).
func (s *Server) agent(api string) http.HandlerFunc {
	errw := errWriter(openAIError)
	if api == APIMessages {
		errw = func(w http.ResponseWriter, status int, typ, msg string) {
			switch typ {
			case "server_error":
				typ = "api_error"
			case "invalid_request_error":
				if status == http.StatusUnauthorized {
					typ = "authentication_error"
				}
			}
			writeMessagesError(w, status, typ, msg)
		}
	}
	return func(w http.ResponseWriter, r *http.Request) {
		seq := s.seq.Add(1)
		s.count("", func(st *Stats, _ *ModelStats) { st.Requests++ })
		if !s.agentAuthorized(r) {
			s.count("", func(st *Stats, _ *ModelStats) { st.BadRequests++ })
			errw(w, http.StatusUnauthorized, "invalid_request_error", "sim: missing or wrong API key")
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
		if err != nil {
			s.agentBadRequest(w, errw, "", "sim: request body: "+err.Error())
			return
		}
		var (
			conv   *Conversation
			stream bool
			model  string
		)
		switch api {
		case APIResponses:
			var req responsesRequest
			if err = json.Unmarshal(body, &req); err == nil {
				model, stream = req.Model, req.Stream
				conv, err = req.conversation()
			}
		case APIMessages:
			var req messagesRequest
			if err = json.Unmarshal(body, &req); err == nil {
				model, stream = req.Model, req.Stream
				conv, err = req.conversation()
			}
		}
		if err != nil {
			s.agentBadRequest(w, errw, model, "sim: request body: "+err.Error())
			return
		}
		s.count(model, func(_ *Stats, ms *ModelStats) { ms.Requests++ })
		if model == "" {
			s.agentBadRequest(w, errw, "", "sim: you must provide a model parameter")
			return
		}
		if !s.agentAdmit(w, r, seq, model, conv.InputTokens(), errw) {
			return
		}
		ctx := r.Context()
		reply, err := s.m.Agent(ctx, conv)
		if err != nil {
			switch {
			case llm.KindOf(err) == llm.KindInvalidRequest:
				s.agentBadRequest(w, errw, model, err.Error())
			case ctx.Err() != nil:
				dropConnection(w)
			default:
				errw(w, http.StatusInternalServerError, "server_error", err.Error())
			}
			return
		}
		s.served(model, reply.Usage)
		entry := LoggedRequest{Seq: seq, API: api, Model: model, Stream: stream, Action: reply.Action,
			ToolResults: countTurns(conv, "tool"), InputTokens: reply.Usage.InputTokens, OutputTokens: reply.Usage.OutputTokens}
		for _, c := range reply.Calls {
			entry.ToolCalls = append(entry.ToolCalls, c.Name+" "+c.Args)
		}
		s.logRequest(entry)
		switch api {
		case APIResponses:
			s.responsesReply(w, stream, seq, model, reply)
		case APIMessages:
			s.messagesReply(w, stream, seq, model, reply)
		}
	}
}

func (s *Server) agentBadRequest(w http.ResponseWriter, errw errWriter, model, msg string) {
	s.count(model, func(st *Stats, _ *ModelStats) { st.BadRequests++ })
	errw(w, http.StatusBadRequest, "invalid_request_error", msg)
}

func countTurns(c *Conversation, role string) int {
	n := 0
	for _, t := range c.Turns {
		if t.Role == role {
			n++
		}
	}
	return n
}

// LoggedRequest is one served request in the server's request log.
type LoggedRequest struct {
	Seq   int64  `json:"seq"`
	API   string `json:"api"`
	Model string `json:"model"`
	// Stream is whether the reply was streamed (SSE).
	Stream bool `json:"stream,omitempty"`
	// Action is what the reply did: chat, answer, read_skill, read_file,
	// list_skill, read_skill_file.
	Action string `json:"action"`
	// ToolCalls are the calls the reply asked for ("name args").
	ToolCalls []string `json:"tool_calls,omitempty"`
	// ToolResults counts the tool outputs the request carried.
	ToolResults  int   `json:"tool_results,omitempty"`
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
}

// maxLog bounds the request log kept in memory (the oldest go first).
const maxLog = 10000

func (s *Server) logRequest(e LoggedRequest) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.log) >= maxLog {
		s.log = slices.Delete(s.log, 0, len(s.log)-maxLog+1)
	}
	s.log = append(s.log, e)
}

// RequestLog returns the served requests, oldest first (at most the last
// 10000), also served as JSON by GET /v1/requests.
func (s *Server) RequestLog() []LoggedRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.log)
}
