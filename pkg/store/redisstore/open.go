package redisstore

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"
)

// Open is [New] for a process that serves a run: it routes go-redis's own
// messages (one process-wide logger) to log at the debug level, and pings
// the server once. A server that is not up yet is not an error: the store
// reconnects, and what uses it degrades until then; the first ping's
// failure is logged as a warning that says what the outage means.
func Open(ctx context.Context, o Options, log *slog.Logger) (*Store, error) {
	// go-redis reports every failed dial on its own; the warning below says
	// what an outage means, so its lines go to the debug level.
	redis.SetLogger(slogAdapter{log})
	st, err := New(o)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	if err := st.Ping(pctx); err != nil {
		log.Warn("shared store not reachable yet; until it is, rate limits fall back to this process's share, the rollout cache misses and the run's lease waits", "store", st.String(), "err", err)
	} else {
		log.Info("shared store connected", "store", st.String())
	}
	return st, nil
}

// slogAdapter routes go-redis's internal messages to slog at debug level.
type slogAdapter struct{ log *slog.Logger }

func (r slogAdapter) Printf(ctx context.Context, format string, v ...any) {
	r.log.DebugContext(ctx, "redis client", "text", fmt.Sprintf(format, v...))
}
