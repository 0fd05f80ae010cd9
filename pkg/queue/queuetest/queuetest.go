// Package queuetest starts a real embedded nats-server with JetStream for tests.
package queuetest

import (
	"testing"

	"github.com/skillfleet/skillfleet/pkg/queue"
)

// Start runs an embedded nats-server listening on a free loopback port with
// JetStream stored in t.TempDir(); it stops when the test ends.
func Start(t testing.TB) *queue.Embedded {
	t.Helper()
	e, err := queue.StartEmbedded(queue.EmbeddedOptions{StoreDir: t.TempDir(), Listen: true, Port: -1})
	if err != nil {
		t.Fatalf("start embedded nats: %v", err)
	}
	t.Cleanup(e.Shutdown)
	return e
}
