package sim

import (
	"context"
	"time"
)

// Billing: like a provider, the server finishes a request whose client
// went away and bills it (Stats.Billed, Stats.Abandoned); only a stall,
// which never produces a reply, goes unbilled.

type baseCtxKey struct{}

// serverDone is closed when the server serving the request stops (never,
// for a server not started by [Serve]); a request's own context also ends
// when its client goes away.
func serverDone(reqCtx context.Context) <-chan struct{} {
	if b, ok := reqCtx.Value(baseCtxKey{}).(context.Context); ok {
		return b.Done()
	}
	return nil
}

// waitLatency waits d. A client that leaves does not cut the wait short,
// since the reply is produced and billed anyway; only the server's own
// shutdown does, and then it returns false.
func waitLatency(reqCtx context.Context, d time.Duration) bool {
	if d <= 0 {
		return true
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-serverDone(reqCtx):
		return false
	}
}

// bill counts a reply the server produced, with the usage it carries, and
// reports whether its client has gone away (the reply is then abandoned:
// billed, never delivered).
func (s *Server) bill(reqCtx context.Context, in, out int64) (gone bool) {
	gone = reqCtx.Err() != nil
	s.count("", func(st *Stats, _ *ModelStats) {
		st.Billed++
		st.BilledInputTokens += in
		st.BilledOutputTokens += out
		if gone {
			st.Abandoned++
		}
	})
	return gone
}
