package main

import (
	"bytes"
	"encoding/json"
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

// TestEvalSplitAll: `eval --split all` scores the skill on every split
// that has items, each split's per-item results in its own directory and
// every split's scores in eval_summary.json; its estimate covers the three
// splits.
func TestEvalSplitAll(t *testing.T) {
	if testing.Short() {
		t.Skip("runs an evaluation")
	}
	root := repoRoot(t)
	out := filepath.Join(t.TempDir(), "eval")
	args := []string{"eval", "--config", filepath.Join(root, "configs", "demo.yaml"), "--out", out, "--no-fsync", "--split", "all",
		"--skill", filepath.Join(root, "configs", "skills", "sim_demo_seed.md"),
		"--set", "env.skill_init=" + filepath.Join(root, "configs", "skills", "sim_demo_seed.md")}
	var stdout, stderr bytes.Buffer
	if code := run(append(args, "--estimate"), &stdout, &stderr); code != exitOK {
		t.Fatalf("--estimate exit %d\n%s", code, stderr.String())
	}
	for _, sp := range []string{"split train (60 items)", "split val (40 items)", "split test (120 items)"} {
		if !strings.Contains(stdout.String(), sp) {
			t.Errorf("estimate lacks %q:\n%s", sp, stdout.String())
		}
	}
	stdout.Reset()
	if code := run(args, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d\n%s", code, stderr.String())
	}
	b, err := os.ReadFile(filepath.Join(out, "eval_summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res []struct {
		Name   string `json:"name"`
		Split  string `json:"split"`
		ByType map[string]struct {
			Total int `json:"total"`
		} `json:"by_task_type"`
	}
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"train": 60, "val": 40, "test": 120}
	if len(res) != 3 {
		t.Fatalf("eval_summary.json has %d results, want 3 (one per split)", len(res))
	}
	for _, r := range res {
		if r.Name != "skill" || r.ByType["overall"].Total != want[r.Split] {
			t.Errorf("result %s/%s: %d items, want %d", r.Name, r.Split, r.ByType["overall"].Total, want[r.Split])
		}
		lines, err := os.ReadFile(filepath.Join(out, "eval_skill_"+r.Split, "results.jsonl"))
		if err != nil {
			t.Errorf("split %s: %v", r.Split, err)
		} else if n := strings.Count(string(lines), "\n"); n != want[r.Split] {
			t.Errorf("split %s: %d per-item lines, want %d", r.Split, n, want[r.Split])
		}
		delete(want, r.Split)
	}
	if !strings.Contains(stdout.String(), "skill (train)") || !strings.Contains(stdout.String(), "skill (test)") {
		t.Errorf("table lacks a column per split:\n%s", stdout.String())
	}
}
