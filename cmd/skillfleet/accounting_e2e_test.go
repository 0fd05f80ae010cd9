package main

import (
	"encoding/json"
	"net/http"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
	usagepkg "github.com/skillfleet/skillfleet/pkg/usage"
)

// billStats are the sim-llm's counters: what a provider would bill.
type billStats struct {
	Requests     int64            `json:"requests"`
	Served       int64            `json:"served"`
	Billed       int64            `json:"billed"`
	BilledInput  int64            `json:"billed_input_tokens"`
	BilledOutput int64            `json:"billed_output_tokens"`
	Abandoned    int64            `json:"abandoned"`
	RateLimited  int64            `json:"rate_limited"`
	Faults       map[string]int64 `json:"faults"`
}

func readBill(t *testing.T, url string) billStats {
	t.Helper()
	resp, err := http.Get(url + "/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s billStats
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// settledBill waits until the sim-llm's counters stop moving (a request
// whose client left is still finished and billed).
func settledBill(t *testing.T, url string) billStats {
	t.Helper()
	prev := readBill(t, url)
	for range 40 {
		time.Sleep(500 * time.Millisecond)
		s := readBill(t, url)
		if s.Requests == prev.Requests && s.Billed == prev.Billed {
			return s
		}
		prev = s
	}
	return prev
}

// tokenTotals reads the total of a run's tokens.json.
func tokenTotals(t *testing.T, dir string) usagepkg.Totals {
	t.Helper()
	var f struct {
		Total usagepkg.Totals `json:"total"`
	}
	if err := json.Unmarshal(readFile(t, filepath.Join(dir, "tokens.json")), &f); err != nil {
		t.Fatal(err)
	}
	return f.Total
}

// checkBill compares a run's accounts with what the sim-llm billed.
func checkBill(t *testing.T, dir, url string) {
	t.Helper()
	st := settledBill(t, url)
	tok := tokenTotals(t, dir)
	t.Logf("sim-llm: %d requests, %d billed (%d finished after the client left), %d in / %d out tokens; tokens.json: %d calls (%d failed), %d in / %d out",
		st.Requests, st.Billed, st.Abandoned, st.BilledInput, st.BilledOutput, tok.Calls, tok.FailedCalls, tok.Input, tok.Output)
	if tok.Calls != st.Requests {
		t.Errorf("tokens.json counts %d calls, the sim-llm received %d requests", tok.Calls, st.Requests)
	}
	if tok.Input != st.BilledInput || tok.Output != st.BilledOutput {
		t.Errorf("tokens.json counts %d in / %d out tokens, the sim-llm billed %d / %d", tok.Input, tok.Output, st.BilledInput, st.BilledOutput)
	}
}

// demoArgs are the demo's settings against an external sim-llm at url,
// with gate early stop on (rollouts cancelled while their calls are in
// flight).
func demoArgs(root, url string) []string {
	return []string{"--config", filepath.Join(root, "configs", "demo.yaml"), "--no-fsync", "--log-level", "warn",
		"--set", "env.skill_init=" + filepath.Join(root, "configs", "skills", "sim_demo_seed.md"),
		"--set", "runtime.sim_llm=false", "--set", "evaluation.early_stop=true",
		"--set", "model.optimizer_base_url=" + url, "--set", "model.target_base_url=" + url}
}

// TestEveryBilledCallIsAccountedAllInOne: `train` with gate early stop at
// 0.5 s per call; every request the sim-llm received is in tokens.json,
// and the tokens equal what it billed.
func TestEveryBilledCallIsAccountedAllInOne(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo")
	}
	url := simServer(t, "--latency", "500ms")
	root := repoRoot(t)
	dir := filepath.Join(t.TempDir(), "run")
	p := start(t, append(append([]string{"train"}, demoArgs(root, url)...), "--out", dir, "--workers", "2")...)
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("train: %v\n%s", err, p.stderr.String())
		}
	case <-time.After(4 * time.Minute):
		t.Fatal("train did not finish in 4 minutes")
	}
	checkBill(t, dir, url)
}

// TestEveryBilledCallIsAccountedTwoWorkerProcesses: the same with a
// coordinator and two worker processes, where a cancelled task's result
// crosses processes.
func TestEveryBilledCallIsAccountedTwoWorkerProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	url := simServer(t, "--latency", "500ms")
	root := repoRoot(t)
	ns := queuetest.Start(t)
	grpcAddr := freeAddr(t)
	dir := t.TempDir()
	coord := start(t, append(append([]string{"coordinator"}, demoArgs(root, url)...), "--out", dir,
		"--nats", ns.URL(), "--grpc-addr", grpcAddr)...)
	for range 2 {
		start(t, "worker", "--nats", ns.URL(), "--coordinator", grpcAddr, "--concurrency", "12", "--optimizer-concurrency", "8", "--log-level", "warn")
	}
	select {
	case err := <-coord.done:
		if err != nil {
			t.Fatalf("coordinator: %v\n%s", err, coord.stderr.String())
		}
	case <-time.After(4 * time.Minute):
		t.Fatalf("run did not finish in 4 minutes\n%s", coord.stderr.String())
	}
	checkBill(t, dir, url)
}

// TestBillUnderMalformedRepliesAndServerErrors: against a model server
// that answers 10% of requests with a 500 and 20% of optimizer requests
// with text that is not JSON, for three fault seeds, tokens.json counts
// exactly the calls and tokens the server billed, and every extra attempt
// under its cause: each 500 as server_5xx, each malformed reply as
// invalid_reply (the worker puts such a task back on the queue and reports
// what the attempt spent).
func TestBillUnderMalformedRepliesAndServerErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo three times")
	}
	for _, seed := range []string{"1", "2", "3"} {
		t.Run("seed"+seed, func(t *testing.T) {
			url := simServer(t, "--latency", "50ms", "--fault-500", "0.1", "--fault-malformed", "0.2", "--fault-seed", seed)
			dir := filepath.Join(t.TempDir(), "run")
			runDemoAgainst(t, dir, url)
			st := settledBill(t, url)
			tok := tokenTotals(t, dir)
			t.Logf("seed %s: sim-llm faults %v; tokens.json causes %+v", seed, st.Faults, tok.Causes)
			if st.Faults["malformed"] == 0 || st.Faults["server_error"] == 0 {
				t.Fatalf("faults %v: too few injected to show anything", st.Faults)
			}
			if tok.Causes.InvalidReply != st.Faults["malformed"] {
				t.Errorf("tokens.json counts %d invalid_reply attempts, the sim-llm sent %d malformed replies", tok.Causes.InvalidReply, st.Faults["malformed"])
			}
			if tok.Causes.Server5xx != st.Faults["server_error"] {
				t.Errorf("tokens.json counts %d server_5xx attempts, the sim-llm answered %d 500s", tok.Causes.Server5xx, st.Faults["server_error"])
			}
			checkBill(t, dir, url)
		})
	}
}

// TestBillWhenTheCoordinatorStalls: the demo on a coordinator and two
// worker processes against the fault server (10% 500s, 20% malformed
// optimizer replies), the coordinator stopped (SIGSTOP) for 7 s three
// times, as a machine under heavy load stalls it. A worker whose report
// goes unacknowledged past its 5 s attempt sends it again; the copy may
// come back DUPLICATE, or RETRY while the first is still being recorded,
// after which the worker sends the attempt's spend report and runs the
// task again. Every attempt is billed once by the server and must be
// counted once: tokens.json equals the bill.
func TestBillWhenTheCoordinatorStalls(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	url := simServer(t, "--latency", "50ms", "--fault-500", "0.1", "--fault-malformed", "0.2", "--fault-seed", "1")
	root := repoRoot(t)
	ns := queuetest.Start(t)
	grpcAddr := freeAddr(t)
	dir := t.TempDir()
	coord := start(t, append(append([]string{"coordinator"}, demoArgs(root, url)...), "--out", dir,
		"--nats", ns.URL(), "--grpc-addr", grpcAddr)...)
	for range 2 {
		start(t, "worker", "--nats", ns.URL(), "--coordinator", grpcAddr, "--concurrency", "12", "--optimizer-concurrency", "8", "--log-level", "warn")
	}
	exited := make(chan struct{})
	stalls := make(chan int, 1)
	go func() {
		n := 0
		defer func() { stalls <- n }()
		for range 3 {
			select {
			case <-exited:
				return
			case <-time.After(10 * time.Second):
			}
			if coord.cmd.Process.Signal(syscall.SIGSTOP) != nil {
				return
			}
			n++
			time.Sleep(7 * time.Second)
			_ = coord.cmd.Process.Signal(syscall.SIGCONT)
		}
	}()
	select {
	case err := <-coord.done:
		close(exited)
		if err != nil {
			t.Fatalf("coordinator: %v\n%s", err, coord.stderr.String())
		}
	case <-time.After(6 * time.Minute):
		close(exited)
		_ = coord.cmd.Process.Signal(syscall.SIGCONT)
		t.Fatalf("run did not finish in 6 minutes\n%s", coord.stderr.String())
	}
	n := <-stalls
	t.Logf("the coordinator was stopped %d times for 7 s", n)
	if n == 0 {
		t.Fatal("the run ended before the coordinator was stopped: nothing shown")
	}
	checkBill(t, dir, url)
}
