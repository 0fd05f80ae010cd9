package serve

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/pkg/store"
)

// Status is a coordinator's /healthz (liveness: the hub answers) and
// /status (workers, pending and recorded tasks). With a shared store
// (reg, may be nil), /status also lists its worker registry: every worker
// process announcing itself there, whichever coordinator it serves.
func Status(hub *coordinator.Hub, reg store.Registry) http.Handler {
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
	return mux
}
