package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/skillfleet/skillfleet/pkg/store/redisstore"
	"github.com/skillfleet/skillfleet/pkg/tlsconf"
)

// openRedis connects to the shared store. The password comes from
// passwordFile or the environment (SKILLFLEET_REDIS_PASSWORD_FILE,
// SKILLFLEET_REDIS_PASSWORD), never from a flag value. A Redis that is not
// up yet is not an error: the store reconnects, and what uses it degrades
// until then; the first ping's failure is logged.
func openRedis(ctx context.Context, url, passwordFile string, tlsFiles *tlsconf.Files, log *slog.Logger) (*redisstore.Store, error) {
	// go-redis reports every failed dial on its own; our warnings say what
	// an outage means, so its lines go to the debug level.
	redis.SetLogger(redisLog{log})
	o := redisstore.Options{URL: url, PasswordFile: passwordFile}
	if tlsFiles != nil {
		c, err := tlsFiles.Client()
		if err != nil {
			return nil, fmt.Errorf("--redis-ca/--redis-tls-*: %w", err)
		}
		o.TLS = c
	}
	st, err := redisstore.New(o)
	if err != nil {
		return nil, fmt.Errorf("--redis: %w", err)
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

// redisLog routes go-redis's internal messages to slog at debug level.
type redisLog struct{ log *slog.Logger }

func (r redisLog) Printf(ctx context.Context, format string, v ...any) {
	r.log.DebugContext(ctx, "redis client", "text", fmt.Sprintf(format, v...))
}
