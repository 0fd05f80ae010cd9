package exec_test

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/backends/exec"
	"github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// cutWriter passes the first limit bytes of a reply's body on and then
// drops the connection: the client sees a stream (or a body) broken off
// in the middle.
type cutWriter struct {
	http.ResponseWriter
	limit, n int
}

func (w *cutWriter) Write(p []byte) (int, error) {
	if w.n+len(p) > w.limit {
		p = p[:w.limit-w.n]
		_, _ = w.ResponseWriter.Write(p)
		if f, ok := w.ResponseWriter.(http.Flusher); ok {
			f.Flush()
		}
		panic(http.ErrAbortHandler)
	}
	w.n += len(p)
	return w.ResponseWriter.Write(p)
}

func (w *cutWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

// TestMoreAgentsRealBrokenStream runs the real Copilot CLI, pi and
// opencode against a sim-llm whose every model reply breaks off after
// its first bytes (the connection dropped in the middle of the
// server-sent events): whatever the CLI makes of it, retries included,
// the call is a typed failure, never a reply to score.
func TestMoreAgentsRealBrokenStream(t *testing.T) {
	for _, agent := range []string{exec.AgentCopilot, exec.AgentPi, exec.AgentOpencode} {
		t.Run(agent, func(t *testing.T) {
			t.Parallel()
			s := sim.NewServer(sim.New(sim.Options{Epsilon: -1, HarmSpill: -1, LengthBudget: -1}), sim.ServerOptions{APIKey: plantedKey})
			var mu sync.Mutex
			var paths []string
			var cut atomic.Int64
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodPost {
					s.ServeHTTP(w, r)
					return
				}
				mu.Lock()
				paths = append(paths, r.URL.Path)
				mu.Unlock()
				cut.Add(1)
				s.ServeHTTP(&cutWriter{ResponseWriter: w, limit: 60}, r)
			}))
			t.Cleanup(ts.Close)
			c, _ := agentClient(t, agent, ts.URL+"/v1", func(cfg *exec.Config) {
				optOut(cfg)
				// opencode retries a broken stream five times, waiting longer
				// before each (up to half a minute): over a minute of its
				// call is that waiting, so on a busy machine the usual call
				// timeout ended it before its own failure (a timeout, which
				// is not what this test is about).
				if agent == exec.AgentOpencode {
					cfg.Timeout = 6 * time.Minute
				}
			})
			skill, q, _ := simTask(t)
			resp, err := c.Chat(t.Context(), simRequest(skill, q))
			mu.Lock()
			defer mu.Unlock()
			if cut.Load() == 0 {
				t.Fatalf("the CLI made no model request (reply %+v, %v)", resp, err)
			}
			if resp != nil || err == nil {
				t.Fatalf("a reply from a broken stream: %+v", resp)
			}
			kind := llm.KindOf(err)
			if kind != llm.KindInvalidReply && kind != llm.KindServer {
				t.Fatalf("%v (kind %q): want invalid_reply or server", err, kind)
			}
			var b bytes.Buffer
			b.WriteString(strings.Join(paths, " "))
			t.Logf("%s: %d requests broken off (%s): %s: %v", agent, cut.Load(), b.String(), kind, err)
		})
	}
}
