package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
	"github.com/skillfleet/skillfleet/pkg/store/storetest"
)

// TestSecondCoordinatorOnARunIsRefused: while a coordinator holds a run
// dir, a second `train` on it exits 7 naming the holder and writes
// nothing; once the first is gone, the run can be resumed.
func TestSecondCoordinatorOnARunIsRefused(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	root := repoRoot(t)
	dir := filepath.Join(t.TempDir(), "run")
	ns := queuetest.Start(t)
	// A coordinator with no workers holds the run and waits.
	first := start(t, "coordinator", "--config", filepath.Join(root, "configs", "demo.yaml"), "--out", dir, "--nats", ns.URL(),
		"--set", "env.skill_init="+filepath.Join(root, "configs", "skills", "sim_demo_seed.md"))
	deadline := time.Now().Add(20 * time.Second)
	for {
		b, _ := os.ReadFile(filepath.Join(dir, "coordinator.lock"))
		if strings.HasPrefix(string(b), "pid ") && strings.Contains(first.stderr.String(), "coordinator listening on") {
			break // locked, config written, waiting for workers
		}
		if time.Now().After(deadline) {
			t.Fatalf("the first coordinator never locked the run dir\n%s", first.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	before, err := os.ReadFile(filepath.Join(dir, "config.yaml"))
	if err != nil {
		t.Fatal(err)
	}

	out, err := trainDemo(t, dir, nil)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitLocked {
		t.Fatalf("second coordinator: want exit %d, got %v\n%s", exitLocked, err, out)
	}
	if !strings.Contains(out, "in use by another coordinator") || !strings.Contains(out, "pid ") {
		t.Errorf("refusal does not say the run is in use and by whom:\n%s", out)
	}
	if after, _ := os.ReadFile(filepath.Join(dir, "config.yaml")); string(after) != string(before) {
		t.Error("the refused coordinator rewrote config.yaml")
	}

	_ = first.cmd.Process.Kill()
	<-first.done
	if out, err := trainDemo(t, dir, nil); err != nil {
		t.Fatalf("resume after the first coordinator died: %v\n%s", err, out)
	}
}

// TestSecondCoordinatorElsewhereIsRefusedByTheLease: two coordinators of
// one run that do not share a run-dir lock (as on two hosts) meet at the
// run's leader lease in Redis: the second exits 7 naming the holder and
// writes nothing to its run dir.
func TestSecondCoordinatorElsewhereIsRefusedByTheLease(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	root := repoRoot(t)
	rs := storetest.RedisServer(t, storetest.TCP())
	ns := queuetest.Start(t)
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	for _, d := range []string{a, b} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "run_id"), []byte("shared-run\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	first := start(t, "coordinator", "--config", filepath.Join(root, "configs", "demo.yaml"), "--out", a, "--nats", ns.URL(),
		"--redis", rs.URL(), "--set", "env.skill_init="+filepath.Join(root, "configs", "skills", "sim_demo_seed.md"))
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(first.stderr.String(), "coordinator listening on") {
		if time.Now().After(deadline) {
			t.Fatalf("the first coordinator never came up\n%s", first.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	out, err := trainDemo(t, b, nil, "--redis", rs.URL())
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitLocked {
		t.Fatalf("second coordinator: want exit %d, got %v\n%s", exitLocked, err, out)
	}
	if !strings.Contains(out, `run "shared-run" is led by coordinator`) {
		t.Errorf("refusal does not name the run and its leader:\n%s", out)
	}
	for _, f := range []string{"config.yaml", "events.jsonl"} {
		if _, err := os.Stat(filepath.Join(b, f)); err == nil {
			t.Errorf("the refused coordinator wrote %s", f)
		}
	}
	// Once the first is gone (its lease released on exit), the run can be
	// taken over.
	_ = first.cmd.Process.Signal(os.Interrupt)
	<-first.done
	if out, err := trainDemo(t, b, nil, "--redis", rs.URL()); err != nil {
		t.Fatalf("take-over after the first coordinator stopped: %v\n%s", err, out)
	}
}
