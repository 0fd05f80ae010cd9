package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/internal/ui"
	"github.com/skillfleet/skillfleet/internal/ui/uitest"
	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
	"github.com/skillfleet/skillfleet/pkg/store/storetest"
)

// TestUIFleetRateLimitHeadroom: a coordinator with --ui and a worker
// process whose target model is limited to 300 requests and 2M tokens a
// minute and 6 calls in flight. The worker's heartbeats carry its limiter
// to the coordinator, and the Fleet page lists the endpoint with its
// limits and what is left: the demo's rollouts want more than 5 calls a
// second, so the request bucket is drawn down well below its 300.
func TestUIFleetRateLimitHeadroom(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	sim := simServer(t, "--latency", "50ms")
	root := repoRoot(t)
	ns := queuetest.Start(t)
	grpc, addr := freeAddr(t), freeAddr(t)
	coord := start(t, "coordinator", "--config", filepath.Join(root, "configs", "demo.yaml"), "--out", filepath.Join(t.TempDir(), "run"),
		"--nats", ns.URL(), "--grpc-addr", grpc, "--no-fsync", "--log-level", "warn", "--ui", addr,
		"--set", "env.skill_init="+filepath.Join(root, "configs", "skills", "sim_demo_seed.md"),
		"--set", "runtime.sim_llm=false", "--set", "runtime.idle_fill=false",
		"--set", "model.target_base_url="+sim, "--set", "model.optimizer_base_url="+sim,
		"--set", "model.target_options.rpm=300", "--set", "model.target_options.tpm=2000000", "--set", "model.target_options.max_concurrency=6")
	start(t, "worker", "--id", "w-limits", "--nats", ns.URL(), "--coordinator", grpc, "--concurrency", "16", "--log-level", "error")
	waitHTTP(t, "http://"+addr+"/", coord)
	// The Fleet page, open while the run goes on, follows it.
	var b *uitest.Browser
	if _, err := exec.LookPath("chromium"); err == nil {
		b = uitest.New(t)
		if err := b.Navigate("http://" + addr + "/fleet/"); err != nil {
			t.Fatal(err)
		}
	} else {
		t.Log("chromium not installed: the page itself is not checked")
	}

	var h ui.Headroom
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var v ui.FleetView
		if err := getJSON("http://"+addr+"/fleet/api", &v); err != nil {
			t.Fatalf("%v\n%s", err, coord.stderr.String())
		}
		found := false
		if v.Live != nil {
			for _, l := range v.Live.Limits {
				if l.RPM == 300 {
					h, found = l, true
				}
			}
		}
		// Wait for a heartbeat taken while the bucket was in use.
		if found && h.RequestsLeft != nil && *h.RequestsLeft < 150 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no worker reported the target's limits drawn down within 2 minutes; last fleet view %+v\n%s", v.Live, coord.stderr.String())
		}
		time.Sleep(time.Second)
	}
	t.Logf("fleet: %s %s at %s: %.0f of %d requests and %.0f of %d tokens left a minute, %d in flight, cap %d of %d",
		h.Worker, h.Model, h.Endpoint, *h.RequestsLeft, h.RPM, *h.TokensLeft, h.TPM, h.InFlight, h.Cap, h.MaxConcurrency)
	if h.Worker != "w-limits" || h.Backend == "" || h.Model == "" || !strings.HasPrefix(h.Endpoint, sim) {
		t.Errorf("headroom names %+v, want worker w-limits and the sim endpoint %s", h, sim)
	}
	if h.TPM != 2000000 || h.TokensLeft == nil || *h.TokensLeft > 2000000 || h.MaxConcurrency != 6 || h.Cap < 1 || h.Cap > 6 || h.InFlight > 6 || h.Shared {
		t.Errorf("headroom %+v: want the 2M-token limit with its level, a cap within 1..6 and at most 6 in flight, not shared", h)
	}
	if b == nil {
		return
	}
	if err := b.WaitFor(`Array.prototype.some.call(document.querySelectorAll("#limits tr"), function (tr) { return /w-limits/.test(tr.textContent) && / of 300/.test(tr.textContent); })`, 10*time.Second); err != nil {
		t.Fatal(err)
	}
	row, _ := uitest.Eval[string](b, `Array.prototype.map.call(document.querySelectorAll("#limits tr"), function (tr) { return tr.textContent; }).join(" | ")`)
	t.Logf("Fleet page: %s", row)
}

// TestUIFleetSharedRedisBuckets: with --redis, two worker processes draw
// the target's 300 requests a minute from one bucket in a real
// redis-server. Neither worker can tell its level, so the coordinator
// reads it from Redis: the Fleet page shows the shared bucket drawn down
// (below 150 of 300: a full bucket would mean a wrong key), the same
// level for both workers, and says that it is shared.
func TestUIFleetSharedRedisBuckets(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	rs := storetest.RedisServer(t)
	sim := simServer(t, "--latency", "50ms")
	root := repoRoot(t)
	ns := queuetest.Start(t)
	grpc, addr := freeAddr(t), freeAddr(t)
	coord := start(t, "coordinator", "--config", filepath.Join(root, "configs", "demo.yaml"), "--out", filepath.Join(t.TempDir(), "run"),
		"--nats", ns.URL(), "--grpc-addr", grpc, "--no-fsync", "--log-level", "warn", "--ui", addr, "--redis", rs.URL(),
		"--set", "env.skill_init="+filepath.Join(root, "configs", "skills", "sim_demo_seed.md"),
		"--set", "runtime.sim_llm=false", "--set", "runtime.idle_fill=false",
		"--set", "model.target_base_url="+sim, "--set", "model.optimizer_base_url="+sim,
		"--set", "model.target_options.rpm=300", "--set", "model.target_options.tpm=2000000")
	for _, id := range []string{"w-a", "w-b"} {
		start(t, "worker", "--id", id, "--nats", ns.URL(), "--coordinator", grpc, "--redis", rs.URL(), "--concurrency", "8", "--log-level", "error")
	}
	waitHTTP(t, "http://"+addr+"/", coord)
	var b *uitest.Browser
	if _, err := exec.LookPath("chromium"); err == nil {
		b = uitest.New(t)
		if err := b.Navigate("http://" + addr + "/fleet/"); err != nil {
			t.Fatal(err)
		}
	} else {
		t.Log("chromium not installed: the page itself is not checked")
	}

	var got map[string]ui.Headroom
	deadline := time.Now().Add(2 * time.Minute)
	for {
		var v ui.FleetView
		if err := getJSON("http://"+addr+"/fleet/api", &v); err != nil {
			t.Fatalf("%v\n%s", err, coord.stderr.String())
		}
		got = map[string]ui.Headroom{}
		drawn := 0
		if v.Live != nil {
			for _, l := range v.Live.Limits {
				if l.RPM == 300 {
					got[l.Worker] = l
					if l.RequestsLeft != nil && *l.RequestsLeft < 150 {
						drawn++
					}
				}
			}
		}
		if drawn == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the Fleet page did not show both workers' shared bucket drawn down within 2 minutes; last fleet view %+v\n%s", v.Live, coord.stderr.String())
		}
		time.Sleep(time.Second)
	}
	a, bw := got["w-a"], got["w-b"]
	for _, h := range []ui.Headroom{a, bw} {
		if !h.Shared || h.TokensLeft == nil || *h.TokensLeft > 2000000 || h.TPM != 2000000 || !strings.HasPrefix(h.Endpoint, sim) {
			t.Errorf("headroom %+v: want the shared buckets of the sim endpoint %s with both levels", h, sim)
		}
	}
	// One bucket, read once per refresh for both workers.
	if *a.RequestsLeft != *bw.RequestsLeft || *a.TokensLeft != *bw.TokensLeft {
		t.Errorf("the workers share one bucket, but the page shows %.1f and %.1f requests, %.0f and %.0f tokens left",
			*a.RequestsLeft, *bw.RequestsLeft, *a.TokensLeft, *bw.TokensLeft)
	}
	t.Logf("fleet: %s at %s: %.0f of %d requests and %.0f of %d tokens left a minute, shared in Redis",
		a.Model, a.Endpoint, *a.RequestsLeft, a.RPM, *a.TokensLeft, a.TPM)
	if b == nil {
		return
	}
	if err := b.WaitFor(`Array.prototype.filter.call(document.querySelectorAll("#limits tr"), function (tr) { return /w-[ab]/.test(tr.textContent) && /[0-9]+ of 300 \(shared in Redis\)/.test(tr.textContent); }).length === 2`, 10*time.Second); err != nil {
		row, _ := uitest.Eval[string](b, `Array.prototype.map.call(document.querySelectorAll("#limits tr"), function (tr) { return tr.textContent; }).join(" | ")`)
		t.Fatalf("%v; the page's limits: %s", err, row)
	}
}

func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return fmt.Errorf("GET %s: %w\n%s", url, err, body)
	}
	return nil
}
