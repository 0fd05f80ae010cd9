package main

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/pkg/store"
)

// serveHealth serves /healthz (liveness: the hub answers) and /status
// (workers, pending and recorded tasks) on addr until ctx ends.
//
// With a shared store, /status also lists its worker registry: every
// worker process announcing itself there, whichever coordinator it serves.
func serveHealth(ctx context.Context, addr string, hub *coordinator.Hub, reg store.Registry, log *slog.Logger, x exposureFlags) (stop func(), err error) {
	ln, err := x.listenHTTP(addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("/status", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		st := map[string]any{
			"workers":  hub.RPC.Workers(30 * time.Second),
			"pending":  hub.D.Pending(),
			"recorded": hub.D.Recorded(),
		}
		if reg != nil {
			rctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
			list, err := reg.List(rctx)
			cancel()
			if err != nil {
				st["registry_error"] = err.Error()
			} else {
				st["registry"] = list
			}
		}
		_ = json.NewEncoder(w).Encode(st)
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("health endpoint stopped", "err", err)
		}
	}()
	log.Info("health endpoint listening", "addr", ln.Addr().String())
	return func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		_ = srv.Shutdown(sctx)
	}, nil
}
