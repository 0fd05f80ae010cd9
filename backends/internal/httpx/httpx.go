// Package httpx is the HTTP plumbing the HTTP backends (openai, anthropic)
// share: a transport that records what each call saw (status, Retry-After,
// body read errors) and applies per-call body patches, the mapping from
// HTTP outcomes to [llm.ErrorKind], Retry-After parsing, and redaction of
// secrets from every message that can reach an error string or a log.
package httpx

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// MaxMsg bounds the server text kept in an error message.
const MaxMsg = 500

// NewTransport returns a pooled transport for one backend: the default
// transport's settings with enough idle connections per host for a worker
// that calls one endpoint with many concurrent requests (the default of 2
// would reopen connections under load).
func NewTransport() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 64
	return t
}

// Transport wraps the real transport of a backend's HTTP client. For a
// request whose context carries a [Call] (see [Track]) it applies the
// call's body patch and records the response status, the Retry-After
// header and any error reading the body. Requests without a Call pass
// through untouched.
type Transport struct {
	Next http.RoundTripper
	// Now is the clock for HTTP-date Retry-After values (default time.Now).
	Now func() time.Time
}

type callKey struct{}

// Call records what one model call saw on the wire. It is safe for
// concurrent use (the SDK may read the body on another goroutine).
type Call struct {
	patch map[string]any

	mu         sync.Mutex
	sent       bool
	status     int
	retryAfter time.Duration
	header     http.Header
	bodyErr    error
}

// Track returns a context that makes [Transport] record the call, and the
// record. patch holds top-level JSON fields to set in the request body
// (overriding what the SDK wrote); nil leaves the body as it is.
func Track(ctx context.Context, patch map[string]any) (context.Context, *Call) {
	c := &Call{patch: patch}
	return context.WithValue(ctx, callKey{}, c), c
}

// Sent reports whether a request reached the transport (false means the
// SDK rejected the request before sending it).
func (c *Call) Sent() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sent
}

// Status is the HTTP status of the last response (0 = none).
func (c *Call) Status() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.status
}

// RetryAfter is the wait the last response asked for (0 = none).
func (c *Call) RetryAfter() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.retryAfter
}

// Header is the header of the last response (nil = none).
func (c *Call) Header() http.Header {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.header
}

// BodyErr is the error that cut reading the response body short (a
// dropped connection, a deadline), or nil when the body was read whole.
func (c *Call) BodyErr() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bodyErr
}

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(r *http.Request) (*http.Response, error) {
	c, _ := r.Context().Value(callKey{}).(*Call)
	if c == nil {
		return t.Next.RoundTrip(r)
	}
	c.mu.Lock()
	c.sent = true
	c.mu.Unlock()
	if len(c.patch) > 0 && r.Body != nil {
		pr, err := patchBody(r, c.patch)
		if err != nil {
			return nil, err
		}
		r = pr
	}
	resp, err := t.Next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	now := time.Now
	if t.Now != nil {
		now = t.Now
	}
	ra, _ := RetryAfter(resp.Header, now())
	c.mu.Lock()
	c.status, c.retryAfter, c.header = resp.StatusCode, ra, resp.Header
	c.mu.Unlock()
	resp.Body = &bodyTap{ReadCloser: resp.Body, c: c}
	return resp, nil
}

// ErrPatch reports a request body the transport could not patch.
var ErrPatch = errors.New("request body is not a JSON object")

func patchBody(r *http.Request, patch map[string]any) (*http.Request, error) {
	raw, err := io.ReadAll(r.Body)
	_ = r.Body.Close()
	if err != nil {
		return nil, err
	}
	var body map[string]json.RawMessage
	if err := json.Unmarshal(raw, &body); err != nil {
		return nil, fmt.Errorf("patch body: %w", ErrPatch)
	}
	for k, v := range patch {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("patch body field %q: %w", k, err)
		}
		body[k] = b
	}
	out, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("patch body: %w", err)
	}
	pr := r.Clone(r.Context())
	pr.Body = io.NopCloser(bytes.NewReader(out))
	pr.ContentLength = int64(len(out))
	pr.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(out)), nil }
	return pr, nil
}

type bodyTap struct {
	io.ReadCloser
	c *Call
}

func (b *bodyTap) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && !errors.Is(err, io.EOF) {
		b.c.mu.Lock()
		if b.c.bodyErr == nil {
			b.c.bodyErr = err
		}
		b.c.mu.Unlock()
	}
	return n, err
}

// RetryAfter reads the wait a response asks for: retry-after-ms
// (milliseconds, sent by OpenAI and Azure), else Retry-After (seconds or
// an HTTP date).
func RetryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	return ParseRetryAfter(h.Get("Retry-After"), now)
}

// ParseRetryAfter reads a Retry-After value: delay-seconds (fractions
// accepted) or an HTTP date, relative to now (a past date is 0).
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s < 0 || s > 1e9 {
			return 0, false
		}
		return time.Duration(s * float64(time.Second)), true
	}
	if t, err := http.ParseTime(v); err == nil {
		return max(t.Sub(now), 0), true
	}
	return 0, false
}

// KindForStatus classifies an HTTP error status: 429 is rate limited;
// 401 and 403 auth; 408 a timeout; 5xx (and Anthropic's 529 overloaded)
// a server failure; any other 4xx an invalid request.
func KindForStatus(status int) llm.ErrorKind {
	switch {
	case status == http.StatusTooManyRequests:
		return llm.KindRateLimited
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		return llm.KindAuth
	case status == http.StatusRequestTimeout:
		return llm.KindTimeout
	case status >= 500:
		return llm.KindServer
	case status >= 400:
		return llm.KindInvalidRequest
	default:
		return llm.KindInvalidReply
	}
}

// Redactor removes secrets (API keys, tokens) from text.
type Redactor struct{ secrets []string }

// Redacted replaces each secret in text.
const Redacted = "[REDACTED]"

// NewRedactor returns a Redactor for the given secrets; empty ones and
// ones shorter than 4 bytes (which would mangle ordinary text) are
// ignored.
func NewRedactor(secrets ...string) Redactor {
	var r Redactor
	for _, s := range secrets {
		if len(s) >= 4 {
			r.secrets = append(r.secrets, s)
		}
	}
	return r
}

// String returns s with every secret replaced by [Redacted].
func (r Redactor) String(s string) string {
	for _, k := range r.secrets {
		s = strings.ReplaceAll(s, k, Redacted)
	}
	return s
}

// Msg returns server text fit for an error message: redacted, spaces
// collapsed, at most [MaxMsg] bytes.
func (r Redactor) Msg(s string) string {
	s = strings.Join(strings.Fields(r.String(s)), " ")
	if len(s) > MaxMsg {
		s = s[:MaxMsg] + "..."
	}
	return s
}

// StatusError is the typed error for an HTTP error status. msg is the
// server's message (redacted here).
func StatusError(status int, retryAfter time.Duration, msg string, r Redactor) *llm.Error {
	e := &llm.Error{Kind: KindForStatus(status), Status: status, Msg: r.Msg(msg)}
	if e.Kind.Retryable() {
		e.RetryAfter = retryAfter
	}
	return e
}

// SafeURL returns u as text without user info or query (which may carry
// credentials on some servers).
func SafeURL(u *url.URL) string {
	if u == nil {
		return ""
	}
	c := *u
	c.User, c.RawQuery, c.ForceQuery, c.Fragment, c.RawFragment = nil, "", false, "", ""
	return c.String()
}

// SafeURLString is [SafeURL] for text; unparsable text is dropped.
func SafeURLString(s string) string {
	u, err := url.Parse(s)
	if err != nil {
		return "(unparsable url)"
	}
	return SafeURL(u)
}

// ErrNoResponse is the cause of a transport failure whose details were
// dropped because they could not be made safe to print.
var ErrNoResponse = errors.New("no response")

// TransportError classifies a failure that produced no usable HTTP status:
// the context's deadline or a network timeout is KindTimeout, cancellation
// KindCancelled, anything else KindTransport. URLs lose user info and
// query, and secrets are redacted.
func TransportError(ctx context.Context, err error, r Redactor) *llm.Error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		if errors.Is(ctxErr, context.DeadlineExceeded) {
			return &llm.Error{Kind: llm.KindTimeout, Msg: "model call timed out", Err: context.DeadlineExceeded}
		}
		return &llm.Error{Kind: llm.KindCancelled, Msg: "model call cancelled", Err: context.Canceled}
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return &llm.Error{Kind: llm.KindTimeout, Msg: "model call timed out: " + r.Msg(safeErrText(err)), Err: context.DeadlineExceeded}
	}
	return &llm.Error{Kind: llm.KindTransport, Msg: r.Msg(safeErrText(err)), Err: ErrNoResponse}
}

// safeErrText is err's text with any URL in a *url.Error made safe.
func safeErrText(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		return fmt.Sprintf("%s %s: %v", ue.Op, SafeURLString(ue.URL), ue.Err)
	}
	return err.Error()
}
