package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// runDemoAgainst runs the all-in-one demo against the sim-llm at url and
// returns its wall time.
func runDemoAgainst(t *testing.T, dir, url string, extra ...string) time.Duration {
	t.Helper()
	root := repoRoot(t)
	args := append(append([]string{"train"}, demoArgs(root, url)...), "--out", dir, "--workers", "2")
	began := time.Now()
	p := start(t, append(args, extra...)...)
	select {
	case err := <-p.done:
		if err != nil {
			t.Fatalf("train: %v\n%s", err, p.stderr.String())
		}
	case <-time.After(5 * time.Minute):
		t.Fatalf("train did not finish in 5 minutes\n%s", p.stderr.String())
	}
	return time.Since(began)
}

// TestStalledCallsDoNotHoldTheRun: with 0.5% of calls accepted and never
// answered, the demo at 300 ms per call decides exactly as an undisturbed
// run, in less than twice its wall time; every stall is abandoned at its
// deadline, retried and counted as a stall, and the accounts still equal
// what the sim-llm billed.
func TestStalledCallsDoNotHoldTheRun(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo twice")
	}
	clean := simServer(t, "--latency", "300ms")
	stalling := simServer(t, "--latency", "300ms", "--stall-rate", "0.005", "--fault-seed", "3")
	ref, dir := filepath.Join(t.TempDir(), "ref"), filepath.Join(t.TempDir(), "stalls")
	undisturbed := runDemoAgainst(t, ref, clean)
	disturbed := runDemoAgainst(t, dir, stalling)
	st := settledBill(t, stalling)
	tok := tokenTotals(t, dir)
	t.Logf("undisturbed %s; with %d stalls in %d requests %s (ratio %.2f); tokens.json causes %+v",
		undisturbed.Round(time.Millisecond), st.Faults["stall"], st.Requests, disturbed.Round(time.Millisecond),
		disturbed.Seconds()/undisturbed.Seconds(), tok.Causes)
	if st.Faults["stall"] == 0 {
		t.Fatal("no request stalled: the test shows nothing")
	}
	for _, f := range []string{"best_skill.md", "events.jsonl"} {
		if !bytes.Equal(readFile(t, filepath.Join(ref, f)), readFile(t, filepath.Join(dir, f))) {
			t.Errorf("%s differs from the undisturbed run's", f)
		}
	}
	if disturbed >= 2*undisturbed {
		t.Errorf("with stalls the run took %s, not less than twice the undisturbed %s", disturbed, undisturbed)
	}
	if tok.Causes.Stall != st.Faults["stall"] {
		t.Errorf("tokens.json counts %d stalls, the sim-llm stalled %d requests", tok.Causes.Stall, st.Faults["stall"])
	}
	checkBill(t, dir, stalling)
}

// TestInjectedFaultsShowRetryCauses: 500s, dropped connections and stalls
// appear, each under its cause and in the exact number injected, in
// tokens.json and in `skillfleet report`.
func TestInjectedFaultsShowRetryCauses(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo")
	}
	url := simServer(t, "--latency", "100ms", "--fault-500", "0.05", "--fault-drop", "0.03", "--stall-rate", "0.005", "--fault-seed", "5")
	dir := filepath.Join(t.TempDir(), "run")
	runDemoAgainst(t, dir, url)
	st := settledBill(t, url)
	tok := tokenTotals(t, dir)
	t.Logf("sim-llm faults %v; tokens.json causes %+v", st.Faults, tok.Causes)
	c := tok.Causes
	if c.Server5xx != st.Faults["server_error"] || c.Transport != st.Faults["drop"] || c.Stall != st.Faults["stall"] {
		t.Errorf("tokens.json causes %+v, want server_5xx %d, transport %d, stall %d as injected",
			c, st.Faults["server_error"], st.Faults["drop"], st.Faults["stall"])
	}
	if c.Server5xx == 0 || c.Transport == 0 {
		t.Fatalf("faults %v: too few injected to show anything", st.Faults)
	}
	checkBill(t, dir, url)
	out, err := exec.Command(binary, "report", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("report: %v\n%s", err, out)
	}
	line := ""
	for _, l := range strings.Split(string(out), "\n") {
		if strings.HasPrefix(l, "failed and retried call attempts by cause:") {
			line = l
		}
	}
	for _, want := range []string{"server_5xx " + strconv.FormatInt(c.Server5xx, 10), "transport " + strconv.FormatInt(c.Transport, 10)} {
		if !strings.Contains(line, want) {
			t.Errorf("report's cause line %q lacks %q\n%s", line, want, out)
		}
	}
}

// TestSimLLMRefusesBadFaultFlags: fault fractions outside [0, 1], two
// disagreeing stall flags, and a p99 below the median are refused at once.
func TestSimLLMRefusesBadFaultFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--stall-rate", "2"},
		{"--fault-500", "-0.1"},
		{"--stall-rate", "0.01", "--fault-stall", "0.02"},
		{"--latency-median", "1s", "--latency-p99", "500ms"},
	} {
		out, err := exec.Command(binary, append([]string{"sim-llm", "--addr", "127.0.0.1:0"}, args...)...).CombinedOutput()
		if err == nil || !strings.Contains(string(out), "sim-llm: --") {
			t.Errorf("sim-llm %v: err %v, output %q; want a refusal naming the flag", args, err, out)
		}
	}
}
