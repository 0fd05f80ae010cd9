package fleet

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/worker"
)

// TestWorkerStoppedWhileWaitingForConsumersEndsCleanly: a worker process
// on a NATS no coordinator has used yet waits for the task consumers; a
// stop then (SIGTERM: its context ends) is a clean exit, not an error.
func TestWorkerStoppedWhileWaitingForConsumersEndsCleanly(t *testing.T) {
	srv, err := queue.StartEmbedded(queue.EmbeddedOptions{StoreDir: t.TempDir(), Listen: true})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Shutdown()
	ctx, cancel := context.WithCancel(t.Context())
	var logs lockedBuffer
	done := make(chan error, 1)
	go func() {
		done <- RunProcess(ctx, Process{
			Worker:  worker.Config{Concurrency: 1, OptimizerConcurrency: 1, MaxDeliver: 3, DrainTimeout: time.Second},
			NATSURL: srv.URL(), Logger: slog.New(slog.NewTextHandler(&logs, nil)), Out: &bytes.Buffer{},
		})
	}()
	// Stopped once it has said it waits for the consumers.
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(logs.String(), "task consumers not found yet") {
		if time.Now().After(deadline) {
			t.Fatalf("the worker never waited for consumers:\n%s", logs.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("a worker stopped while waiting for consumers returned %v, want nil (exit 0)", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the worker did not stop")
	}
}

// lockedBuffer is a log sink the test reads while the worker writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
