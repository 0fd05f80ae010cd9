package storetest

import "context"

// QuietRedisLogger discards go-redis's log lines (dial failures are
// expected in tests that kill the server). go-redis has one process-wide
// logger, so install it from TestMain: redis.SetLogger(storetest.QuietRedisLogger{}).
type QuietRedisLogger struct{}

// Printf discards the line.
func (QuietRedisLogger) Printf(context.Context, string, ...any) {}
