package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	simmodel "github.com/skillfleet/skillfleet/backends/sim"
)

// countingSim serves the simulated model over HTTP and counts the
// requests that reach it.
func countingSim(t *testing.T) (url string, calls *atomic.Int64) {
	t.Helper()
	calls = new(atomic.Int64)
	sim := simmodel.NewServer(simmodel.New(simmodel.Options{}), simmodel.ServerOptions{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		sim.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	return hs.URL + "/v1", calls
}

// TestEvalEstimateCallsNoModel: `eval --estimate` prints the evaluation's
// calls and writes nothing, and the model behind it sees no request; the
// same command without --estimate reaches that model, so the counter
// counts.
func TestEvalEstimateCallsNoModel(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an evaluation")
	}
	url, calls := countingSim(t)
	root := repoRoot(t)
	out := filepath.Join(t.TempDir(), "eval")
	args := []string{"eval", "--config", filepath.Join(root, "configs", "demo.yaml"), "--out", out, "--no-fsync",
		"--skill", filepath.Join(root, "configs", "skills", "sim_demo_seed.md"), "--baseline",
		"--set", "env.skill_init=" + filepath.Join(root, "configs", "skills", "sim_demo_seed.md"),
		"--set", "runtime.sim_llm=false", "--set", "model.target_base_url=" + url, "--set", "model.optimizer_base_url=" + url}
	var stdout, stderr bytes.Buffer
	if code := run(append(args, "--estimate"), &stdout, &stderr); code != exitOK {
		t.Fatalf("eval --estimate exit %d\n%s", code, stderr.String())
	}
	if n := calls.Load(); n != 0 {
		t.Fatalf("eval --estimate made %d model calls", n)
	}
	if _, err := os.Stat(out); !os.IsNotExist(err) {
		t.Errorf("eval --estimate wrote the run dir %s (stat: %v)", out, err)
	}
	// The demo's test split has 120 items; with --baseline three skills.
	for _, want := range []string{"split test (120 items) × 3 skills", "no_skill", "seed_skill", "total           360 calls"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("estimate lacks %q:\n%s", want, stdout.String())
		}
	}
	stdout.Reset()
	stderr.Reset()
	if code := run(args, &stdout, &stderr); code != exitOK {
		t.Fatalf("eval exit %d\n%s", code, stderr.String())
	}
	if calls.Load() == 0 {
		t.Fatal("the evaluation made no call to the counting server: the test cannot tell")
	}
	// Each skill's per-item predictions are in the eval dir.
	for _, name := range []string{"eval_no_skill", "eval_seed_skill", "eval_skill"} {
		data, err := os.ReadFile(filepath.Join(out, name, "results.jsonl"))
		if n := bytes.Count(data, []byte("\n")); err != nil || n != 120 {
			t.Errorf("%s/results.jsonl: %d lines (%v), want 120", name, n, err)
		}
	}
}
