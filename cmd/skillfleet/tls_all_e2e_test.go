package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
	"github.com/redis/go-redis/v9"

	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
	"github.com/skillfleet/skillfleet/pkg/store/storetest"
	"github.com/skillfleet/skillfleet/pkg/tlsconf/tlstest"
)

// TestTrainingWithEverythingSecured: a coordinator process and two worker
// processes finish the demo with mutual TLS on gRPC, NATS over mutual TLS
// with nkey authentication, and Redis over TLS (verified against a custom
// CA) with a password — every certificate generated here, every secret
// from a file or the environment. Plaintext clients are refused by NATS
// and Redis, and neither secret appears in any output or the run dir.
func TestTrainingWithEverythingSecured(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	dir := t.TempDir()
	b := tlstest.Generate(t, dir, "127.0.0.1", "localhost")

	// NATS: mutual TLS and an nkey user.
	kp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	seed, _ := kp.Seed()
	pub, _ := kp.PublicKey()
	seedFile := filepath.Join(dir, "nats.nk")
	if err := os.WriteFile(seedFile, seed, 0o600); err != nil {
		t.Fatal(err)
	}
	natsTLS, err := b.ServerFiles().Server(true)
	if err != nil {
		t.Fatal(err)
	}
	ns := queuetest.StartWith(t, queue.EmbeddedOptions{TLS: natsTLS, Nkeys: []string{pub}})

	// Redis: TLS on its TCP port (the unix socket is only for the test
	// harness's readiness check), a password.
	const password = "planted-redis-password-7f3a"
	tlsPort := freeAddr(t)
	_, port, _ := strings.Cut(tlsPort, ":")
	rs := storetest.RedisServer(t, storetest.Args("--tls-port", port, "--bind", "127.0.0.1",
		"--tls-cert-file", b.ServerCert, "--tls-key-file", b.ServerKey, "--tls-ca-cert-file", b.CA,
		"--tls-auth-clients", "no", "--requirepass", password))
	_ = rs
	redisURL := "redis://" + tlsPort + "/0"
	t.Setenv("SKILLFLEET_REDIS_PASSWORD", password)

	// Plaintext clients are refused.
	if nc, err := nats.Connect(ns.URL(), nats.Timeout(2*time.Second), nats.MaxReconnects(0)); err == nil {
		nc.Close()
		t.Error("NATS accepted a plaintext client without credentials")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	plain := redis.NewClient(&redis.Options{Addr: tlsPort, Password: password, MaxRetries: -1})
	if err := plain.Ping(ctx).Err(); err == nil {
		t.Error("Redis answered a plaintext client on its TLS port")
	}
	plain.Close()
	cancel()

	root := repoRoot(t)
	run := t.TempDir()
	addr := freeAddr(t)
	secured := []string{"--nats", ns.URL(), "--nats-nkey", seedFile, "--nats-ca", b.CA,
		"--nats-tls-cert", b.ClientCert, "--nats-tls-key", b.ClientKey,
		"--redis", redisURL, "--redis-ca", b.CA}
	coord := start(t, append([]string{"coordinator", "--config", filepath.Join(root, "configs", "demo.yaml"), "--out", run,
		"--grpc-addr", addr, "--no-fsync", "--log-level", "info",
		"--grpc-tls-cert", b.ServerCert, "--grpc-tls-key", b.ServerKey, "--grpc-client-ca", b.CA,
		"--set", "env.skill_init=" + filepath.Join(root, "configs", "skills", "sim_demo_seed.md")}, secured...)...)
	var workers []*proc
	for range 2 {
		workers = append(workers, start(t, append([]string{"worker", "--coordinator", addr, "--coordinator-ca", b.CA,
			"--tls-cert", b.ClientCert, "--tls-key", b.ClientKey, "--concurrency", "16", "--log-level", "info"}, secured...)...))
	}
	select {
	case err := <-coord.done:
		if err != nil {
			t.Fatalf("coordinator: %v\n%s", err, coord.stderr.String())
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("the run did not finish with everything secured\n%s", coord.stderr.String())
	}
	if got := readFile(t, filepath.Join(run, "best_skill.md")); len(got) == 0 {
		t.Error("no best_skill.md")
	}
	if !strings.Contains(coord.stderr.String(), "shared store connected") {
		t.Errorf("the coordinator did not reach Redis over TLS:\n%s", coord.stderr.String())
	}
	// No secret in any output or file of the run.
	outputs := coord.stderr.String()
	for _, w := range workers {
		outputs += w.stderr.String()
	}
	for _, secret := range []string{password, string(seed)} {
		if strings.Contains(outputs, secret) {
			t.Errorf("a secret appears in process output")
		}
	}
	_ = filepath.Walk(run, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		data, _ := os.ReadFile(p)
		for _, secret := range []string{password, string(seed)} {
			if strings.Contains(string(data), secret) {
				t.Errorf("%s holds a secret", p)
			}
		}
		return nil
	})
}
