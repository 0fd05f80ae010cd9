package sim

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"

	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// Latency is the server's added response time: Fixed, or log-normal with
// the given median and 99th percentile when Median is set.
type Latency struct {
	Fixed  time.Duration
	Median time.Duration
	// P99 is the 99th percentile; P99 <= Median means no spread.
	P99 time.Duration
}

// ServerOptions configure the HTTP face. The zero value serves every
// request at once, with no limits and no faults.
type ServerOptions struct {
	Latency Latency
	// RPM and TPM limit requests and prompt tokens per minute (token
	// buckets refilled continuously, burst = one minute's worth); 0 = no
	// limit. A request over a limit gets 429 with Retry-After in seconds.
	RPM int
	TPM int
	// Fault rates, each a probability per request, drawn in this order from
	// a generator seeded by FaultSeed and the request's arrival number.
	// FaultRate500 answers 500; FaultRateDrop closes the connection without
	// a reply; FaultRateStall holds the request until the client goes away
	// or StallFor passes, then closes the connection; FaultRateMalformed
	// answers an optimizer request with 200 and text that holds no JSON.
	FaultRate500       float64
	FaultRateDrop      float64
	FaultRateStall     float64
	FaultRateMalformed float64
	FaultSeed          int64
	// StallFor bounds a stall. Default 10 minutes.
	StallFor time.Duration
	// APIKey, when set, is required as "Authorization: Bearer <key>".
	APIKey string
	// Models are listed by GET /v1/models besides every model seen.
	// Default ["sim"].
	Models []string
	// Now is the clock of the rate limits. Default time.Now.
	Now func() time.Time
}

// Fault names, the keys of [Stats].Faults.
const (
	FaultServerError = "server_error"
	FaultDrop        = "drop"
	FaultStall       = "stall"
	FaultMalformed   = "malformed"
)

// Stats counts what the server did.
type Stats struct {
	// Requests counts every chat completion request received.
	Requests int64 `json:"requests"`
	// Served counts completions answered with 200 and a real reply.
	Served int64 `json:"served"`
	// InputTokens and OutputTokens sum the usage of served completions.
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// RateLimited counts 429 answers; BadRequests 400 and 401 answers.
	RateLimited int64 `json:"rate_limited"`
	BadRequests int64 `json:"bad_requests"`
	// Billed counts every reply the server generated and bills, as a
	// provider does: served ones, malformed ones, and replies finished
	// after the client went away (Abandoned of them). BilledInputTokens
	// and BilledOutputTokens are the usage those replies carry (or would
	// have carried). A stalled request produces no reply and is not billed.
	Billed             int64 `json:"billed"`
	BilledInputTokens  int64 `json:"billed_input_tokens"`
	BilledOutputTokens int64 `json:"billed_output_tokens"`
	Abandoned          int64 `json:"abandoned"`
	// Faults counts injected faults by name.
	Faults map[string]int64 `json:"faults"`
	// Models holds the same counts per requested model.
	Models map[string]ModelStats `json:"models"`
}

// ModelStats are the counts of one model.
type ModelStats struct {
	Requests     int64 `json:"requests"`
	Served       int64 `json:"served"`
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	RateLimited  int64 `json:"rate_limited"`
}

// Server serves a [Model] in the OpenAI Chat Completions wire format:
// POST /v1/chat/completions, GET /v1/models, GET /v1/stats (the [Stats] as
// JSON, for tests in other processes) and GET /healthz. It is a test
// double of a hosted model, with optional latency, rate limits and faults.
type Server struct {
	m   *Model
	o   ServerOptions
	mux *http.ServeMux
	seq atomic.Int64
	rpm *rate.Limiter
	tpm *rate.Limiter
	// faultHook, when set (by tests), is called with each injected fault
	// before it takes effect.
	faultHook func(fault string)

	mu    sync.Mutex
	stats Stats
	log   []LoggedRequest
}

// NewServer returns the HTTP face of m.
func NewServer(m *Model, o ServerOptions) *Server {
	if o.StallFor <= 0 {
		o.StallFor = 10 * time.Minute
	}
	if len(o.Models) == 0 {
		o.Models = []string{"sim"}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	s := &Server{m: m, o: o, mux: http.NewServeMux()}
	s.stats = Stats{Faults: map[string]int64{}, Models: map[string]ModelStats{}}
	if o.RPM > 0 {
		s.rpm = rate.NewLimiter(rate.Limit(float64(o.RPM)/60), o.RPM)
	}
	if o.TPM > 0 {
		s.tpm = rate.NewLimiter(rate.Limit(float64(o.TPM)/60), o.TPM)
	}
	for _, p := range []string{"/v1/chat/completions", "/chat/completions"} {
		s.mux.HandleFunc("POST "+p, s.chat)
	}
	for _, p := range []string{"/v1/responses", "/responses"} {
		s.mux.HandleFunc("POST "+p, s.agent(APIResponses))
	}
	for _, p := range []string{"/v1/messages", "/messages"} {
		s.mux.HandleFunc("POST "+p, s.agent(APIMessages))
	}
	s.mux.HandleFunc("GET /v1/requests", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.RequestLog()) })
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("GET /v1/stats", func(w http.ResponseWriter, _ *http.Request) { writeJSON(w, http.StatusOK, s.Stats()) })
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "ok\n")
	})
	return s
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// Stats returns a copy of the counters.
func (s *Server) Stats() Stats {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.stats
	c.Faults = make(map[string]int64, len(s.stats.Faults))
	for k, v := range s.stats.Faults {
		c.Faults[k] = v
	}
	c.Models = make(map[string]ModelStats, len(s.stats.Models))
	for k, v := range s.stats.Models {
		c.Models[k] = v
	}
	return c
}

// count applies f to the totals and to the model's counts under the lock.
func (s *Server) count(model string, f func(*Stats, *ModelStats)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ms *ModelStats
	if model != "" {
		v := s.stats.Models[model]
		ms = &v
		defer func() { s.stats.Models[model] = v }()
	} else {
		ms = &ModelStats{}
	}
	f(&s.stats, ms)
}

// wire types of the Chat Completions API (the fields the sim reads).
type wireRequest struct {
	Model               string        `json:"model"`
	Messages            []wireMessage `json:"messages"`
	Seed                *int64        `json:"seed"`
	Temperature         *float64      `json:"temperature"`
	MaxTokens           int           `json:"max_tokens"`
	MaxCompletionTokens int           `json:"max_completion_tokens"`
	Stream              bool          `json:"stream"`
	Tools               []wireTool    `json:"tools"`
}

type wireMessage struct {
	Role       string         `json:"role"`
	Content    wireContent    `json:"content"`
	Name       string         `json:"name,omitempty"`
	ToolCalls  []wireToolCall `json:"tool_calls,omitempty"`
	ToolCallID string         `json:"tool_call_id,omitempty"`
}

// wireTool is a function tool offered in a chat request.
type wireTool struct {
	Type     string `json:"type"`
	Function struct {
		Name        string          `json:"name"`
		Description string          `json:"description,omitempty"`
		Parameters  json.RawMessage `json:"parameters,omitempty"`
	} `json:"function"`
}

// wireToolCall is an assistant's function call, in a request's history
// or a reply.
type wireToolCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// wireContent is a message's content: a string or a list of parts.
type wireContent struct {
	text  string
	parts []llm.Part
}

func (c *wireContent) UnmarshalJSON(b []byte) error {
	switch t := bytes.TrimSpace(b); {
	case len(t) == 0 || string(t) == "null":
		return nil
	case t[0] == '"':
		return json.Unmarshal(t, &c.text)
	}
	var parts []struct {
		Type     string `json:"type"`
		Text     string `json:"text"`
		ImageURL *struct {
			URL    string `json:"url"`
			Detail string `json:"detail"`
		} `json:"image_url"`
	}
	if err := json.Unmarshal(b, &parts); err != nil {
		return fmt.Errorf("content: want a string or a list of parts: %w", err)
	}
	for _, p := range parts {
		switch p.Type {
		case "text":
			c.parts = append(c.parts, llm.Part{Type: "text", Text: p.Text})
		case "image_url":
			if p.ImageURL != nil {
				c.parts = append(c.parts, llm.Part{Type: "image", ImageURL: p.ImageURL.URL, Detail: p.ImageURL.Detail})
			}
		}
	}
	return nil
}

type wireReply struct {
	ID      string       `json:"id"`
	Object  string       `json:"object"`
	Created int64        `json:"created"`
	Model   string       `json:"model"`
	Choices []wireChoice `json:"choices"`
	Usage   wireUsage    `json:"usage"`
}

type wireChoice struct {
	Index        int              `json:"index"`
	Message      wireReplyMessage `json:"message"`
	FinishReason string           `json:"finish_reason"`
}

type wireReplyMessage struct {
	Role      string         `json:"role"`
	Content   string         `json:"content"`
	ToolCalls []wireToolCall `json:"tool_calls,omitempty"`
}

type wireUsage struct {
	PromptTokens     int64 `json:"prompt_tokens"`
	CompletionTokens int64 `json:"completion_tokens"`
	TotalTokens      int64 `json:"total_tokens"`
}

// created is the fixed "created" time of every reply, so that replies are
// reproducible byte for byte.
const created = 1767225600 // 2026-01-01T00:00:00Z

// maxBody bounds a request body.
const maxBody = 64 << 20

// malformedReply is what a malformed-reply fault sends: prose, no JSON.
const malformedReply = "Sorry, I lost track of the required format. In short: the skill mostly works, and I would add a rule or two about units."

func (s *Server) chat(w http.ResponseWriter, r *http.Request) {
	seq := s.seq.Add(1)
	s.count("", func(st *Stats, _ *ModelStats) { st.Requests++ })
	if s.o.APIKey != "" && r.Header.Get("Authorization") != "Bearer "+s.o.APIKey {
		s.count("", func(st *Stats, _ *ModelStats) { st.BadRequests++ })
		writeError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "sim: missing or wrong API key")
		return
	}
	var wr wireRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, maxBody)).Decode(&wr); err != nil {
		s.badRequest(w, "", "sim: request body: "+err.Error())
		return
	}
	s.count(wr.Model, func(_ *Stats, ms *ModelStats) { ms.Requests++ })
	switch {
	case wr.Model == "":
		s.badRequest(w, "", "sim: you must provide a model parameter")
		return
	case wr.Stream:
		s.badRequest(w, wr.Model, "sim: streaming is not supported")
		return
	}
	req := &llm.Request{Model: wr.Model, Seed: wr.Seed, Temperature: wr.Temperature, MaxTokens: max(wr.MaxCompletionTokens, wr.MaxTokens)}
	for _, m := range wr.Messages {
		msg := llm.Message{Role: m.Role, Content: m.Content.text, Parts: m.Content.parts, Name: m.Name, ToolCallID: m.ToolCallID}
		for _, c := range m.ToolCalls {
			msg.ToolCalls = append(msg.ToolCalls, llm.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
		req.Messages = append(req.Messages, msg)
	}
	for _, t := range wr.Tools {
		req.Tools = append(req.Tools, llm.Tool{Name: t.Function.Name, Description: t.Function.Description, Parameters: t.Function.Parameters})
	}
	fault, fr, ok := s.admit(w, r, seq, wr.Model, InputTokens(req.Messages), func() bool {
		k := RequestKind(req)
		return k != "" && k != KindTarget
	}, openAIError)
	if !ok {
		return
	}
	ctx := r.Context()
	if !waitLatency(ctx, s.latency(fr)) {
		dropConnection(w) // the server stops
		return
	}

	resp, err := s.m.Chat(context.WithoutCancel(ctx), req) // finished and billed even if the client left
	if err != nil {
		if llm.KindOf(err) == llm.KindInvalidRequest {
			s.badRequest(w, "", err.Error())
			return
		}
		if ctx.Err() != nil {
			dropConnection(w) // the client is gone or the server stops
			return
		}
		writeError(w, http.StatusInternalServerError, "server_error", "", err.Error())
		return
	}
	content := resp.Content
	if fault == FaultMalformed {
		content = malformedReply
	}
	if s.bill(ctx, resp.Usage.InputTokens, llm.EstimateTokens(content)) {
		dropConnection(w) // the client is gone
		return
	}
	if fault == FaultMalformed {
		content = malformedReply
	} else {
		s.served(wr.Model, resp.Usage)
	}
	in, out := resp.Usage.InputTokens, llm.EstimateTokens(content)
	msg := wireReplyMessage{Role: llm.RoleAssistant, Content: content}
	for _, c := range resp.ToolCalls {
		wc := wireToolCall{ID: c.ID, Type: "function"}
		wc.Function.Name, wc.Function.Arguments = c.Name, c.Arguments
		msg.ToolCalls = append(msg.ToolCalls, wc)
	}
	writeJSON(w, http.StatusOK, wireReply{
		ID: fmt.Sprintf("chatcmpl-sim-%d", seq), Object: "chat.completion", Created: created, Model: resp.Model,
		Choices: []wireChoice{{Message: wireReplyMessage{Role: msg.Role, Content: msg.Content, ToolCalls: msg.ToolCalls}, FinishReason: resp.FinishReason}},
		Usage:   wireUsage{PromptTokens: in, CompletionTokens: out, TotalTokens: in + out},
	})
}

// served counts a served reply and its usage.
func (s *Server) served(model string, u llm.Usage) {
	s.count(model, func(st *Stats, ms *ModelStats) {
		st.Served++
		st.InputTokens += u.InputTokens
		st.OutputTokens += u.OutputTokens
		ms.Served++
		ms.InputTokens += u.InputTokens
		ms.OutputTokens += u.OutputTokens
	})
}

func (s *Server) badRequest(w http.ResponseWriter, model, msg string) {
	s.count(model, func(st *Stats, _ *ModelStats) { st.BadRequests++ })
	writeError(w, http.StatusBadRequest, "invalid_request_error", "", msg)
}

// limit takes one request and tokens from the buckets; when either is
// short it takes nothing and returns how long to wait.
func (s *Server) limit(tokens int64) (time.Duration, bool) {
	now := s.o.Now()
	var taken []*rate.Reservation
	defer func() {
		for _, r := range taken {
			r.CancelAt(now)
		}
	}()
	for _, b := range []struct {
		lim *rate.Limiter
		n   int
	}{{s.rpm, 1}, {s.tpm, int(min(tokens, int64(s.o.TPM)))}} {
		if b.lim == nil {
			continue
		}
		res := b.lim.ReserveN(now, max(b.n, 1))
		if !res.OK() {
			return time.Minute, true
		}
		if d := res.DelayFrom(now); d > 0 {
			res.CancelAt(now)
			return d, true
		}
		taken = append(taken, res)
	}
	taken = nil // every bucket had room: keep what was taken
	return 0, false
}

// latency draws this request's added latency.
func (s *Server) latency(r *simbench.RNG) time.Duration {
	l := s.o.Latency
	if l.Median <= 0 {
		return l.Fixed
	}
	sigma := 0.0
	if l.P99 > l.Median {
		sigma = math.Log(float64(l.P99)/float64(l.Median)) / 2.3263478740408408 // z of the 99th percentile
	}
	// Box-Muller from two uniform draws.
	u1, u2 := max(r.Float64(), 1e-12), r.Float64()
	z := math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*u2)
	return time.Duration(float64(l.Median) * math.Exp(sigma*z))
}

func (s *Server) models(w http.ResponseWriter, _ *http.Request) {
	names := slices.Clone(s.o.Models)
	s.mu.Lock()
	for m := range s.stats.Models {
		if !slices.Contains(names, m) {
			names = append(names, m)
		}
	}
	s.mu.Unlock()
	slices.Sort(names)
	type model struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	list := struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{Object: "list", Data: []model{}}
	for _, n := range names {
		list.Data = append(list.Data, model{ID: n, Object: "model", Created: created, OwnedBy: "skillfleet-sim"})
	}
	writeJSON(w, http.StatusOK, list)
}

// dropConnection closes the client's connection without a reply.
func dropConnection(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	// HTTP/2 or a wrapped writer: abort the response instead.
	panic(http.ErrAbortHandler)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

// writeError writes an OpenAI-style error body.
func writeError(w http.ResponseWriter, status int, typ, code, msg string) {
	type apiError struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}
	e := apiError{Message: msg, Type: typ}
	if code != "" {
		e.Code = &code
	}
	writeJSON(w, status, struct {
		Error apiError `json:"error"`
	}{e})
}

// Listen opens a TCP listener for the server. An empty host means
// loopback (127.0.0.1), an empty addr "127.0.0.1:0", and port 0 a free port.
func Listen(ctx context.Context, addr string) (net.Listener, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return nil, fmt.Errorf("sim-llm listen %q: %w", addr, err)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", net.JoinHostPort(host, port))
	if err != nil {
		return nil, fmt.Errorf("sim-llm listen: %w", err)
	}
	return ln, nil
}

// Serve serves h on ln until ctx is done, then shuts down, giving
// in-flight requests a few seconds. Request contexts derive from ctx, so
// stalled and delayed requests end at once. A connection that never
// carried a request (a client's dial for a call it cancelled meanwhile)
// is closed at once: net/http's Shutdown leaves such a connection 5
// seconds, which held the end of a run that long. It returns nil on
// cancellation and closes ln.
func Serve(ctx context.Context, ln net.Listener, h http.Handler) error {
	var fresh freshConns
	srv := &http.Server{
		Handler: h, ReadHeaderTimeout: 10 * time.Second,
		BaseContext: func(net.Listener) context.Context { return context.WithValue(ctx, baseCtxKey{}, ctx) },
		ConnState:   fresh.track,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("sim-llm serve: %w", err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	shut := make(chan error, 1)
	go func() { shut <- srv.Shutdown(sctx) }()
	// Shutdown closes the listener first; a connection accepted just
	// before that may turn up after the first sweep.
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	fresh.closeAll()
	for waiting := true; waiting; {
		select {
		case err := <-shut:
			if err != nil {
				_ = srv.Close()
			}
			waiting = false
		case <-tick.C:
			fresh.closeAll()
		}
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("sim-llm serve: %w", err)
	}
	return nil
}

// freshConns are a server's connections that have not carried a request.
type freshConns struct {
	mu sync.Mutex
	m  map[net.Conn]struct{}
}

// track is the server's ConnState hook.
func (f *freshConns) track(c net.Conn, s http.ConnState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if s == http.StateNew {
		if f.m == nil {
			f.m = map[net.Conn]struct{}{}
		}
		f.m[c] = struct{}{}
		return
	}
	delete(f.m, c)
}

// closeAll closes the connections that have not carried a request.
func (f *freshConns) closeAll() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for c := range f.m {
		_ = c.Close()
		delete(f.m, c)
	}
}

// ListenAndServe listens on addr (see [Listen]) and serves h there until
// ctx is done. It returns the bound address at once; wait blocks until the
// server has stopped and returns Serve's error.
func ListenAndServe(ctx context.Context, addr string, h http.Handler) (bound string, wait func() error, err error) {
	ln, err := Listen(ctx, addr)
	if err != nil {
		return "", nil, err
	}
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, ln, h) }()
	return ln.Addr().String(), sync.OnceValue(func() error { return <-done }), nil
}
