package main

import (
	"encoding/json"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
	"github.com/skillfleet/skillfleet/pkg/store/storetest"
)

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

type simStats struct {
	Requests    int64 `json:"requests"`
	Served      int64 `json:"served"`
	RateLimited int64 `json:"rate_limited"`
}

func readSimStats(t *testing.T, url string) simStats {
	t.Helper()
	resp, err := http.Get(url + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s simStats
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestSharedRateLimitAcrossWorkerProcesses: four worker processes share
// one requests-per-minute budget through a real redis-server. The
// sim-llm, limited to the same rate, never has to refuse a request (it
// counts), and the run takes no more than 10% longer than the ideal: the
// calls beyond the first minute's burst, at the server's rate.
func TestSharedRateLimitAcrossWorkerProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	const rpm = 450
	// The clients ask for 98.5% of the server's limit: a request granted on
	// time may still reach the server a few milliseconds early or late.
	const clientRPM = "443"
	rs := storetest.RedisServer(t, storetest.TCP())
	sim := start(t, "sim-llm", "--addr", "127.0.0.1:0", "--rpm", "450")
	line := sim.line(t, "sim-llm", 20*time.Second)
	url := line[strings.Index(line, "http://"):]
	ns := queuetest.Start(t)
	grpcAddr := freeAddr(t)
	root, _ := filepath.Abs("../..")
	dir := t.TempDir()
	coord := start(t, "coordinator", "--config", filepath.Join(root, "configs", "demo.yaml"), "--out", dir,
		"--nats", ns.URL(), "--grpc-addr", grpcAddr, "--no-fsync", "--log-level", "warn",
		"--set", "env.skill_init="+filepath.Join(root, "configs", "skills", "sim_demo_seed.md"),
		"--set", "runtime.sim_llm=false",
		"--set", "model.optimizer_base_url="+url, "--set", "model.target_base_url="+url,
		// One model name: the sim-llm's limit covers every request, so both
		// roles must draw from one budget.
		"--set", "model.optimizer=sim", "--set", "model.target=sim",
		"--set", "model.optimizer_options.rpm="+clientRPM, "--set", "model.target_options.rpm="+clientRPM)
	for range 4 {
		start(t, "worker", "--nats", ns.URL(), "--coordinator", grpcAddr, "--redis", rs.URL(),
			"--concurrency", "16", "--optimizer-concurrency", "8", "--log-level", "warn")
	}

	// The run's span at the model: from its first request to its last.
	var first, last time.Time
	var seen int64
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(3 * time.Minute)
wait:
	for {
		select {
		case err := <-coord.done:
			if err != nil {
				t.Fatalf("coordinator: %v\n%s", err, coord.stderr.String())
			}
			break wait
		case <-tick.C:
			if n := readSimStats(t, url).Requests; n > seen {
				if seen == 0 {
					first = time.Now()
				}
				seen, last = n, time.Now()
			}
		case <-deadline:
			t.Fatalf("run did not finish in 3 minutes\n%s", coord.stderr.String())
		}
	}
	took := last.Sub(first)
	st := readSimStats(t, url)
	if st.RateLimited != 0 {
		t.Errorf("the sim-llm refused %d of %d requests: the workers exceeded the shared %d RPM", st.RateLimited, st.Requests, rpm)
	}
	if st.Requests <= rpm*7/5 {
		t.Fatalf("only %d requests: too few for the limit to matter (want > %d)", st.Requests, rpm*7/5)
	}
	ideal := time.Duration(float64(st.Requests-rpm) / rpm * float64(time.Minute))
	t.Logf("%d requests at %d RPM: took %s, ideal %s (ratio %.3f)", st.Requests, rpm, took.Round(time.Millisecond), ideal.Round(time.Millisecond), took.Seconds()/ideal.Seconds())
	if took > ideal*11/10 {
		t.Errorf("took %s, more than 10%% over the ideal %s", took, ideal)
	}
}
