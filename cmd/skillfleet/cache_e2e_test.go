package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
	"github.com/skillfleet/skillfleet/pkg/store"
	"github.com/skillfleet/skillfleet/pkg/store/redisstore"
	"github.com/skillfleet/skillfleet/pkg/store/storetest"
)

// simServer starts a `skillfleet sim-llm` process and returns its URL.
func simServer(t *testing.T, args ...string) string {
	t.Helper()
	sim := start(t, append([]string{"sim-llm", "--addr", "127.0.0.1:0"}, args...)...)
	line := sim.line(t, "sim-llm", 20*time.Second)
	return line[strings.Index(line, "http://"):]
}

// cacheRun runs the demo with both roles on external sim-llm servers and
// the shared store at redisURL; it returns the output.
func cacheRun(t *testing.T, out, redisURL, targetURL, optURL string, extra ...string) string {
	t.Helper()
	root := repoRoot(t)
	args := append([]string{"train", "--config", filepath.Join(root, "configs", "demo.yaml"), "--out", out,
		"--redis", redisURL, "--workers", "2", "--no-fsync", "--log-level", "warn",
		"--set", "env.skill_init=" + filepath.Join(root, "configs", "skills", "sim_demo_seed.md"),
		"--set", "runtime.sim_llm=false", "--set", "runtime.idle_fill=false",
		// Every gate runs to completion, so the first run measures every
		// rollout the second one asks for; and nothing is prefetched: which
		// prefetched rollouts a gate throws away depends on the machine's
		// timing (auto prefetches under a heavy tail), so a second run could
		// prefetch what the first did not.
		"--set", "evaluation.early_stop=false", "--set", "runtime.prefetch=off",
		"--set", "model.target_base_url=" + targetURL, "--set", "model.optimizer_base_url=" + optURL,
	}, extra...)
	cmd := exec.Command(binary, args...)
	cmd.Dir = t.TempDir()
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("train %s: %v\n%s", out, err, b)
	}
	return string(b)
}

var cacheLine = regexp.MustCompile(`rollout cache: (\d+) hits, (\d+) misses; (\d+) calls and (\S+) tokens saved`)

func cacheCounts(t *testing.T, out string) (hits, misses, saved int) {
	t.Helper()
	m := cacheLine.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no rollout cache line in output:\n%s", out)
	}
	hits, _ = strconv.Atoi(m[1])
	misses, _ = strconv.Atoi(m[2])
	saved, _ = strconv.Atoi(m[3])
	return hits, misses, saved
}

// targetCalls reads the target role's calls from a run's tokens.json.
func targetCalls(t *testing.T, dir string) (calls, savedCalls int64) {
	t.Helper()
	var tok struct {
		Rows []struct {
			Role       string `json:"role"`
			Calls      int64  `json:"calls"`
			SavedCalls int64  `json:"saved_calls"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(readFile(t, filepath.Join(dir, "tokens.json")), &tok); err != nil {
		t.Fatal(err)
	}
	for _, r := range tok.Rows {
		if r.Role == "target" {
			calls += r.Calls
			savedCalls += r.SavedCalls
		}
	}
	return calls, savedCalls
}

// TestRolloutCacheAcrossRuns: a second identical demo run on the same
// Redis makes no target call at all (counted by the target's sim-llm
// server), reports the calls and tokens it saved, and decides exactly as
// the first; a run whose benchmark config differs gets no hit.
func TestRolloutCacheAcrossRuns(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	rs := storetest.RedisServer(t, storetest.TCP())
	target, opt := simServer(t), simServer(t)
	base := t.TempDir()

	first := filepath.Join(base, "first")
	out1 := cacheRun(t, first, rs.URL(), target, opt)
	served1 := readSimStats(t, target).Served
	hits1, misses1, _ := cacheCounts(t, out1)
	t.Logf("first run: %d target calls served, cache %d hits %d misses", served1, hits1, misses1)
	if hits1 != 0 || misses1 == 0 || served1 == 0 {
		t.Fatalf("first run: %d hits, %d misses, %d target calls served; want 0 hits", hits1, misses1, served1)
	}

	second := filepath.Join(base, "second")
	out2 := cacheRun(t, second, rs.URL(), target, opt)
	if d := readSimStats(t, target).Served - served1; d != 0 {
		t.Errorf("second run made %d target calls; want 0 (every rollout was measured by the first)", d)
	}
	hits2, misses2, saved2 := cacheCounts(t, out2)
	t.Logf("second run: cache %d hits %d misses, %d calls saved", hits2, misses2, saved2)
	if misses2 != 0 || hits2 == 0 || saved2 == 0 {
		t.Errorf("second run: %d hits, %d misses, %d calls saved", hits2, misses2, saved2)
	}
	calls, saved := targetCalls(t, second)
	if calls != 0 || saved != int64(saved2) {
		t.Errorf("second run tokens.json: target calls %d, saved calls %d; want 0 and %d", calls, saved, saved2)
	}
	if !bytes.Equal(readFile(t, filepath.Join(first, "events.jsonl")), readFile(t, filepath.Join(second, "events.jsonl"))) {
		t.Error("the cached run decided differently from the first")
	}

	// A changed benchmark config (the sim ignores max_turns, so the items
	// and skills are the same) hashes differently: no stale hit.
	third := filepath.Join(base, "third")
	served2 := readSimStats(t, target).Served
	out3 := cacheRun(t, third, rs.URL(), target, opt, "--set", "env.max_turns=3")
	if hits3, _, _ := cacheCounts(t, out3); hits3 != 0 {
		t.Errorf("run with a changed benchmark config got %d cache hits; want 0", hits3)
	}
	if readSimStats(t, target).Served == served2 {
		t.Error("run with a changed benchmark config made no target call")
	}
}

// TestRedisRestartMidRunKeepsDecisions kills the redis-server a run
// depends on (rollout cache, leader lease) in the middle of the run and
// starts it again: the run completes with the same decisions as an
// undisturbed run.
func TestRedisRestartMidRunKeepsDecisions(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	// 20 ms per call stretches the run to several seconds, so the outage
	// falls in its middle.
	target, opt := simServer(t, "--latency", "20ms"), simServer(t, "--latency", "20ms")
	base := t.TempDir()
	calm := storetest.RedisServer(t, storetest.TCP())
	ref := filepath.Join(base, "ref")
	cacheRun(t, ref, calm.URL(), target, opt)

	rs := storetest.RedisServer(t, storetest.TCP())
	dir := filepath.Join(base, "restarted")
	root := repoRoot(t)
	before := readSimStats(t, target).Served
	p := start(t, "train", "--config", filepath.Join(root, "configs", "demo.yaml"), "--out", dir,
		"--redis", rs.URL(), "--workers", "2", "--no-fsync", "--log-level", "warn",
		"--set", "env.skill_init="+filepath.Join(root, "configs", "skills", "sim_demo_seed.md"),
		"--set", "runtime.sim_llm=false", "--set", "runtime.idle_fill=false", "--set", "evaluation.early_stop=false",
		"--set", "model.target_base_url="+target, "--set", "model.optimizer_base_url="+opt)
	// Kill Redis once the run is well under way, keep it down for two
	// seconds (lease renewals and cache calls fail), then start it again.
	deadline := time.Now().Add(2 * time.Minute)
	for readSimStats(t, target).Served-before < 300 {
		if time.Now().After(deadline) {
			t.Fatalf("run did not get going\n%s", p.stderr.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	rs.Kill()
	time.Sleep(2 * time.Second)
	rs.Restart()
	select {
	case <-p.done:
		t.Fatal("the run ended before Redis came back: the outage was not mid-run")
	default:
	}
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("run with a Redis restart: %v\n%s", err, p.stderr.String())
		}
	case <-time.After(3 * time.Minute):
		t.Fatalf("run did not finish\n%s", p.stderr.String())
	}
	if !bytes.Equal(readFile(t, filepath.Join(ref, "events.jsonl")), readFile(t, filepath.Join(dir, "events.jsonl"))) {
		t.Error("the run with a Redis restart decided differently from the undisturbed one")
	}
	// The outage was noticed (and survived), not missed.
	if !strings.Contains(p.stderr.String(), "unreachable") {
		t.Errorf("no warning about the unreachable store:\n%s", p.stderr.String())
	}
}

// TestWorkerRegistryAndRunCounters: worker processes announce themselves
// in the shared store (listed by the coordinator's /status), and the
// coordinator publishes the run's totals as shared counters equal to
// tokens.json.
func TestWorkerRegistryAndRunCounters(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	rs := storetest.RedisServer(t, storetest.TCP())
	sim := simServer(t, "--latency", "20ms")
	ns := queuetest.Start(t)
	root := repoRoot(t)
	dir := t.TempDir()
	grpcAddr, health := freeAddr(t), freeAddr(t)
	coord := start(t, "coordinator", "--config", filepath.Join(root, "configs", "demo.yaml"), "--out", dir,
		"--nats", ns.URL(), "--grpc-addr", grpcAddr, "--health-addr", health, "--redis", rs.URL(), "--no-fsync",
		"--set", "env.skill_init="+filepath.Join(root, "configs", "skills", "sim_demo_seed.md"),
		"--set", "runtime.sim_llm=false", "--set", "model.target_base_url="+sim, "--set", "model.optimizer_base_url="+sim)
	var workers []*proc
	for range 2 {
		workers = append(workers, start(t, "worker", "--nats", ns.URL(), "--coordinator", grpcAddr, "--redis", rs.URL(), "--concurrency", "16", "--log-level", "warn"))
	}
	// Both workers appear in the registry the coordinator's /status lists.
	seen := 0
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline) && seen < 2; time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get("http://" + health + "/status")
		if err != nil {
			continue
		}
		var st struct {
			Registry []struct {
				ID          string `json:"id"`
				Concurrency int    `json:"concurrency"`
			} `json:"registry"`
		}
		_ = json.NewDecoder(resp.Body).Decode(&st)
		resp.Body.Close()
		seen = 0
		for _, w := range st.Registry {
			if w.Concurrency == 32 { // 16 rollout + 16 optimizer slots
				seen++
			}
		}
	}
	if seen < 2 {
		t.Fatalf("the registry never listed both workers\n%s", coord.stderr.String())
	}
	select {
	case err := <-coord.done:
		if err != nil {
			t.Fatalf("coordinator: %v\n%s", err, coord.stderr.String())
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("run did not finish")
	}
	var tok struct {
		Total struct {
			Calls int64 `json:"calls"`
			Input int64 `json:"input_tokens"`
		} `json:"total"`
	}
	if err := json.Unmarshal(readFile(t, filepath.Join(dir, "tokens.json")), &tok); err != nil {
		t.Fatal(err)
	}
	run := strings.TrimSpace(string(readFile(t, filepath.Join(dir, "run_id"))))
	st, err := redisstore.New(redisstore.Options{URL: rs.URL()})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	calls, _ := st.Counters().Get(ctx, store.RunCounter(run, "calls"))
	in, _ := st.Counters().Get(ctx, store.RunCounter(run, "input_tokens"))
	if calls != tok.Total.Calls || in != tok.Total.Input || calls == 0 {
		t.Errorf("shared counters calls %d input %d; tokens.json %d / %d", calls, in, tok.Total.Calls, tok.Total.Input)
	}
	// A worker that stops leaves the registry at once.
	for _, w := range workers {
		_ = w.cmd.Process.Signal(os.Interrupt)
		<-w.done
	}
	if list, err := st.Registry().List(ctx); err != nil || len(list) != 0 {
		t.Errorf("registry after the workers stopped: %+v, %v", list, err)
	}
}
