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
	return StartWith(t, queue.EmbeddedOptions{})
}

// StartWith is [Start] with TLS or authentication settings; StoreDir,
// Listen and Port are filled in.
func StartWith(t testing.TB, o queue.EmbeddedOptions) *queue.Embedded {
	t.Helper()
	o.StoreDir, o.Listen, o.Port = t.TempDir(), true, -1
	e, err := queue.StartEmbedded(o)
	if err != nil {
		t.Fatalf("start embedded nats: %v", err)
	}
	t.Cleanup(e.Shutdown)
	return e
}
