// Package queuetest starts real embedded nats-servers with JetStream for
// tests: one server, or a cluster of them.
package queuetest

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

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

// StartCluster runs n embedded nats-servers on loopback forming one
// JetStream cluster, each with its store in t.TempDir(), and waits until
// the cluster can place a stream on all n. The servers stop when the test
// ends.
func StartCluster(t testing.TB, n int) []*queue.Embedded {
	t.Helper()
	// Every node of a JetStream cluster needs its routes when it starts,
	// so the route ports are chosen first.
	ports := FreePorts(t, n)
	var routes []string
	for _, p := range ports {
		routes = append(routes, fmt.Sprintf("nats://127.0.0.1:%d", p))
	}
	nodes := make([]*queue.Embedded, n)
	errs := make(chan error, n)
	for i := range n {
		go func() {
			e, err := queue.StartEmbedded(queue.EmbeddedOptions{
				StoreDir: t.TempDir(), Listen: true, Port: -1,
				ServerName: fmt.Sprintf("n%d", i+1),
				Cluster:    &queue.ClusterOptions{Name: "skillfleet-test", Port: ports[i], Routes: routes},
			})
			if err != nil {
				err = fmt.Errorf("start cluster node %d: %w", i+1, err)
			}
			nodes[i] = e
			errs <- err
		}()
	}
	var firstErr error
	for range n {
		if err := <-errs; err != nil && firstErr == nil {
			firstErr = err
		}
	}
	for _, e := range nodes {
		if e != nil {
			t.Cleanup(e.Shutdown)
		}
	}
	if firstErr != nil {
		t.Fatal(firstErr)
	}
	var urls []string
	for _, e := range nodes {
		urls = append(urls, e.URL())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := WaitCluster(ctx, strings.Join(urls, ","), n); err != nil {
		t.Fatal(err)
	}
	return nodes
}

// WaitCluster waits until the JetStream cluster at urls (comma-separated)
// can place a stream of the given replicas: its meta leader is elected and
// that many servers have joined. It probes with a throwaway stream.
func WaitCluster(ctx context.Context, urls string, replicas int) error {
	nc, err := nats.Connect(urls, nats.MaxReconnects(-1), nats.RetryOnFailedConnect(true))
	if err != nil {
		return err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	const probe = "SKILLFLEET_CLUSTER_PROBE"
	for {
		pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		_, err := js.CreateStream(pctx, jetstream.StreamConfig{Name: probe, Subjects: []string{"skillfleet.cluster.probe"}, Storage: jetstream.MemoryStorage, Replicas: replicas})
		if err == nil {
			err = js.DeleteStream(pctx, probe)
		}
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("nats cluster at %s cannot place %d replicas: %w", urls, replicas, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// FreePorts returns n loopback TCP ports that were free a moment ago.
func FreePorts(t testing.TB, n int) []int {
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
