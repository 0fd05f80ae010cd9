package main

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// envWithout is the environment minus the named variables.
func envWithout(names ...string) []string {
	var out []string
	for _, kv := range os.Environ() {
		keep := true
		for _, n := range names {
			if strings.HasPrefix(kv, n+"=") {
				keep = false
			}
		}
		if keep {
			out = append(out, kv)
		}
	}
	return out
}

// TestUIBeyondLoopbackRefused: --ui on 0.0.0.0 without a token is refused
// with one line and exit code 2, before anything is written; with a token
// (or --ui-insecure) it is served.
func TestUIBeyondLoopbackRefused(t *testing.T) {
	root := repoRoot(t)
	out := filepath.Join(t.TempDir(), "run")
	addr := "0.0.0.0:" + strings.Split(freeAddr(t), ":")[1]
	for _, args := range [][]string{
		{"train", "--config", filepath.Join(root, "configs", "demo.yaml"), "--out", out, "--ui", addr},
		{"coordinator", "--config", filepath.Join(root, "configs", "demo.yaml"), "--out", out, "--nats", "nats://127.0.0.1:1", "--ui", addr},
		{"ui", "--addr", addr, filepath.Join(root, "pkg", "report", "testdata", "priced")},
	} {
		cmd := exec.Command(binary, args...)
		cmd.Dir = root
		cmd.Env = envWithout("SKILLFLEET_UI_TOKEN")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != exitUsage {
			t.Errorf("%s --ui %s: err %v, want exit %d\n%s", args[0], addr, err, exitUsage, stderr.String())
		}
		msg := strings.TrimSpace(stderr.String())
		if strings.Count(msg, "\n") != 0 || !strings.Contains(msg, "SKILLFLEET_UI_TOKEN") || !strings.Contains(msg, "--ui-insecure") {
			t.Errorf("%s: want one line naming SKILLFLEET_UI_TOKEN and --ui-insecure, got %q", args[0], msg)
		}
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("a refused train still created its run dir")
	}

	// With a token the same address is served, and every request needs it.
	t.Setenv("SKILLFLEET_UI_TOKEN", "t0ken")
	p := start(t, "ui", "--addr", addr, filepath.Join(root, "pkg", "report", "testdata", "priced"))
	url := "http://127.0.0.1:" + strings.Split(addr, ":")[1] + "/run/priced/api"
	var code int
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		resp, err := http.Get(url)
		if err == nil {
			code = resp.StatusCode
			resp.Body.Close()
			break
		}
	}
	if code != http.StatusUnauthorized {
		t.Errorf("token-protected dashboard without the token: %d, want 401\n%s", code, p.stderr.String())
	}
	req, _ := http.NewRequest(http.MethodGet, url, nil)
	req.Header.Set("Authorization", "Bearer t0ken")
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("with the token: %v %v", err, resp)
	} else {
		resp.Body.Close()
	}
	if strings.Contains(p.stderr.String(), "t0ken") {
		t.Error("the token was printed")
	}
}

// TestCampaignTerminalLine: on a terminal (a pseudo-terminal from
// script(1)) a campaign keeps one live status line — cells done, running,
// queued, spend — below the cells' plain lines, and ends it before the
// results table.
func TestCampaignTerminalLine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a campaign")
	}
	scriptBin, err := exec.LookPath("script")
	if err != nil {
		t.Skip("script(1) (util-linux) is not installed: no pseudo-terminal to run the campaign on")
	}
	t.Parallel()
	// The line is redrawn once a second: the cells run against a sim-llm
	// with 30 ms per call, so each outlasts several redraws (in-process at
	// zero latency a demo cell can finish between two).
	url := simServer(t, "--latency", "30ms")
	sim := []string{"runtime.sim_llm=false", "model.target_base_url=" + url, "model.optimizer_base_url=" + url}
	spec := writeCampaign(t, []testCell{{name: "a", sets: append([]string{"train.seed=1"}, sim...)}, {name: "b", sets: append([]string{"train.seed=2"}, sim...)}}, 1)
	out := filepath.Join(t.TempDir(), "camp")
	cmd := exec.Command(scriptBin, "-q", "-f", "-e", "-c", binary+" campaign --config "+spec+" --out "+out, "/dev/null")
	cmd.Dir = repoRoot(t)
	b, err := cmd.CombinedOutput()
	text := string(b)
	if err != nil {
		t.Fatalf("campaign on a terminal: %v\n%q", err, text)
	}
	// The line is redrawn in place ("\r" + clear to end of line).
	for _, want := range []string{
		"\r\x1b[Kcampaign: cells 0/2 done · 1 running · 1 queued · ",
		"\r\x1b[Kcampaign: cells 1/2 done · 1 running · 0 queued · ",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("no %q in the terminal output:\n%q", want, text)
		}
	}
	// A cell's plain line clears the status line first.
	if !regexp.MustCompile("\r\x1b\\[Kcell [ab]: (started|done)").MatchString(text) {
		t.Errorf("no plain line written above the status line:\n%q", text)
	}
	if !regexp.MustCompile(`cells 1/2 done · 1 running · 0 queued · [0-9.]+[kM]? tok \$[0-9.]+ · [0-9]+s · ETA `).MatchString(text) {
		t.Errorf("no spend and ETA on the status line:\n%q", text)
	}
	if i := strings.LastIndex(text, "campaign: cells"); i < 0 || !strings.Contains(text[i:], "\r\x1b[K") {
		t.Errorf("the status line was not cleared before the results")
	}
}
