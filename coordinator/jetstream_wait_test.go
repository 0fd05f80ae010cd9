package coordinator_test

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/pkg/queue"
)

// freePorts returns n loopback ports free now.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	var ports []int
	var lns []net.Listener
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns = append(lns, ln)
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	for _, ln := range lns {
		_ = ln.Close()
	}
	return ports
}

// TestStartUpWaitsForTheMetaLeader: on a new 3-node NATS cluster of
// which one node is up (no JetStream meta leader: a new cluster elects
// its first once its nodes meet), start-up waits instead of failing; once
// the other nodes start and a meta leader is elected, the wait ends and
// the run directory's bucket can be made.
func TestStartUpWaitsForTheMetaLeader(t *testing.T) {
	ports := freePorts(t, 3)
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	node := func(i int) *queue.Embedded {
		e, err := queue.StartEmbedded(queue.EmbeddedOptions{
			StoreDir: t.TempDir(), Listen: true, ServerName: fmt.Sprintf("n%d", i),
			Cluster: &queue.ClusterOptions{Name: "wait", Port: ports[i], Routes: routes},
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(e.Shutdown)
		return e
	}
	first := node(0)
	nc, err := first.Connect("start-up")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	done := make(chan error, 1)
	go func() { done <- coordinator.WaitForJetStream(t.Context(), nc, nil) }()
	select {
	case err := <-done:
		t.Fatalf("WaitForJetStream returned %v with one node of three up (no meta leader)", err)
	case <-time.After(3 * time.Second):
	}
	node(1)
	node(2)
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("WaitForJetStream once a majority is up: %v", err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("WaitForJetStream still waits with the three nodes up")
	}
	// What failed with a timeout before the wait: the run directory.
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ep, err := coordinator.NewEndpoint(ctx, coordinator.EndpointOptions{NC: nc, Listener: ln})
	if err != nil {
		_ = ln.Close()
		t.Fatalf("an endpoint once the meta leader is elected: %v", err)
	}
	_ = ep.Close()
}

// TestWaitForJetStreamEndsWithItsContext: a wait that never sees a meta
// leader ends when its context does, saying what it waited for.
func TestWaitForJetStreamEndsWithItsContext(t *testing.T) {
	ports := freePorts(t, 3)
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	e, err := queue.StartEmbedded(queue.EmbeddedOptions{StoreDir: t.TempDir(), Listen: true, ServerName: "alone",
		Cluster: &queue.ClusterOptions{Name: "alone", Port: ports[0], Routes: routes}})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Shutdown()
	nc, err := e.Connect("start-up")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	err = coordinator.WaitForJetStream(ctx, nc, nil)
	if err == nil || !strings.Contains(err.Error(), "no meta leader") {
		t.Fatalf("WaitForJetStream with no majority = %v, want an error saying it waited for the meta leader", err)
	}
}
