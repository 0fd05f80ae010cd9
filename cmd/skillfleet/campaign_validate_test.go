package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	simmodel "github.com/skillfleet/skillfleet/backends/sim"
)

// TestCampaignThirdCellTypoExitsBeforeAnyCall: a campaign of three cells
// whose third cell's config has a misspelled key exits 2 at once, naming
// the cell, the file and the key; the model behind every cell sees no
// request and no cell dir is made. A misspelled campaign key is one line
// in this project's words, not the YAML decoder's.
func TestCampaignThirdCellTypoExitsBeforeAnyCall(t *testing.T) {
	url, calls := countingSim(t)
	root := repoRoot(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := "_base_: " + filepath.Join(root, "configs", "demo.yaml") + "\nenv:\n  skill_init: " + filepath.Join(root, "configs", "skills", "sim_demo_seed.md") +
		"\nruntime:\n  sim_llm: false\nmodel:\n  target_base_url: " + url + "\n  optimizer_base_url: " + url + "\n"
	write("good.yaml", base)
	bad := write("typo.yaml", base+"train:\n  num_epochz: 2\n")
	spec := write("c.yaml", "name: typo\ncells:\n  - {name: first, config: good.yaml}\n  - {name: second, config: good.yaml, seed: 2}\n  - {name: third, config: typo.yaml}\n")
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	code := run([]string{"campaign", "--config", spec, "--out", out}, &stdout, &stderr)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d\n%s", code, exitUsage, stderr.String())
	}
	msg := stderr.String()
	for _, want := range []string{"cell third", bad, "train.num_epochz", "did you mean train.num_epochs?"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	if strings.Contains(msg, "cell first") || strings.Contains(msg, "cell second") {
		t.Errorf("good cells named as bad: %s", msg)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("%d model calls before the error", n)
	}
	for _, c := range []string{"first", "second", "third"} {
		if _, err := os.Stat(filepath.Join(out, c)); err == nil {
			t.Errorf("cell dir %s made", c)
		}
	}

	badSpec := write("k.yaml", "name: k\nmax_active_runz: 2\ncells:\n  - {name: a, config: good.yaml}\n")
	stderr.Reset()
	if code := run([]string{"campaign", "--config", badSpec, "--out", out}, &stdout, &stderr); code != exitUsage {
		t.Errorf("bad campaign key: exit %d", code)
	}
	if msg := strings.TrimSpace(stderr.String()); !strings.Contains(msg, badSpec+": line 2: unknown key max_active_runz") || strings.Contains(msg, "\n") {
		t.Errorf("bad campaign key: %q", msg)
	}
}

// TestCampaignPreflightsEachDistinctModel: before any cell starts, the
// campaign checks the credentials of every distinct model its cells call,
// each once however many cells share it; a model whose server refuses
// the credentials stops the campaign with exit 2 naming the cell and the
// role, before any completion is requested and before any cell dir.
func TestCampaignPreflightsEachDistinctModel(t *testing.T) {
	var mu sync.Mutex
	lists := map[string]int{} // GET /v1/models by model server
	var posts atomic.Int64
	sim := simmodel.NewServer(simmodel.New(simmodel.Options{}), simmodel.ServerOptions{})
	good := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
		} else if strings.HasSuffix(r.URL.Path, "/models") {
			mu.Lock()
			lists["good"]++
			mu.Unlock()
		}
		sim.ServeHTTP(w, r)
	}))
	t.Cleanup(good.Close)
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			posts.Add(1)
		}
		mu.Lock()
		lists["refusing"]++
		mu.Unlock()
		http.Error(w, `{"error":{"message":"invalid api key","type":"invalid_request_error"}}`, http.StatusUnauthorized)
	}))
	t.Cleanup(refusing.Close)

	root := repoRoot(t)
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := func(optimizerURL string) string {
		return "_base_: " + filepath.Join(root, "configs", "demo.yaml") + "\nenv:\n  skill_init: " + filepath.Join(root, "configs", "skills", "sim_demo_seed.md") +
			"\nruntime:\n  sim_llm: false\nmodel:\n  target_base_url: " + good.URL + "/v1\n  optimizer_base_url: " + optimizerURL + "/v1\n"
	}
	write("good.yaml", base(good.URL))
	write("refused.yaml", base(refusing.URL))
	spec := write("c.yaml", "name: pf\ncells:\n  - {name: first, config: good.yaml}\n  - {name: second, config: good.yaml, seed: 2}\n  - {name: third, config: refused.yaml}\n")
	out := filepath.Join(dir, "out")
	var stdout, stderr bytes.Buffer
	code := run([]string{"campaign", "--config", spec, "--out", out}, &stdout, &stderr)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d\n%s", code, exitUsage, stderr.String())
	}
	msg := stderr.String()
	if !strings.Contains(msg, "preflight: 1 model(s)") || !strings.Contains(msg, "cell third optimizer") {
		t.Errorf("error %q does not name the one refused model as cell third's optimizer", msg)
	}
	if strings.Contains(msg, "cell first") || strings.Contains(msg, "cell second") {
		t.Errorf("good cells named as bad: %s", msg)
	}
	if n := posts.Load(); n != 0 {
		t.Errorf("%d completion requests before the error", n)
	}
	mu.Lock()
	// The good server serves two distinct models (sim-target, sim-optimizer)
	// to the cells: one check each, not one per cell and role.
	if lists["good"] != 2 || lists["refusing"] != 1 {
		t.Errorf("model list requests %v, want good:2 refusing:1 (each distinct model once)", lists)
	}
	mu.Unlock()
	for _, c := range []string{"first", "second", "third"} {
		if _, err := os.Stat(filepath.Join(out, c)); err == nil {
			t.Errorf("cell dir %s made", c)
		}
	}

	// --no-preflight skips the check: the cell starts and its first
	// rollouts reach the refusing server, which no model list was asked of.
	all := "_base_: " + filepath.Join(root, "configs", "demo.yaml") + "\nenv:\n  skill_init: " + filepath.Join(root, "configs", "skills", "sim_demo_seed.md") +
		"\nruntime:\n  sim_llm: false\nmodel:\n  target_base_url: " + refusing.URL + "/v1\n  optimizer_base_url: " + refusing.URL + "/v1\n"
	write("all.yaml", all)
	only := write("only.yaml", "name: pf1\ncells:\n  - {name: refused, config: all.yaml}\n")
	stderr.Reset()
	mu.Lock()
	clear(lists)
	mu.Unlock()
	posts.Store(0)
	run([]string{"campaign", "--config", only, "--out", filepath.Join(dir, "out1"), "--no-preflight"}, &stdout, &stderr)
	mu.Lock()
	if n := lists["refusing"] - int(posts.Load()); n != 0 {
		t.Errorf("--no-preflight: %d model list requests", n)
	}
	mu.Unlock()
	if posts.Load() == 0 {
		t.Errorf("--no-preflight: no completion requested; the cell did not start\n%s", stderr.String())
	}
}
