package main

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
	"github.com/skillfleet/skillfleet/pkg/ui/uitest"
)

// TestUICPUOverhead measures what the dashboard adds to the coordinator's
// CPU on the paper preset (configs/sim_paper.yaml: 40 steps) with one page
// open, the coordinator alone in its process (external NATS, one worker
// process, sim-llm with 200ms latency). Three runs:
//
//	A  coordinator without --ui
//	B  coordinator with --ui and no page on it, while a separate
//	   `skillfleet ui` on the same run dir serves the open page: B − A is
//	   the progress.json writer, the ui process's CPU is the dashboard's
//	   polling, rebuilding and streaming
//	C  coordinator with --ui and the page open on it: C − A end to end
//
// It takes several minutes and wants a quiet machine, so it runs only with
// SKILLFLEET_UI_CPU=1.
func TestUICPUOverhead(t *testing.T) {
	if os.Getenv("SKILLFLEET_UI_CPU") != "1" {
		t.Skip("measures CPU over three paper-preset runs (several minutes): set SKILLFLEET_UI_CPU=1")
	}
	b := uitest.New(t)
	sim := simServer(t, "--latency", "200ms")
	root := repoRoot(t)
	cpu := func(p *proc) time.Duration {
		st := p.cmd.ProcessState
		return st.UserTime() + st.SystemTime()
	}
	open := func(url string) {
		t.Helper()
		if err := b.Navigate(url); err != nil {
			t.Fatal(err)
		}
		if err := b.WaitFor(`document.documentElement.dataset.conn === "open"`, 30*time.Second); err != nil {
			t.Fatal(err)
		}
	}
	type result struct {
		coord, ui time.Duration
		wall      time.Duration
		updates   int
	}
	run := func(name string, withUI, pageOnCoordinator, separateUI bool) result {
		ns := queuetest.Start(t)
		out := filepath.Join(t.TempDir(), name)
		grpc, uiAddr := freeAddr(t), freeAddr(t)
		args := []string{"coordinator", "--config", filepath.Join(root, "configs", "sim_paper.yaml"), "--out", out,
			"--nats", ns.URL(), "--grpc-addr", grpc, "--no-fsync", "--log-format", "json",
			"--set", "env.skill_init=" + filepath.Join(root, "configs", "skills", "sim_paper_seed.md"),
			"--set", "runtime.sim_llm=false", "--set", "model.target_base_url=" + sim, "--set", "model.optimizer_base_url=" + sim}
		if withUI {
			args = append(args, "--ui", uiAddr)
		}
		t0 := time.Now()
		coord := start(t, args...)
		start(t, "worker", "--nats", ns.URL(), "--coordinator", grpc, "--concurrency", "24", "--optimizer-concurrency", "16", "--log-level", "error")
		var uip *proc
		switch {
		case pageOnCoordinator:
			waitHTTP(t, "http://"+uiAddr+"/", coord)
			open("http://" + uiAddr + "/")
		case separateUI:
			for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
				if _, err := os.Stat(filepath.Join(out, "events.jsonl")); err == nil {
					break
				}
			}
			addr2 := freeAddr(t)
			uip = start(t, "ui", "--addr", addr2, out)
			waitHTTP(t, "http://"+addr2+"/", uip)
			open("http://" + addr2 + "/")
		}
		select {
		case err := <-coord.done:
			if err != nil {
				t.Fatalf("%s: coordinator: %v\n%s", name, err, coord.stderr.String())
			}
		case <-time.After(15 * time.Minute):
			t.Fatalf("%s: coordinator did not finish", name)
		}
		r := result{coord: cpu(coord), wall: time.Since(t0)}
		if pageOnCoordinator || separateUI {
			r.updates = pageInt(t, b, "updates")
			if err := b.Navigate("about:blank"); err != nil {
				t.Fatal(err)
			}
		}
		if uip != nil {
			_ = uip.cmd.Process.Signal(syscall.SIGTERM)
			<-uip.done
			r.ui = cpu(uip)
		}
		t.Logf("%s: coordinator CPU %.2fs over %.1fs wall; ui process CPU %.2fs; page updates %d", name, r.coord.Seconds(), r.wall.Seconds(), r.ui.Seconds(), r.updates)
		return r
	}
	a := run("A", false, false, false)
	bb := run("B", true, false, true)
	c := run("C", true, true, false)
	pct := func(d time.Duration) string { return fmt.Sprintf("%+.1f%%", 100*d.Seconds()/a.coord.Seconds()) }
	t.Logf("progress.json writer (B−A): %s; dashboard serving one page (ui process): %.2fs = %s; end to end (C−A): %s",
		pct(bb.coord-a.coord), bb.ui.Seconds(), pct(bb.ui), pct(c.coord-a.coord))
	if bb.updates < 20 || c.updates < 20 {
		t.Errorf("the page saw %d and %d updates: it did not follow the runs", bb.updates, c.updates)
	}
	if over := (bb.coord - a.coord) + bb.ui; over.Seconds() > 0.05*a.coord.Seconds() {
		t.Errorf("dashboard overhead %.2fs is more than 5%% of the coordinator's %.2fs", over.Seconds(), a.coord.Seconds())
	}
}
