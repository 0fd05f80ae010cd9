package campaign

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
)

// TestKVStoreWaitsForJetStream: a campaign member that starts with one
// node of a new 3-node NATS cluster up (JetStream has no meta leader
// yet) waits for the bucket instead of failing, and opens it once the
// other nodes are up.
func TestKVStoreWaitsForJetStream(t *testing.T) {
	ports := queuetest.FreePorts(t, 3)
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	node := func(i int) *queue.Embedded {
		e, err := queue.StartEmbedded(queue.EmbeddedOptions{
			StoreDir: t.TempDir(), Listen: true, Port: -1, ServerName: fmt.Sprintf("kv%d", i),
			Cluster: &queue.ClusterOptions{Name: "kvwait", Port: ports[i], Routes: routes},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Shutdown)
		return e
	}
	first := node(0)
	nc, err := first.Connect("member")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		s, err := NewKVStore(t.Context(), js, "waits", 1)
		if err == nil {
			_, err = s.List(t.Context())
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("NewKVStore returned %v with one node of three up (no meta leader): want it to wait", err)
	case <-time.After(3 * time.Second):
	}
	node(1)
	node(2)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("NewKVStore once the cluster has a meta leader: %v", err)
		}
	case <-time.After(90 * time.Second):
		t.Fatal("NewKVStore still waits with the three nodes up")
	}
}
