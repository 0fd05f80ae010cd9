package main

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/internal/ui/uitest"
)

// uiTrain starts the demo training with both roles on sim at simURL and
// the dashboard on addr.
func uiTrain(t *testing.T, out, simURL, addr string) *proc {
	t.Helper()
	root := repoRoot(t)
	return start(t, "train", "--config", filepath.Join(root, "configs", "demo.yaml"), "--out", out, "--ui", addr,
		"--no-fsync", "--log-level", "warn",
		"--set", "env.skill_init="+filepath.Join(root, "configs", "skills", "sim_demo_seed.md"),
		"--set", "runtime.sim_llm=false", "--set", "runtime.idle_fill=false",
		"--set", "model.target_base_url="+simURL, "--set", "model.optimizer_base_url="+simURL)
}

// waitHTTP waits until url answers.
func waitHTTP(t *testing.T, url string, p *proc) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			return
		}
		select {
		case err := <-p.done:
			t.Fatalf("train ended before its dashboard answered: %v\n%s", err, p.stderr.String())
		default:
		}
	}
	t.Fatalf("dashboard at %s did not answer\n%s", url, p.stderr.String())
}

func pageInt(t *testing.T, b *uitest.Browser, key string) int {
	t.Helper()
	s, err := uitest.Eval[string](b, "document.documentElement.dataset."+key+" || '0'")
	if err != nil {
		t.Fatal(err)
	}
	n, _ := strconv.Atoi(s)
	return n
}

// TestUILiveTrainingRun: against a sim training run with latency, the open
// page's step counter advances and the selection curve gains points
// without a reload; every request stays on loopback. The screenshot is
// kept as a test artifact (and copied to $SKILLFLEET_UI_SCREENSHOT when set).
func TestUILiveTrainingRun(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and a browser")
	}
	b := uitest.New(t)
	sim := simServer(t, "--latency", "120ms")
	addr := freeAddr(t)
	p := uiTrain(t, filepath.Join(t.TempDir(), "run"), sim, addr)
	waitHTTP(t, "http://"+addr+"/", p)
	if err := b.Navigate("http://" + addr + "/"); err != nil {
		t.Fatal(err)
	}
	if _, err := uitest.Eval[int](b, "window.__loaded = 1"); err != nil {
		t.Fatal(err)
	}
	if err := b.WaitFor(`document.documentElement.dataset.conn === "open" && document.documentElement.dataset.updates`, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	step0, points0 := pageInt(t, b, "step"), pageInt(t, b, "selectionPoints")
	// Two more decisions must arrive while the page stays open.
	if err := b.WaitFor(fmt.Sprintf(`Number(document.documentElement.dataset.step) >= %d && Number(document.documentElement.dataset.selectionPoints) >= %d`, step0+2, points0+2), 3*time.Minute); err != nil {
		t.Fatalf("%v\n%s", err, p.stderr.String())
	}
	if ok, err := uitest.Eval[bool](b, `window.__loaded === 1 && performance.getEntriesByType("navigation").length === 1`); err != nil || !ok {
		t.Errorf("the page was reloaded (err %v)", err)
	}
	counter, _ := uitest.Eval[string](b, `document.getElementById("step-counter").textContent`)
	canvasPoints, _ := uitest.Eval[string](b, `document.getElementById("chart-selection").dataset.points`)
	t.Logf("page went from step %d (%d selection points) to step %s (%s points) without a reload", step0, points0, counter, canvasPoints)
	if n, _ := strconv.Atoi(counter); n < step0+2 {
		t.Errorf("step counter shows %q, want ≥ %d", counter, step0+2)
	}
	shot := filepath.Join(t.ArtifactDir(), "dashboard-run.png")
	if err := b.Screenshot(shot, false); err != nil {
		t.Fatal(err)
	}
	if err := b.Screenshot(filepath.Join(t.ArtifactDir(), "dashboard-run-full.png"), true); err != nil {
		t.Fatal(err)
	}
	if dst := os.Getenv("SKILLFLEET_UI_SCREENSHOT"); dst != "" {
		data, _ := os.ReadFile(shot)
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if errs, _ := uitest.Eval[string](b, `document.documentElement.dataset.errors || ""`); errs != "" {
		t.Errorf("script errors: %s", errs)
	}
	if nl := b.NonLoopback(); len(nl) > 0 {
		t.Errorf("requests beyond loopback: %v", nl)
	}
	t.Logf("%d requests, all to loopback", len(b.Requests()))
}

// TestUIReconnectsAfterCoordinatorRestart: the coordinator is killed
// mid-run and started again on the same run dir and address; the open page
// reconnects by itself and keeps following the run.
func TestUIReconnectsAfterCoordinatorRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and a browser")
	}
	b := uitest.New(t)
	sim := simServer(t, "--latency", "120ms")
	addr := freeAddr(t)
	out := filepath.Join(t.TempDir(), "run")
	p := uiTrain(t, out, sim, addr)
	waitHTTP(t, "http://"+addr+"/", p)
	if err := b.Navigate("http://" + addr + "/"); err != nil {
		t.Fatal(err)
	}
	if _, err := uitest.Eval[int](b, "window.__loaded = 1"); err != nil {
		t.Fatal(err)
	}
	if err := b.WaitFor(`Number(document.documentElement.dataset.step) >= 2`, 3*time.Minute); err != nil {
		t.Fatalf("%v\n%s", err, p.stderr.String())
	}
	if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-p.done
	if err := b.WaitFor(`document.documentElement.dataset.conn === "lost"`, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	killedAt := pageInt(t, b, "step")
	time.Sleep(1500 * time.Millisecond) // the page retries against a closed port meanwhile
	p2 := uiTrain(t, out, sim, addr)
	if err := b.WaitFor(fmt.Sprintf(`document.documentElement.dataset.conn === "open" && Number(document.documentElement.dataset.reconnects) >= 1 && Number(document.documentElement.dataset.step) > %d`, killedAt), 3*time.Minute); err != nil {
		t.Fatalf("%v\n%s", err, p2.stderr.String())
	}
	if ok, err := uitest.Eval[bool](b, `window.__loaded === 1`); err != nil || !ok {
		t.Errorf("the page was reloaded (err %v)", err)
	}
	t.Logf("killed at step %d; after the restart the page reconnected (%d reconnects) and shows step %d", killedAt, pageInt(t, b, "reconnects"), pageInt(t, b, "step"))
}
