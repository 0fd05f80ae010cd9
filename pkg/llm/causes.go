package llm

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
)

// Causes of a failed model-call attempt, the keys of
// [Response].FailedCauses and of the run's retry-cause counts.
const (
	CauseRateLimited    = "rate_limited"    // 429
	CauseTimeout        = "timeout"         // the call's own timeout (model.timeout) or the caller's deadline
	CauseStall          = "stall"           // no reply within the adaptive stall deadline: abandoned
	CauseServer5xx      = "server_5xx"      // a 5xx answer
	CauseTransport      = "transport"       // connection refused, reset or dropped
	CauseInvalidReply   = "invalid_reply"   // a reply that could not be used
	CauseAuth           = "auth"            // 401/403
	CauseInvalidRequest = "invalid_request" // 4xx other than 429
	CauseHedged         = "hedged"          // the slower of two hedged attempts, cancelled
	CauseCancelled      = "cancelled"       // cut off by the caller
	CauseOther          = "other"
)

// ErrStalled is the cause of an attempt abandoned because no reply came
// within its stall deadline; [CauseOf] reports it as [CauseStall].
var ErrStalled = errors.New("no reply within the stall deadline")

// ErrHedgeLost is the cause of a hedged attempt cancelled because the
// other attempt answered first.
var ErrHedgeLost = errors.New("the other hedged attempt answered first")

// CauseOf names why a call failed (one of the Cause constants).
func CauseOf(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, ErrStalled):
		return CauseStall
	case errors.Is(err, ErrHedgeLost):
		return CauseHedged
	}
	var e *Error
	if errors.As(err, &e) && e.Kind == KindServer && e.Status != 0 && e.Status < http.StatusInternalServerError {
		return CauseOther
	}
	switch KindOf(err) {
	case KindRateLimited:
		return CauseRateLimited
	case KindTimeout:
		return CauseTimeout
	case KindServer:
		return CauseServer5xx
	case KindTransport:
		return CauseTransport
	case KindInvalidReply:
		return CauseInvalidReply
	case KindAuth:
		return CauseAuth
	case KindInvalidRequest:
		return CauseInvalidRequest
	case KindCancelled:
		return CauseCancelled
	default:
		return CauseOther
	}
}

// StatusOf returns the HTTP status of err's [*Error], or 0.
func StatusOf(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Status
	}
	return 0
}

// AddCauses adds the counts of src to *dst, allocating it when needed.
func AddCauses(dst *map[string]int, src map[string]int) {
	for k, v := range src {
		if v == 0 {
			continue
		}
		if *dst == nil {
			*dst = map[string]int{}
		}
		(*dst)[k] += v
	}
}

type loggerKey struct{}

// WithLogger returns ctx carrying log, where the resilience layers log each
// failed attempt (cause, status, attempt; never prompt text or keys).
func WithLogger(ctx context.Context, log *slog.Logger) context.Context {
	return context.WithValue(ctx, loggerKey{}, log)
}

// LoggerFrom returns the logger [WithLogger] put in ctx, or a logger that
// discards everything.
func LoggerFrom(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(loggerKey{}).(*slog.Logger); ok && l != nil {
		return l
	}
	return slog.New(slog.DiscardHandler)
}

type stopKey struct{}

// WithStop returns ctx marked with a stop signal: the call in flight under
// ctx runs to its end (it is billed anyway, so its reply is kept), but no
// further attempt (retry or hedge) starts once stop is done. A worker uses
// it for a task cancelled while its call is in flight.
func WithStop(ctx context.Context, stop context.Context) context.Context {
	return context.WithValue(ctx, stopKey{}, stop)
}

// Stopped reports whether the stop signal [WithStop] put in ctx is done
// (or ctx itself is).
func Stopped(ctx context.Context) bool {
	if ctx.Err() != nil {
		return true
	}
	if s, ok := ctx.Value(stopKey{}).(context.Context); ok {
		return s.Err() != nil
	}
	return false
}

// StopDone returns the channel of the stop signal in ctx (nil if none).
func StopDone(ctx context.Context) <-chan struct{} {
	if s, ok := ctx.Value(stopKey{}).(context.Context); ok {
		return s.Done()
	}
	return nil
}
