package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/coordinator/dispatch"
	"github.com/skillfleet/skillfleet/pkg/rundir"
	pb "github.com/skillfleet/skillfleet/proto/skillfleet/v1"
)

// The history tests run this build against a real earlier commit of the
// repository (testdata/history/commit): run dirs that commit's binary
// wrote and was killed in the middle of (scripts/history-fixtures.sh), and
// worker processes built from that commit at test time.

// historyCommit is the earlier commit the fixtures and old workers come from.
func historyCommit(t *testing.T) string {
	t.Helper()
	return strings.TrimSpace(string(readFile(t, filepath.Join("testdata", "history", "commit"))))
}

// copyDir copies the directory tree src into a new temporary directory.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dst
}

// TestHistoryRunDirsResumeWithTheSameDecisions resumes, with this build,
// the demo and the paper-preset run dirs that the earlier commit's binary
// left when it was killed mid-run. They predate format.json (run-dir
// format 0): the resume migrates them (and logs it), and every decision
// equals the uninterrupted run's byte for byte (the goldens of
// coordinator/testdata/golden, which TestGoldenDecisions pins).
func TestHistoryRunDirsResumeWithTheSameDecisions(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the demo and the paper preset")
	}
	t.Parallel()
	for _, c := range []struct{ name, config string }{
		{"demo", "configs/demo.yaml"},
		{"sim_paper", "configs/sim_paper.yaml"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			fixture := filepath.Join("testdata", "history", c.name)
			if _, err := os.Stat(filepath.Join(fixture, rundir.FormatFile)); err == nil {
				t.Fatalf("%s has %s: not a run dir of the earlier format", fixture, rundir.FormatFile)
			}
			if _, err := os.Stat(filepath.Join(fixture, rundir.SummaryFile)); err == nil {
				t.Fatalf("%s has %s: the earlier run was not killed mid-run", fixture, rundir.SummaryFile)
			}
			dir := copyDir(t, fixture)
			before := bytes.Count(readFile(t, filepath.Join(dir, rundir.EventsFile)), []byte("\n"))
			out, err := runIn(t, "train", "--config", c.config, "--out", dir, "--log-level", "info")
			if err != nil {
				t.Fatalf("resume of the earlier commit's run dir: %v\n%s", err, out)
			}
			if !strings.Contains(out, "run dir migrated") || !strings.Contains(out, "from_format=0") {
				t.Errorf("resume did not log the migration from format 0:\n%s", out)
			}
			if f, err := rundir.ReadFormat(dir); err != nil || f != rundir.FormatVersion {
				t.Errorf("run dir format after resume = %q, %v; want %s", f, err, rundir.FormatVersion)
			}
			// The uninterrupted run's decisions, pinned byte for byte by
			// TestGoldenDecisions.
			golden := filepath.Join(repoRoot(t), "coordinator", "testdata", "golden", c.name+".")
			after := bytes.Count(readFile(t, golden+rundir.EventsFile), []byte("\n"))
			if before == 0 || before >= after {
				t.Fatalf("fixture holds %d of the run's %d events: not killed mid-run", before, after)
			}
			for _, f := range []string{rundir.EventsFile, rundir.BestSkillFile} {
				if !bytes.Equal(readFile(t, filepath.Join(dir, f)), readFile(t, golden+f)) {
					t.Errorf("%s of the earlier commit's run dir, resumed by this build, differs from the uninterrupted run's (%s)", f, golden+f)
				}
			}
			recordedOnce(t, c.name, dir)
		})
	}
}

// TestHistoryRunDirOfAnotherFormatIsRefusedInOneLine: a run dir stamped
// with a run-dir format of another major is refused before any of its
// files is read, in one line naming both formats, and left as it was.
func TestHistoryRunDirOfAnotherFormatIsRefusedInOneLine(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the binary")
	}
	t.Parallel()
	dir := copyDir(t, filepath.Join("testdata", "history", "demo"))
	if err := os.WriteFile(filepath.Join(dir, rundir.FormatFile), []byte(`{"run_dir_format":"2.0"}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	events := readFile(t, filepath.Join(dir, rundir.EventsFile))
	journal := readFile(t, filepath.Join(dir, "results.journal"))
	cmd := exec.Command(binary, "train", "--config", "configs/demo.yaml", "--out", dir, "--log-level", "error")
	cmd.Dir = repoRoot(t)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || ee.ExitCode() != exitError {
		t.Fatalf("train on a format-2.0 run dir: %v, want exit %d\n%s", err, exitError, stderr.String())
	}
	msg := strings.TrimSpace(stderr.String())
	if strings.Count(msg, "\n") != 0 {
		t.Errorf("refusal is %d lines, want one:\n%s", strings.Count(msg, "\n")+1, msg)
	}
	for _, want := range []string{dir, "run-dir format 2.0", rundir.FormatVersion} {
		if !strings.Contains(msg, want) {
			t.Errorf("refusal %q does not name %q", msg, want)
		}
	}
	if !bytes.Equal(readFile(t, filepath.Join(dir, rundir.EventsFile)), events) ||
		!bytes.Equal(readFile(t, filepath.Join(dir, "results.journal")), journal) {
		t.Error("the refused run dir's events or journal changed")
	}
}

// oldWorker is the earlier commit's binary, built once per test binary
// from the repository's history into the test binary's temp dir.
var oldWorker struct {
	once sync.Once
	path string
	err  string
}

func oldBinary(t *testing.T) string {
	t.Helper()
	commit := historyCommit(t)
	oldWorker.once.Do(func() {
		root := repoRoot(t)
		if out, err := exec.Command("git", "-C", root, "cat-file", "-e", commit+"^{commit}").CombinedOutput(); err != nil {
			oldWorker.err = "commit " + commit + " is not in this clone's history (a shallow clone?): " + strings.TrimSpace(string(out))
			return
		}
		dir := filepath.Join(filepath.Dir(binary), "history-"+commit[:12])
		src := filepath.Join(dir, "src")
		if err := os.MkdirAll(src, 0o755); err != nil {
			oldWorker.err = err.Error()
			return
		}
		archive := exec.Command("bash", "-c", `git -C "$1" archive --format=tar "$2" | tar -x -C "$3"`, "archive", root, commit, src)
		if out, err := archive.CombinedOutput(); err != nil {
			oldWorker.err = "git archive " + commit + ": " + err.Error() + "\n" + string(out)
			return
		}
		// The archive is no checkout: a repository above the build directory
		// (a stray .git in $TMPDIR) must not be asked for its status.
		build := exec.Command("go", "build", "-buildvcs=false", "-o", filepath.Join(dir, "skillfleet"), "./cmd/skillfleet")
		build.Dir = src
		if out, err := build.CombinedOutput(); err != nil {
			oldWorker.err = "build " + commit + ": " + err.Error() + "\n" + string(out)
			return
		}
		oldWorker.path = filepath.Join(dir, "skillfleet")
	})
	if oldWorker.err != "" {
		if os.Getenv("CI") != "" {
			t.Fatal(oldWorker.err)
		}
		t.Skip(oldWorker.err)
	}
	return oldWorker.path
}

// wireVersions counts the results in a run dir's journal by the wire
// version of the worker that produced them (0: a worker from before the
// field). It reads a copy: the journal may be live.
func wireVersions(t *testing.T, dir string) map[uint32]int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "results.journal"))
	if err != nil {
		return nil
	}
	cp := filepath.Join(t.TempDir(), "results.journal")
	if err := os.WriteFile(cp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	j, results, err := dispatch.OpenJournal(cp, true)
	if err != nil {
		t.Fatal(err)
	}
	_ = j.Close()
	n := map[uint32]int{}
	for _, r := range results {
		if r.GetWorkerId() != "" && r.GetOutcome() == pb.Outcome_OUTCOME_OK {
			n[r.GetWireVersion()]++
		}
	}
	return n
}

// TestMixedVersionFleetRollsMidCampaign runs a campaign on one fleet of
// worker processes built from the earlier commit (no wire_version field:
// wire version 1 by default) and from this build at once; mid-run the old
// workers are killed and new ones started. Every cell makes exactly the
// decisions it makes alone, each result recorded once, and both versions
// served tasks.
func TestMixedVersionFleetRollsMidCampaign(t *testing.T) {
	if testing.Short() {
		t.Skip("builds an earlier commit and starts processes")
	}
	t.Parallel()
	old := oldBinary(t)
	url := startNatsd(t)
	var olds []*proc
	for range 2 {
		olds = append(olds, startCmd(t, old, "worker", "--nats", url, "--concurrency", "12", "--optimizer-concurrency", "8", "--log-level", "warn"))
	}
	startFleetWorker(t, url, "12")
	cells := sixCells()[:4]
	spec := writeCampaign(t, cells, 4)
	out := filepath.Join(t.TempDir(), "camp")
	camp := startIn(t, repoRoot(t), "campaign", "--config", spec, "--out", out, "--nats", url)

	// Roll the fleet once the old workers have served some of the work.
	deadline := time.Now().Add(3 * time.Minute)
	for {
		served := 0
		for _, c := range cells {
			served += wireVersions(t, filepath.Join(out, "cells", c.name))[0]
		}
		if served >= 20 {
			break
		}
		select {
		case err := <-camp.done:
			t.Fatalf("campaign ended before the roll (old workers served %d tasks): %v\n%s", served, err, camp.stderr.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("old workers served %d tasks in 3 minutes", served)
		}
		time.Sleep(100 * time.Millisecond) // bounded poll across processes
	}
	for i, p := range olds {
		if err := p.cmd.Process.Signal(syscall.SIGKILL); errors.Is(err, os.ErrProcessDone) {
			t.Fatalf("old worker %d exited before the roll: %v\n%s", i, <-p.done, p.stderr.String())
		} else if err != nil {
			t.Fatal(err)
		}
		<-p.done
	}
	startFleetWorker(t, url, "12")
	startFleetWorker(t, url, "12")

	select {
	case err := <-camp.done:
		if err != nil {
			t.Fatalf("campaign on the rolled fleet: %v\n%s", err, camp.stderr.String())
		}
	case <-time.After(5 * time.Minute):
		t.Fatalf("campaign not done 5 minutes after the roll\n%s", camp.stderr.String())
	}
	checkCells(t, out, cells)
	total := map[uint32]int{}
	for _, c := range cells {
		for v, n := range wireVersions(t, filepath.Join(out, "cells", c.name)) {
			total[v] += n
		}
	}
	if total[0] == 0 || total[pb.WireVersion] == 0 {
		t.Errorf("results by worker wire version = %v: want results from both the earlier commit's workers (0) and this build's (%d)", total, pb.WireVersion)
	}
	t.Logf("results by worker wire version (0 = %s): %v", historyCommit(t)[:12], total)
}
