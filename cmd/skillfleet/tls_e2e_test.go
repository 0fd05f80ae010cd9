package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
	"github.com/skillfleet/skillfleet/pkg/tlsconf/tlstest"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
	"github.com/skillfleet/skillfleet/worker"
)

// TestTrainingOverMutualTLS: a coordinator process serving gRPC with
// mutual TLS (certificates generated here) and two worker processes with
// client certificates finish the demo; a client without a certificate, or
// speaking plaintext, is refused.
func TestTrainingOverMutualTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	b := tlstest.Generate(t, t.TempDir(), "127.0.0.1", "localhost")
	root := repoRoot(t)
	ns := queuetest.Start(t)
	addr := freeAddr(t)
	dir := t.TempDir()
	coord := start(t, "coordinator", "--config", filepath.Join(root, "configs", "demo.yaml"), "--out", dir,
		"--nats", ns.URL(), "--grpc-addr", addr, "--no-fsync",
		"--grpc-tls-cert", b.ServerCert, "--grpc-tls-key", b.ServerKey, "--grpc-client-ca", b.CA,
		"--set", "env.skill_init="+filepath.Join(root, "configs", "skills", "sim_demo_seed.md"))

	// Refusals, checked against the live coordinator before any worker joins.
	refused := func(name string, files grpcClientTLS) {
		t.Helper()
		opts, err := files.dialOptions()
		if err != nil {
			t.Fatal(err)
		}
		cc, err := worker.Dial(addr, opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer cc.Close()
		for deadline := time.Now().Add(20 * time.Second); ; {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, err = pb.NewCoordinatorClient(cc).Register(ctx, &pb.RegisterRequest{WorkerId: "intruder"})
			cancel()
			// Wait until the coordinator listens; then the error must be TLS's.
			if err == nil || !strings.Contains(err.Error(), "connection refused") || time.Now().After(deadline) {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err == nil {
			t.Errorf("%s: Register succeeded", name)
		}
	}
	refused("no client certificate", grpcClientTLS{ca: b.CA, serverName: "127.0.0.1"})
	refused("plaintext", grpcClientTLS{})

	for range 2 {
		start(t, "worker", "--nats", ns.URL(), "--coordinator", addr, "--coordinator-ca", b.CA,
			"--tls-cert", b.ClientCert, "--tls-key", b.ClientKey, "--concurrency", "16", "--log-level", "warn")
	}
	select {
	case err := <-coord.done:
		if err != nil {
			t.Fatalf("coordinator: %v\n%s", err, coord.stderr.String())
		}
	case <-time.After(2 * time.Minute):
		t.Fatalf("the run did not finish over mTLS\n%s", coord.stderr.String())
	}
	if got := readFile(t, filepath.Join(dir, "best_skill.md")); len(got) == 0 {
		t.Error("no best_skill.md")
	}
}
