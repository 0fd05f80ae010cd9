package main

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
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
