package fleet

import (
	"log/slog"
	"net/url"
	"strings"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/pkg/store"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// SharedLimiter is the backends' limiter over a shared store's buckets:
// every process using the same store draws from the same per-minute
// budgets of a (backend, endpoint, model). When the store is unreachable
// each process falls back to a local share (the limit divided by share())
// with a warning.
func SharedLimiter(st store.Limiter, share func() int64, log *slog.Logger) *backends.Limiter {
	local := backends.NewLocalBuckets(nil)
	return backends.NewLimiter(store.NewFallbackLimiter(st, local, share, log), nil)
}

// limiterStatus reports a worker's limiter for its heartbeats.
func limiterStatus(l *backends.Limiter) func() []*pb.LimitStatus {
	return func() []*pb.LimitStatus {
		var out []*pb.LimitStatus
		for _, s := range l.Status() {
			ls := &pb.LimitStatus{Backend: s.Key.Backend, Endpoint: shownEndpoint(s.Key.Endpoint), Model: s.Key.Model,
				RequestsPerMin: s.Limits.RequestsPerMin, TokensPerMin: s.Limits.TokensPerMin,
				MaxConcurrency: int32(s.Limits.MaxConcurrency), ConcurrencyCap: int32(s.Cap), InFlight: int32(s.InFlight), Waiting: int32(s.Waiting),
				Shared: !s.LevelsKnown}
			if s.LevelsKnown {
				ls.RequestsLeft, ls.TokensLeft = s.RequestsLeft, s.TokensLeft
			}
			out = append(out, ls)
		}
		return out
	}
}

// endpointHidden stands for an endpoint that cannot be shown safely.
const endpointHidden = "(endpoint not shown)"

// endpointTrimmed marks an endpoint shown without parts of it (credentials,
// query, fragment): it no longer names the endpoint's rate buckets.
const endpointTrimmed = " (credentials or query not shown)"

// shownEndpoint is an endpoint as a worker reports it: safeEndpoint's
// form, marked when that dropped something, so that the coordinator does
// not look its shared buckets up under a name no worker draws from.
func shownEndpoint(e string) string {
	s := safeEndpoint(e)
	if s != e && s != endpointHidden {
		s += endpointTrimmed
	}
	return s
}

// safeEndpoint is an endpoint address without credentials, query or
// fragment, fit to show.
func safeEndpoint(e string) string {
	u, err := url.Parse(e)
	if err != nil || (u.Scheme == "" && u.Host == "") {
		if strings.ContainsAny(e, "@?") {
			return endpointHidden
		}
		return e
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}
