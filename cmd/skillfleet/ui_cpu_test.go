package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
	"github.com/skillfleet/skillfleet/pkg/ui/uitest"
)

// TestUICPUOverhead measures what the dashboard adds to the coordinator's
// CPU on the paper preset (configs/sim_paper.yaml: 40 steps) with one page
// open, the coordinator alone in its process (external NATS, one worker
// process, sim-llm with 200ms latency). Two runs:
//
//	A  coordinator without --ui
//	C  coordinator with --ui and the page open on it, under a CPU profile
//
// C − A (process CPU time) is logged, but on a shared machine it is within
// the noise of two runs; the figure checked is the share of C's CPU
// profile spent in the dashboard (pkg/ui and the net/http server it runs
// on: polling, rebuilding, streaming, progress.json).
//
// It takes several minutes and wants a quiet machine, so it runs only with
// SKILLFLEET_UI_CPU=1.
func TestUICPUOverhead(t *testing.T) {
	if os.Getenv("SKILLFLEET_UI_CPU") != "1" {
		t.Skip("measures CPU over two paper-preset runs (several minutes): set SKILLFLEET_UI_CPU=1")
	}
	b := uitest.New(t)
	sim := simServer(t, "--latency", "200ms")
	root := repoRoot(t)
	cpu := func(p *proc) time.Duration {
		st := p.cmd.ProcessState
		return st.UserTime() + st.SystemTime()
	}
	run := func(name string, withUI bool, profile string) (time.Duration, time.Duration, int) {
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
		t.Setenv("SKILLFLEET_CPUPROFILE", profile)
		t0 := time.Now()
		coord := start(t, args...)
		t.Setenv("SKILLFLEET_CPUPROFILE", "")
		start(t, "worker", "--nats", ns.URL(), "--coordinator", grpc, "--concurrency", "24", "--optimizer-concurrency", "16", "--log-level", "error")
		if withUI {
			waitHTTP(t, "http://"+uiAddr+"/", coord)
			if err := b.Navigate("http://" + uiAddr + "/"); err != nil {
				t.Fatal(err)
			}
			if err := b.WaitFor(`document.documentElement.dataset.conn === "open"`, 30*time.Second); err != nil {
				t.Fatal(err)
			}
		}
		select {
		case err := <-coord.done:
			if err != nil {
				t.Fatalf("%s: coordinator: %v\n%s", name, err, coord.stderr.String())
			}
		case <-time.After(20 * time.Minute):
			t.Fatalf("%s: coordinator did not finish", name)
		}
		updates := 0
		if withUI {
			updates = pageInt(t, b, "updates")
			if err := b.Navigate("about:blank"); err != nil {
				t.Fatal(err)
			}
		}
		c, wall := cpu(coord), time.Since(t0)
		t.Logf("%s: coordinator CPU %.2fs over %.1fs wall; page updates %d", name, c.Seconds(), wall.Seconds(), updates)
		return c, wall, updates
	}
	a, _, _ := run("A", false, "")
	prof := filepath.Join(t.ArtifactDir(), "coordinator-ui.prof")
	c, wall, updates := run("C", true, prof)
	if updates < 20 {
		t.Errorf("the page saw %d updates: it did not follow the run", updates)
	}
	total, ui := profileShare(t, prof, `skillfleet/pkg/ui\.|^net/http\.`)
	t.Logf("end to end (C−A, process CPU): %+.2fs = %+.1f%% of %.2fs; in C's profile the dashboard is %.2fs of %.2fs sampled = %.1f%% (%.2f ms per second of wall time)",
		(c - a).Seconds(), 100*(c-a).Seconds()/a.Seconds(), a.Seconds(), ui, total, 100*ui/total, 1000*ui/wall.Seconds())
	if ui > 0.05*total {
		t.Errorf("the dashboard took %.1f%% of the coordinator's CPU, more than 5%%", 100*ui/total)
	}
}

// profileShare reads a CPU profile with go tool pprof: the seconds sampled
// and those in functions matching focus.
func profileShare(t *testing.T, prof, focus string) (total, matched float64) {
	t.Helper()
	re := regexp.MustCompile(`Showing nodes accounting for ([0-9.]+)(m?s), [0-9.]+% of ([0-9.]+)(m?s) total`)
	secs := func(v, unit string) float64 {
		f, _ := strconv.ParseFloat(v, 64)
		if unit == "ms" {
			f /= 1000
		}
		return f
	}
	for _, f := range []string{"", focus} {
		args := []string{"tool", "pprof", "-top", "-nodecount=1000000"}
		if f != "" {
			args = append(args, "-focus="+f)
		}
		out, err := exec.Command("go", append(args, binary, prof)...).CombinedOutput()
		if err != nil {
			t.Fatalf("go tool pprof: %v\n%s", err, out)
		}
		m := re.FindStringSubmatch(string(out))
		if m == nil {
			t.Fatalf("go tool pprof: no totals in\n%s", out)
		}
		if f == "" {
			total = secs(m[3], m[4])
		} else {
			matched = secs(m[1], m[2])
		}
	}
	return total, matched
}
