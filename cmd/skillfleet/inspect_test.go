package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/internal/ui"
	"github.com/skillfleet/skillfleet/pkg/rundir"
)

// httpGet returns the body of a 200 answer to GET url.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	return string(body)
}

// TestInspectDemoRun trains the demo, then reads it back with inspect:
// every evaluation left its per-item predictions; step 3's failed items
// list with their answers; one shows whole with its skill version,
// conversation and the analyst's patch; the JSONL export loads in Python
// line by line.
func TestInspectDemoRun(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the demo")
	}
	root := repoRoot(t)
	dir := filepath.Join(t.TempDir(), "demo")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"train", "--config", filepath.Join(root, "configs", "demo.yaml"), "--out", dir, "--no-fsync",
		"--set", "env.skill_init=" + filepath.Join(root, "configs", "skills", "sim_demo_seed.md")}, &stdout, &stderr); code != exitOK {
		t.Fatalf("train exit %d\n%s", code, stderr.String())
	}

	// Every evaluation has its predictions, one line per item measured.
	count := func(rel string) int {
		t.Helper()
		data, err := os.ReadFile(filepath.Join(dir, rel, rundir.PredictionsFile))
		if err != nil {
			t.Errorf("no predictions for %s: %v", rel, err)
			return 0
		}
		return bytes.Count(data, []byte("\n"))
	}
	var sum rundir.Summary
	data, err := os.ReadFile(filepath.Join(dir, rundir.SummaryFile))
	if err != nil || json.Unmarshal(data, &sum) != nil {
		t.Fatalf("summary.json: %v", err)
	}
	if n := count("selection_eval_baseline"); n != sum.SelectionEvalN {
		t.Errorf("selection_eval_baseline has %d lines, want %d", n, sum.SelectionEvalN)
	}
	if n := count("test_eval_baseline"); n != sum.TestEvalN {
		t.Errorf("test_eval_baseline has %d lines, want %d", n, sum.TestEvalN)
	}
	if n := count("test_eval"); n != sum.TestEvalN {
		t.Errorf("test_eval has %d lines, want %d", n, sum.TestEvalN)
	}
	gated := 0
	for g := 1; g <= sum.TotalSteps; g++ {
		var rec rundir.StepRecord
		data, err := os.ReadFile(filepath.Join(dir, rundir.StepFile(g, rundir.StepRecordFile)))
		if err != nil || json.Unmarshal(data, &rec) != nil {
			t.Fatalf("step %d record: %v", g, err)
		}
		if n := count(filepath.Join("steps", filepath.Base(filepath.Dir(rundir.StepFile(g, "x"))), "rollout")); n != rec.RolloutN {
			t.Errorf("step %d rollout has %d lines, want %d", g, n, rec.RolloutN)
		}
		if rec.SelectionHard != nil {
			gated++
			if n := count(filepath.Dir(rundir.StepFile(g, "selection_eval/x"))); n == 0 {
				t.Errorf("step %d was gated but its selection_eval has no lines", g)
			}
		}
	}
	if gated == 0 {
		t.Error("no step of the demo was gated: the test checks nothing there")
	}

	// Step 3's failed items, listed.
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"inspect", dir, "--step", "3", "--stage", "rollout", "--failed"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("inspect exit %d\n%s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) < 3 {
		t.Fatalf("inspect listed nothing:\n%s", stdout.String())
	}
	rows := lines[1 : len(lines)-1]
	for _, l := range rows {
		f := strings.Fields(l)
		if f[0] != "3" || f[1] != "rollout" || f[4] == "1.00" {
			t.Errorf("row %q is not a failed rollout of step 3", l)
		}
	}
	item := strings.Fields(rows[0])[2]

	// The dashboard's step panel lists the same failed items, each
	// linking to its trajectory.
	srv, err := ui.Serve(t.Context(), ui.Options{Addr: "127.0.0.1:0"}, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	var panel ui.StepDetail
	if body := httpGet(t, srv.URL()+"run/demo/step/3"); json.Unmarshal([]byte(body), &panel) != nil {
		t.Fatalf("step 3 panel: %s", body)
	}
	if len(panel.Failed) != len(rows) {
		t.Errorf("step 3 panel lists %d failed items, inspect %d", len(panel.Failed), len(rows))
	}
	if len(panel.Failed) > 0 {
		page := httpGet(t, srv.URL()+"run/demo/"+panel.Failed[0].Link)
		if !strings.Contains(page, "item "+panel.Failed[0].ID) || !strings.Contains(page, "[answer]") || !strings.Contains(page, "[assistant]") {
			t.Errorf("the link of %s leads to:\n%s", panel.Failed[0].ID, page)
		}
	}

	// One of them whole.
	stdout.Reset()
	if code := run([]string{"inspect", dir, "--step", "3", "--stage", "rollout", "--item", item, "--show"}, &stdout, &stderr); code != exitOK {
		t.Fatalf("inspect --show exit %d\n%s", code, stderr.String())
	}
	out := stdout.String()
	for _, want := range []string{"item " + item, "skill ", "skills/skill_v0002.md", "[system]", "<skill>", "[user]", "[assistant]", "[answer]", "[analyst: fail minibatch", `"patch"`} {
		if !strings.Contains(out, want) {
			t.Errorf("--show lacks %q:\n%s", want, out)
		}
	}

	// The export loads in Python, one object per line, with the trajectory.
	export := filepath.Join(t.TempDir(), "step3.jsonl")
	stdout.Reset()
	if code := run([]string{"inspect", dir, "--step", "3", "--failed", "--jsonl", export}, &stdout, &stderr); code != exitOK {
		t.Fatalf("inspect --jsonl exit %d\n%s", code, stderr.String())
	}
	f, err := os.Open(export)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	for sc := bufio.NewScanner(f); sc.Scan(); n++ {
		var rec struct {
			ID       string            `json:"id"`
			Messages []json.RawMessage `json:"messages"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil || rec.ID == "" || len(rec.Messages) == 0 {
			t.Errorf("line %d: %v, id %q, %d messages", n+1, err, rec.ID, len(rec.Messages))
		}
	}
	if n < len(rows) {
		t.Errorf("export has %d lines, want at least the %d failed rollouts", n, len(rows))
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Log("no python3: the Python check is skipped")
		return
	}
	script := `import json, sys
n = 0
for line in open(sys.argv[1]):
    r = json.loads(line)
    assert r["step"] == 3 and r["messages"], r
    n += 1
print(n)`
	got, err := exec.Command(py, "-c", script, export).CombinedOutput()
	if err != nil || strings.TrimSpace(string(got)) == "0" {
		t.Errorf("python3 could not load the export: %v\n%s", err, got)
	}
}
