package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/internal/serve"
	"github.com/skillfleet/skillfleet/pkg/queue"
	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
	"github.com/skillfleet/skillfleet/pkg/tlsconf"
	"github.com/skillfleet/skillfleet/pkg/tlsconf/tlstest"
)

// TestExposureCheck: every served endpoint beyond loopback without TLS is
// refused with one line naming the TLS flags and the --insecure-* flag;
// the insecure flag lets it start with a warning; loopback and TLS start
// silently; plaintext connections beyond loopback are warned about
// without printing credentials.
func TestExposureCheck(t *testing.T) {
	b := tlstest.Generate(t, t.TempDir(), "127.0.0.1", "localhost")
	mtls := grpcServerTLS{cert: b.ServerCert, key: b.ServerKey, clientCA: b.CA}
	httpTLS := tlsconf.Files{Cert: b.ServerCert, Key: b.ServerKey}
	for _, tc := range []struct {
		name    string
		x       exposureFlags
		e       serve.Exposure
		refuse  []string // substrings of the one-line error; nil = starts
		warn    []string // substrings of the warn log; nil = no warning
		notWarn string
	}{
		{name: "grpc on every interface", e: serve.Exposure{GRPCAddr: "0.0.0.0:0"},
			refuse: []string{"--grpc-addr 0.0.0.0:0 listens beyond loopback without mutual TLS", "--grpc-tls-cert, --grpc-tls-key and --grpc-client-ca", "--insecure-grpc"}},
		{name: "grpc bare port", e: serve.Exposure{GRPCAddr: ":7070"}, refuse: []string{"--grpc-addr :7070"}},
		{name: "grpc on a LAN address", e: serve.Exposure{GRPCAddr: "192.168.1.20:7070"}, refuse: []string{"--insecure-grpc"}},
		{name: "grpc server TLS without client certificates", e: serve.Exposure{GRPCAddr: "0.0.0.0:0", GRPCMutualTLS: grpcServerTLS{cert: b.ServerCert, key: b.ServerKey}.mutual()},
			refuse: []string{"without mutual TLS"}},
		{name: "grpc mutual TLS", e: serve.Exposure{GRPCAddr: "0.0.0.0:0", GRPCMutualTLS: mtls.mutual()}},
		{name: "grpc insecure flag", x: exposureFlags{insecure: serve.Insecure{GRPC: true}}, e: serve.Exposure{GRPCAddr: "[::]:0"},
			warn: []string{"level=WARN", "--insecure-grpc", "grpc_addr=[::]:0"}},
		{name: "grpc loopback", e: serve.Exposure{GRPCAddr: "127.0.0.1:0"}},
		{name: "grpc loopback v6", e: serve.Exposure{GRPCAddr: "[::1]:0"}},
		{name: "grpc localhost", e: serve.Exposure{GRPCAddr: "localhost:0"}},

		{name: "health on every interface", e: serve.Exposure{Health: "0.0.0.0:8080"},
			refuse: []string{"--health-addr 0.0.0.0:8080 listens beyond loopback without TLS", "--http-tls-cert and --http-tls-key", "--insecure-health"}},
		{name: "health insecure flag", x: exposureFlags{insecure: serve.Insecure{Health: true}}, e: serve.Exposure{Health: "0.0.0.0:8080"},
			warn: []string{"level=WARN", "--insecure-health", "addr=0.0.0.0:8080"}},
		{name: "health TLS", x: exposureFlags{http: httpTLS}, e: serve.Exposure{Health: "0.0.0.0:8080"}},
		{name: "health loopback", e: serve.Exposure{Health: "127.0.0.1:8080"}},

		{name: "metrics on every interface", e: serve.Exposure{Metrics: "0.0.0.0:9464"},
			refuse: []string{"--metrics-addr 0.0.0.0:9464 listens beyond loopback without TLS", "--http-tls-cert", "--insecure-metrics"}},
		{name: "metrics insecure flag", x: exposureFlags{insecure: serve.Insecure{Metrics: true}}, e: serve.Exposure{Metrics: "0.0.0.0:9464"}, warn: []string{"--insecure-metrics"}},
		{name: "metrics TLS", x: exposureFlags{http: httpTLS}, e: serve.Exposure{Metrics: "0.0.0.0:9464"}},
		{name: "metrics bare port binds loopback", e: serve.Exposure{Metrics: ":9464"}},
		{name: "metrics bare number binds loopback", e: serve.Exposure{Metrics: "9464"}},
		{name: "health insecure does not cover metrics", x: exposureFlags{insecure: serve.Insecure{Health: true}}, e: serve.Exposure{Health: "0.0.0.0:1", Metrics: "0.0.0.0:2"},
			refuse: []string{"--metrics-addr"}},

		{name: "http TLS key missing", x: exposureFlags{http: tlsconf.Files{Cert: b.ServerCert}}, e: serve.Exposure{Health: "0.0.0.0:8080"},
			refuse: []string{"--http-tls-cert and --http-tls-key go together"}},

		{name: "plaintext NATS beyond loopback", e: serve.Exposure{Peers: []serve.Peer{natsPeer("nats://alice:hunter2@10.1.2.3:4222", natsFlags{})}},
			warn: []string{"connecting beyond loopback without TLS", "to=NATS", "--nats-ca", "host=10.1.2.3"}, notWarn: "hunter2"},
		{name: "NATS list with one remote", e: serve.Exposure{Peers: []serve.Peer{natsPeer("nats://127.0.0.1:4222,nats://10.9.9.9:4222", natsFlags{})}},
			warn: []string{"host=10.9.9.9"}},
		{name: "NATS over tls://", e: serve.Exposure{Peers: []serve.Peer{natsPeer("tls://10.1.2.3:4222", natsFlags{})}}},
		{name: "NATS with --nats-ca", e: serve.Exposure{Peers: []serve.Peer{natsPeer("nats://10.1.2.3:4222", natsFlags{auth: queue.Auth{TLS: tlsconf.Files{CA: b.CA}}})}}},
		{name: "NATS on loopback", e: serve.Exposure{Peers: []serve.Peer{natsPeer("nats://127.0.0.1:4222", natsFlags{})}}},
		{name: "plaintext Redis beyond loopback", e: serve.Exposure{Peers: []serve.Peer{redisPeer(redisFlags{url: "redis://:s3cret@10.0.0.5:6379/0"})}},
			warn: []string{"connecting beyond loopback without TLS", "to=Redis", "rediss://", "host=10.0.0.5"}, notWarn: "s3cret"},
		{name: "Redis over rediss://", e: serve.Exposure{Peers: []serve.Peer{redisPeer(redisFlags{url: "rediss://10.0.0.5:6379/0"})}}},
		{name: "worker to a remote coordinator", e: workerExposure("", "", "nats://127.0.0.1:4222", natsFlags{}, redisFlags{}, "10.2.3.4:7070", grpcClientTLS{}),
			warn: []string{"connecting beyond loopback without TLS", `to="the coordinator"`, "--coordinator-ca", "host=10.2.3.4"}},
		{name: "worker to a coordinator over TLS", e: workerExposure("", "", "", natsFlags{}, redisFlags{}, "10.2.3.4:7070", grpcClientTLS{ca: b.CA})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			x := tc.x
			err := x.check(log, tc.e)
			if tc.refuse != nil {
				if err == nil {
					t.Fatal("started; want a refusal")
				}
				if strings.Contains(err.Error(), "\n") {
					t.Errorf("refusal is not one line: %q", err)
				}
				for _, s := range tc.refuse {
					if !strings.Contains(err.Error(), s) {
						t.Errorf("refusal %q lacks %q", err, s)
					}
				}
				return
			}
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if tc.warn == nil && logs.Len() > 0 {
				t.Errorf("unexpected log: %s", logs.String())
			}
			for _, s := range tc.warn {
				if !strings.Contains(logs.String(), s) {
					t.Errorf("log %q lacks %q", logs.String(), s)
				}
			}
			if tc.notWarn != "" && strings.Contains(logs.String(), tc.notWarn) {
				t.Errorf("log shows a credential: %s", logs.String())
			}
			if x.http.Enabled() && x.httpConf == nil {
				t.Error("--http-tls-* not loaded")
			}
		})
	}
}

// TestExposureRefusedBeforeAnything: train, coordinator and worker refuse
// an unprotected endpoint beyond loopback at once, with one line, before
// creating the run directory or connecting anywhere.
func TestExposureRefusedBeforeAnything(t *testing.T) {
	root := repoRoot(t)
	out := filepath.Join(t.TempDir(), "run")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"train", "--config", filepath.Join(root, "configs/demo.yaml"), "--out", out, "--grpc-addr", "0.0.0.0:0"}, "--insecure-grpc"},
		{[]string{"train", "--config", filepath.Join(root, "configs/demo.yaml"), "--out", out, "--health-addr", "0.0.0.0:0"}, "--insecure-health"},
		{[]string{"train", "--config", filepath.Join(root, "configs/demo.yaml"), "--out", out, "--metrics-addr", "0.0.0.0:0"}, "--insecure-metrics"},
		// The NATS address is never dialled: the refusal comes first.
		{[]string{"coordinator", "--config", filepath.Join(root, "configs/demo.yaml"), "--out", out, "--nats", "nats://127.0.0.1:1", "--grpc-addr", ":0"}, "--grpc-client-ca"},
		{[]string{"worker", "--nats", "nats://127.0.0.1:1", "--health-addr", "0.0.0.0:0"}, "--http-tls-cert"},
		{[]string{"worker", "--nats", "nats://127.0.0.1:1", "--metrics-addr", "0.0.0.0:0"}, "--insecure-metrics"},
	} {
		var stdout, stderr bytes.Buffer
		began := time.Now()
		code := run(tc.args, &stdout, &stderr)
		msg := strings.TrimSpace(stderr.String())
		if code != exitUsage || !strings.Contains(msg, tc.want) || strings.Count(msg, "\n") != 0 {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and one line naming %s", tc.args, code, msg, exitUsage, tc.want)
		}
		if d := time.Since(began); d > 5*time.Second {
			t.Errorf("%v: refused after %s", tc.args, d)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused run created its run directory")
	}
}

// TestExposureInsecureFlagsStart: with the explicit --insecure-* flags the
// demo runs to the end on every interface, and says so at warn level.
func TestExposureInsecureFlagsStart(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo")
	}
	root := repoRoot(t)
	t.Chdir(root)
	var stdout, stderr bytes.Buffer
	code := run([]string{"train", "--config", "configs/demo.yaml", "--out", t.TempDir(), "--no-fsync",
		"--grpc-addr", "0.0.0.0:0", "--insecure-grpc", "--health-addr", "0.0.0.0:0", "--insecure-health",
		"--metrics-addr", "0.0.0.0:0", "--insecure-metrics"}, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	for _, want := range []string{"--insecure-grpc", "--insecure-health", "--insecure-metrics"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("no warning about %s:\n%s", want, stderr.String())
		}
	}
}

// TestExposureTLSStarts: a coordinator on every interface with mutual TLS
// on gRPC and HTTPS on health and metrics starts and serves over TLS (and
// not in plaintext); a worker's health endpoint on every interface serves
// with --insecure-health.
func TestExposureTLSStarts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	b := tlstest.Generate(t, t.TempDir(), "127.0.0.1", "localhost")
	root := repoRoot(t)
	ns := queuetest.Start(t)
	port := func() string { _, p, _ := net.SplitHostPort(freeAddr(t)); return p }
	grpcPort, healthPort, metricsPort, workerHealth := port(), port(), port(), port()
	coord := start(t, "coordinator", "--config", filepath.Join(root, "configs", "demo.yaml"), "--out", t.TempDir(),
		"--nats", ns.URL(), "--no-fsync", "--grpc-addr", "0.0.0.0:"+grpcPort,
		"--grpc-tls-cert", b.ServerCert, "--grpc-tls-key", b.ServerKey, "--grpc-client-ca", b.CA,
		"--health-addr", "0.0.0.0:"+healthPort, "--metrics-addr", "0.0.0.0:"+metricsPort,
		"--http-tls-cert", b.ServerCert, "--http-tls-key", b.ServerKey,
		"--set", "env.skill_init="+filepath.Join(root, "configs", "skills", "sim_demo_seed.md"))

	pool := x509.NewCertPool()
	ca, err := os.ReadFile(b.CA)
	if err != nil {
		t.Fatal(err)
	}
	pool.AppendCertsFromPEM(ca)
	httpsClient := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	get := func(c *http.Client, url string) (string, error) {
		var err error
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			var resp *http.Response
			if resp, err = c.Get(url); err == nil {
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				return resp.Status + " " + string(body), nil
			}
			if !strings.Contains(err.Error(), "connection refused") {
				return "", err
			}
		}
		return "", err
	}
	if got, err := get(httpsClient, "https://127.0.0.1:"+healthPort+"/healthz"); err != nil || !strings.HasPrefix(got, "200 OK ok") {
		t.Fatalf("https /healthz = %q, %v\n%s", got, err, coord.stderr.String())
	}
	if got, err := get(httpsClient, "https://127.0.0.1:"+metricsPort+"/metrics"); err != nil || !strings.HasPrefix(got, "200 OK") {
		t.Errorf("https /metrics = %q, %v", got, err)
	}
	plain := &http.Client{Timeout: 5 * time.Second}
	if got, err := get(plain, "http://127.0.0.1:"+healthPort+"/healthz"); err == nil && strings.HasPrefix(got, "200") {
		t.Errorf("plaintext /healthz served: %q", got)
	}
	// gRPC completes a TLS handshake with a client certificate.
	cert, err := tls.LoadX509KeyPair(b.ClientCert, b.ClientKey)
	if err != nil {
		t.Fatal(err)
	}
	conn, err := tls.Dial("tcp", "127.0.0.1:"+grpcPort, &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}, NextProtos: []string{"h2"}})
	if err != nil {
		t.Fatalf("gRPC TLS handshake: %v", err)
	}
	conn.Close()
	if strings.Contains(coord.stderr.String(), "level=WARN") && strings.Contains(coord.stderr.String(), "insecure") {
		t.Errorf("TLS coordinator warns about insecure exposure:\n%s", coord.stderr.String())
	}

	start(t, "worker", "--nats", ns.URL(), "--coordinator", "127.0.0.1:"+grpcPort, "--coordinator-ca", b.CA,
		"--tls-cert", b.ClientCert, "--tls-key", b.ClientKey, "--log-level", "warn",
		"--health-addr", "0.0.0.0:"+workerHealth, "--insecure-health")
	if got, err := get(plain, "http://127.0.0.1:"+workerHealth+"/healthz"); err != nil || !strings.HasPrefix(got, "200 OK ok") {
		t.Errorf("worker /healthz = %q, %v", got, err)
	}
}
