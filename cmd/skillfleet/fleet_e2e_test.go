package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/coordinator/campaign"
	"github.com/skillfleet/skillfleet/coordinator/dispatch"
)

// The fleet tests: one pool of worker processes serves many runs, and
// every run makes exactly the decisions it makes alone.

// cellRef is a demo run alone (all-in-one), keyed by its overrides and
// shared by the tests of this file.
var (
	refMu   sync.Mutex
	refDirs = map[string]string{}
)

func aloneRef(t *testing.T, sets ...string) string {
	t.Helper()
	key := strings.Join(sets, " ")
	refMu.Lock()
	defer refMu.Unlock()
	if d, ok := refDirs[key]; ok {
		return d
	}
	dir := filepath.Join(filepath.Dir(binary), "ref-"+fmt.Sprint(len(refDirs)))
	var args []string
	for _, s := range sets {
		args = append(args, "--set", s)
	}
	if out, err := trainDemo(t, dir, nil, args...); err != nil {
		t.Fatalf("reference run %v: %v\n%s", sets, err, out)
	}
	refDirs[key] = dir
	return dir
}

// sameDecisions fails the test unless run dir got has ref's events and best skill.
func sameDecisions(t *testing.T, name, got, ref string) {
	t.Helper()
	for _, f := range []string{"events.jsonl", "best_skill.md"} {
		if !bytes.Equal(readFile(t, filepath.Join(got, f)), readFile(t, filepath.Join(ref, f))) {
			t.Errorf("%s: %s differs from the same run alone", name, f)
		}
	}
}

// recordedOnce fails unless every task id in the run's journal was
// recorded exactly once.
func recordedOnce(t *testing.T, name, dir string) {
	t.Helper()
	j, results, err := dispatch.OpenJournal(filepath.Join(dir, "results.journal"), true)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	_ = j.Close()
	seen := map[string]int{}
	for _, r := range results {
		seen[r.GetTaskId()]++
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s: task %s recorded %d times", name, id, n)
		}
	}
}

// startNatsd starts a standalone NATS server process (the pinned
// nats-server module) and returns its URL.
func startNatsd(t *testing.T) string {
	t.Helper()
	p := startCmd(t, buildNatsd(t), "--addr", "127.0.0.1:0", "--store", t.TempDir())
	line := p.line(t, "nats listening on ", 30*time.Second)
	return strings.TrimPrefix(line, "nats listening on ")
}

// startFleetWorker starts a worker process on the NATS server at url.
func startFleetWorker(t *testing.T, url string, conc string) {
	t.Helper()
	start(t, "worker", "--nats", url, "--concurrency", conc, "--optimizer-concurrency", "8", "--log-level", "warn")
}

// runIn runs the binary in the repository root and returns its output.
func runIn(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Dir = repoRoot(t)
	b, err := cmd.CombinedOutput()
	return string(b), err
}

type testCell struct {
	name string
	sets []string
}

func writeCampaign(t *testing.T, cells []testCell, maxActive int) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "name: fleet-test\nmax_active_runs: %d\nno_skill: false\ncells:\n", maxActive)
	for _, c := range cells {
		fmt.Fprintf(&b, "  - name: %s\n    config: configs/demo.yaml\n    set:\n", c.name)
		for _, s := range c.sets {
			k, v, _ := strings.Cut(s, "=")
			fmt.Fprintf(&b, "      %s: %s\n", k, v)
		}
	}
	path := filepath.Join(t.TempDir(), "campaign.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// checkCells fails unless every cell of the campaign in out is done with
// the decisions it makes alone, each result recorded once.
func checkCells(t *testing.T, out string, cells []testCell) {
	t.Helper()
	f, err := campaign.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cells {
		if f.Cells[i].State != campaign.StateDone {
			t.Errorf("cell %s: state %s (%s)", c.name, f.Cells[i].State, f.Cells[i].Error)
			continue
		}
		dir := filepath.Join(out, "cells", c.name)
		sameDecisions(t, c.name, dir, aloneRef(t, c.sets...))
		recordedOnce(t, c.name, dir)
	}
}

func sixCells() []testCell { return demoCells("", "1", "2", "3") }

// demoCells are two demo cells per seed, named prefix+"s"+seed and
// prefix+"mb4-s"+seed (the second with minibatches of 4).
func demoCells(prefix string, seeds ...string) []testCell {
	var cells []testCell
	for _, seed := range seeds {
		cells = append(cells, testCell{prefix + "s" + seed, []string{"train.seed=" + seed}})
		cells = append(cells, testCell{prefix + "mb4-s" + seed, []string{"gradient.minibatch_size=4", "train.seed=" + seed}})
	}
	return cells
}

// TestCampaignOnASharedFleetMatchesCellsAlone: six cells on one pool of
// two worker processes and an external NATS server make exactly the
// decisions each makes alone.
func TestCampaignOnASharedFleetMatchesCellsAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes and runs the demo many times")
	}
	t.Parallel()
	url := startNatsd(t)
	startFleetWorker(t, url, "12")
	startFleetWorker(t, url, "12")
	cells := sixCells()
	spec := writeCampaign(t, cells, 6)
	out := filepath.Join(t.TempDir(), "camp")
	if o, err := runIn(t, "campaign", "--config", spec, "--out", out, "--nats", url); err != nil {
		t.Fatalf("campaign: %v\n%s", err, o)
	}
	checkCells(t, out, cells)
	// The report reads the campaign.
	rep, err := runIn(t, "report", out)
	if err != nil || !strings.Contains(rep, "mb4-s3") || !strings.Contains(rep, "6 done") {
		t.Errorf("report: %v\n%s", err, rep)
	}
}

// TestTwoCoordinatorsShareOneWorker: two runs, two coordinator processes,
// one NATS, one worker process serving both.
func TestTwoCoordinatorsShareOneWorker(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	url := startNatsd(t)
	startFleetWorker(t, url, "16")
	dirs := []string{filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")}
	seeds := []string{"1", "2"}
	errs := make(chan error, 2)
	outs := make([]string, 2)
	for i := range dirs {
		go func() {
			o, err := runIn(t, "coordinator", "--config", "configs/demo.yaml", "--set", "train.seed="+seeds[i], "--nats", url, "--out", dirs[i])
			outs[i] = o
			errs <- err
		}()
	}
	for range dirs {
		if err := <-errs; err != nil {
			t.Fatalf("coordinator: %v\n%s\n%s", err, outs[0], outs[1])
		}
	}
	for i, d := range dirs {
		sameDecisions(t, "run "+seeds[i], d, aloneRef(t, "train.seed="+seeds[i]))
		recordedOnce(t, "run "+seeds[i], d)
	}
}

// TestWorkerOutlivesRunsAndACoordinatorRestart: a worker started before
// any run serves runs started later; killing one run's coordinator does
// not disturb the other, and the killed run resumes when its coordinator
// comes back.
func TestWorkerOutlivesRunsAndACoordinatorRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	t.Parallel()
	url := startNatsd(t)
	startFleetWorker(t, url, "16")
	time.Sleep(500 * time.Millisecond) // the worker is up before any run exists
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	// Latency keeps run a going long enough to be killed mid-run.
	coordA := startIn(t, repoRoot(t), "coordinator", "--config", "configs/demo.yaml", "--set", "train.seed=3", "--nats", url, "--out", a)
	errB := make(chan error, 1)
	var outB string
	go func() {
		o, err := runIn(t, "coordinator", "--config", "configs/demo.yaml", "--set", "train.seed=2", "--nats", url, "--out", b)
		outB = o
		errB <- err
	}()
	coordA.line(t, "epoch 1", 60*time.Second)
	if err := coordA.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-coordA.done
	if err := <-errB; err != nil {
		t.Fatalf("run b beside a killed run: %v\n%s", err, outB)
	}
	sameDecisions(t, "run b", b, aloneRef(t, "train.seed=2"))
	recordedOnce(t, "run b", b)
	if o, err := runIn(t, "coordinator", "--config", "configs/demo.yaml", "--set", "train.seed=3", "--nats", url, "--out", a); err != nil {
		t.Fatalf("run a resumed: %v\n%s", err, o)
	}
	sameDecisions(t, "run a (killed, resumed)", a, aloneRef(t, "train.seed=3"))
	recordedOnce(t, "run a", a)
}

// TestCampaignKilledThreeTimesResumes: the all-in-one campaign process is
// killed at three moments and re-run; every cell ends as it does alone,
// each result recorded once.
func TestCampaignKilledThreeTimesResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the demo many times")
	}
	t.Parallel()
	cells := sixCells()[:4]
	spec := writeCampaign(t, cells, 2)
	out := filepath.Join(t.TempDir(), "camp")
	// Kill 0.7 s after the first cell started, 0.2 s after the first re-run's
	// first cell line, and 0.6 s after the second re-run's. (The campaign's
	// 10 s status line is no moment to wait for: four cells end sooner.)
	for _, kill := range []struct {
		line  string
		after time.Duration
	}{{"cell s1: started", 700 * time.Millisecond}, {"cell ", 200 * time.Millisecond}, {"cell ", 600 * time.Millisecond}} {
		p := startIn(t, repoRoot(t), "campaign", "--config", spec, "--out", out)
		p.line(t, kill.line, 120*time.Second)
		time.Sleep(kill.after)
		if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-p.done
	}
	if o, err := runIn(t, "campaign", "--config", spec, "--out", out); err != nil {
		t.Fatalf("campaign re-run: %v\n%s", err, o)
	}
	checkCells(t, out, cells)
}

// startIn starts the binary in dir (killed when the test ends).
func startIn(t *testing.T, dir string, args ...string) *proc {
	t.Helper()
	return startCmdIn(t, dir, binary, args...)
}
