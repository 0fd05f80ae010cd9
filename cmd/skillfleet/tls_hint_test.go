package main

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

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
