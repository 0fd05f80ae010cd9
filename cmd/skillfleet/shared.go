package main

import (
	"context"
	"log/slog"
	"os"
	"time"

	"github.com/skillfleet/skillfleet/pkg/store"
	"github.com/skillfleet/skillfleet/worker"
)

// announceWorker keeps a worker's entry in the shared registry fresh
// (who is alive, what it runs, its concurrency) until ctx ends, then
// removes it.
func announceWorker(ctx context.Context, reg store.Registry, w *worker.Worker, log *slog.Logger) {
	host, _ := os.Hostname()
	const every, ttl = 5 * time.Second, 15 * time.Second
	beat := func() {
		conc, inFlight, running := w.Snapshot()
		if len(running) > 64 {
			running = running[:64]
		}
		hctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		if err := reg.Heartbeat(hctx, store.WorkerInfo{ID: w.ID(), Host: host, Concurrency: conc, InFlight: inFlight, Running: running}, ttl); err != nil && ctx.Err() == nil {
			log.Debug("worker registry heartbeat failed", "err", err)
		}
	}
	beat()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			_ = reg.Remove(rctx, w.ID())
			cancel()
			return
		case <-t.C:
			beat()
		}
	}
}
