package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
	"github.com/skillfleet/skillfleet/pkg/tlsconf/tlstest"
)

// syncBuffer is a log sink the gRPC server's goroutines write to.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// serveGRPC serves a health service with opts on loopback.
func serveGRPC(t *testing.T, opts []grpc.ServerOption) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	healthpb.RegisterHealthServer(srv, health.NewServer())
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return ln.Addr().String()
}

// call makes one call with the worker's dial options for files.
func call(t *testing.T, addr string, files grpcClientTLS) error {
	t.Helper()
	opts, err := files.dialOptions()
	if err != nil {
		t.Fatal(err)
	}
	cc, err := grpc.NewClient(addr, opts...)
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err = healthpb.NewHealthClient(cc).Check(ctx, &healthpb.HealthCheckRequest{})
	return err
}

// TestTLSMismatchHints: a worker without TLS against a TLS coordinator
// gets, in its call's error, the flag to give it, and the coordinator
// logs that a client came without TLS (once, however many come); a worker
// with TLS against a plaintext coordinator is told the coordinator serves
// plaintext; matching sides get no hint.
func TestTLSMismatchHints(t *testing.T) {
	b := tlstest.Generate(t, t.TempDir(), "127.0.0.1", "localhost")
	var logs syncBuffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	opts, err := grpcServerTLS{cert: b.ServerCert, key: b.ServerKey}.options(log)
	if err != nil {
		t.Fatal(err)
	}
	tlsAddr := serveGRPC(t, opts)

	for range 3 {
		err := call(t, tlsAddr, grpcClientTLS{})
		if err == nil || !strings.Contains(err.Error(), "--coordinator-ca") {
			t.Fatalf("plaintext worker against TLS: %v, want the --coordinator-ca hint", err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(logs.String(), "without TLS") && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if got := strings.Count(logs.String(), "without TLS"); got != 1 || !strings.Contains(logs.String(), "--coordinator-ca") {
		t.Errorf("coordinator log has %d warnings, want one naming --coordinator-ca:\n%s", got, logs.String())
	}
	if err := call(t, tlsAddr, grpcClientTLS{ca: b.CA}); err != nil {
		t.Errorf("TLS worker against TLS: %v", err)
	}

	plainAddr := serveGRPC(t, nil)
	if err := call(t, plainAddr, grpcClientTLS{ca: b.CA}); err == nil || !strings.Contains(err.Error(), "serves plaintext") {
		t.Errorf("TLS worker against plaintext: %v, want the plaintext hint", err)
	}
	if err := call(t, plainAddr, grpcClientTLS{}); err != nil {
		t.Errorf("plaintext worker against plaintext: %v", err)
	}
}

// TestCoordinatorNATSGiveUp: a coordinator whose NATS goes away stops its
// run once --nats-give-up has passed (checkpointed, exit 1) and says why,
// instead of waiting for NATS forever.
func TestCoordinatorNATSGiveUp(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a coordinator")
	}
	root := repoRoot(t)
	ns := queuetest.Start(t)
	dir := t.TempDir()
	args := []string{"coordinator", "--config", filepath.Join(root, "configs", "demo.yaml"), "--out", dir, "--no-fsync",
		"--nats", ns.URL(), "--nats-give-up", "2s", "--grpc-addr", "127.0.0.1:0",
		"--set", "env.skill_init=" + filepath.Join(root, "configs", "skills", "sim_demo_seed.md")}
	var stdout, stderr syncBuffer
	done := make(chan int, 1)
	go func() { done <- run(args, &stdout, &stderr) }()
	// Once the run is up (waiting for workers), NATS goes.
	for deadline := time.Now().Add(30 * time.Second); !strings.Contains(stderr.String(), "start workers with"); {
		if time.Now().After(deadline) {
			t.Fatalf("the coordinator did not start:\n%s", stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	ns.Shutdown()
	lost := time.Now()
	select {
	case code := <-done:
		if code == exitOK || !strings.Contains(stderr.String(), "NATS unreachable past --nats-give-up") || !strings.Contains(stderr.String(), "re-run the same command to resume") {
			t.Errorf("exit %d:\n%s", code, stderr.String())
		}
		if waited := time.Since(lost); waited < 2*time.Second {
			t.Errorf("gave up after %v, before --nats-give-up 2s", waited)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the coordinator still runs a minute after NATS went:\n%s", stderr.String())
	}
}
