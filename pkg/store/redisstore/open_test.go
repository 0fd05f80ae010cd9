package redisstore_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/skillfleet/skillfleet/pkg/store/redisstore"
	"github.com/skillfleet/skillfleet/pkg/store/storetest"
)

// TestOpen checks that Open connects to a running server and logs so, and
// that a server that is down gives a store (which reconnects later) and a
// warning, not an error; go-redis's own dial messages go to debug.
func TestOpen(t *testing.T) {
	t.Cleanup(func() { redis.SetLogger(storetest.QuietRedisLogger{}) })
	srv := storetest.RedisServer(t)
	var buf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo}))
	st, err := redisstore.Open(context.Background(), redisstore.Options{Addr: srv.Addr()}, log)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if !strings.Contains(buf.String(), "shared store connected") {
		t.Fatalf("log = %q, want the connected line", buf.String())
	}

	// A port nothing listens on.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	_ = ln.Close()
	buf.Reset()
	down, err := redisstore.Open(context.Background(), redisstore.Options{Addr: addr}, log)
	if err != nil {
		t.Fatalf("Open of a server that is down: %v, want a store", err)
	}
	defer down.Close()
	if s := buf.String(); !strings.Contains(s, "level=WARN") || !strings.Contains(s, "shared store not reachable yet") || strings.Contains(s, "redis client") {
		t.Fatalf("log = %q, want one warning and go-redis's lines below info", s)
	}

	if _, err := redisstore.Open(context.Background(), redisstore.Options{URL: "http://x"}, log); err == nil {
		t.Fatal("Open of a URL that is not redis:// gave no error")
	}
}
