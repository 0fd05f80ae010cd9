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
	"time"

	simmodel "github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/coordinator/campaign"
)

// TestCampaignRefusedOptimizerEndsPromptly: a campaign run with
// --no-preflight whose cell's optimizer answers every call 401 (the target
// is the simulated model) ends promptly and non-zero. With
// budget.max_calls: 1 the cell stops on its budget once, is not taken
// again (it was, without end: "started", "stopped", "started", ...) and
// the campaign exits 4 naming the cell and the budget; without a budget
// the cell fails at the first phase boundary after the refused calls,
// naming the optimizer, its model and server and the 401, and the
// campaign exits 11.
func TestCampaignRefusedOptimizerEndsPromptly(t *testing.T) {
	sim := simmodel.NewServer(simmodel.New(simmodel.Options{}), simmodel.ServerOptions{})
	good := httptest.NewServer(sim)
	t.Cleanup(good.Close)
	var refused atomic.Int64
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		refused.Add(1)
		http.Error(w, `{"error":{"message":"invalid api key","type":"invalid_request_error"}}`, http.StatusUnauthorized)
	}))
	t.Cleanup(refusing.Close)
	root := repoRoot(t)

	for _, tc := range []struct {
		name   string
		budget string
		code   int
		state  string
		want   []string
	}{
		{"max_calls 1", "budget:\n  max_calls: 1\n", exitStopped, campaign.StateStopped,
			[]string{"cell refused: stopped: budget reached: budget.max_calls", "1 of 1 cells stopped", "raise the budget"}},
		{"no budget", "", exitCampaignFailed + 1, campaign.StateFailed,
			[]string{"cell refused: failed: step 1: credentials refused: the optimizer's calls were refused", "HTTP 401", "model sim-optimizer at " + refusing.URL + "/v1",
				"model.optimizer_api_key_env", "1 of 1 cells failed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			body := "_base_: " + filepath.Join(root, "configs", "demo.yaml") + "\nenv:\n  skill_init: " + filepath.Join(root, "configs", "skills", "sim_demo_seed.md") +
				"\nruntime:\n  sim_llm: false\nmodel:\n  target_base_url: " + good.URL + "/v1\n  optimizer_base_url: " + refusing.URL + "/v1\n" + tc.budget
			if err := os.WriteFile(filepath.Join(dir, "cell.yaml"), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			spec := filepath.Join(dir, "c.yaml")
			if err := os.WriteFile(spec, []byte("name: auth\ncells:\n  - {name: refused, config: cell.yaml}\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "out")
			var stdout, stderr bytes.Buffer
			done := make(chan int, 1)
			start := time.Now()
			refused.Store(0)
			go func() {
				done <- run([]string{"campaign", "--config", spec, "--out", out, "--no-preflight"}, &stdout, &stderr)
			}()
			var code int
			select {
			case code = <-done:
			case <-time.After(4 * time.Minute):
				t.Fatalf("the campaign still runs after 4 minutes\nstdout:\n%s\nstderr:\n%s", stdout.String(), stderr.String())
			}
			took := time.Since(start)
			all := stdout.String() + stderr.String()
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, all)
			}
			for _, w := range tc.want {
				if !strings.Contains(all, w) {
					t.Errorf("output lacks %q\n%s", w, all)
				}
			}
			if n := strings.Count(stdout.String(), "cell refused: started"); n != 1 {
				t.Errorf("the cell started %d times, want once\n%s", n, stdout.String())
			}
			f, err := campaign.Read(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(f.Cells) != 1 || f.Cells[0].State != tc.state {
				t.Errorf("campaign.json cells %+v, want one %s", f.Cells, tc.state)
			}
			if tc.state == campaign.StateFailed && refused.Load() == 0 {
				t.Error("the refusing optimizer was never called")
			}
			t.Logf("%s: exit %d after %s, %d refused optimizer requests; %s", tc.name, code, took.Round(time.Millisecond), refused.Load(), firstLineOf(stderr.String()))
		})
	}
}

func firstLineOf(s string) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	return s
}
