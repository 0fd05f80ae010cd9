package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/skillfleet/skillfleet/internal/loadtest"
	"github.com/skillfleet/skillfleet/pkg/bench/spreadsheet"
	"github.com/skillfleet/skillfleet/pkg/queue/queuetest"
	"github.com/skillfleet/skillfleet/pkg/sandbox"
)

// binary is the skillfleet binary built once for the process tests.
var binary string

func TestMain(m *testing.M) {
	if code, ok := sandbox.RunForwarder(); ok {
		os.Exit(code)
	}
	if code, ok := spreadsheet.RunScorerChild(); ok {
		os.Exit(code)
	}
	dir, err := os.MkdirTemp("", "skillfleet-bin-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "skillfleet")
	cmd := exec.Command("go", "build", "-tags", "crashhook", "-o", binary, ".")
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		panic("build skillfleet: " + err.Error())
	}
	// A test that leaves a goroutine of this process running (an embedded
	// NATS server, an HTTP server, the sim, a reader of a child's output)
	// fails the run once every test has ended.
	goleak.VerifyTestMain(m, goleak.Cleanup(func(code int) {
		_ = os.RemoveAll(dir)
		os.Exit(code)
	}))
}

// proc is a running skillfleet process.
type proc struct {
	cmd    *exec.Cmd
	stdout *bufio.Reader
	done   chan error
	stderr *syncBuf
}

// syncBuf is a strings.Builder safe for one writer and concurrent readers.
type syncBuf struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func start(t *testing.T, args ...string) *proc {
	t.Helper()
	return startCmd(t, binary, args...)
}

// startCmd starts any program as a test process (killed when the test ends).
func startCmd(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	return startCmdIn(t, "", name, args...)
}

// startCmdIn starts a program in dir ("" = this directory).
func startCmdIn(t *testing.T, dir, name string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := &syncBuf{}
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, stdout: bufio.NewReader(out), done: make(chan error, 1), stderr: stderr}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
		}
	})
	return p
}

// line reads stdout until a line with prefix appears.
func (p *proc) line(t *testing.T, prefix string, timeout time.Duration) string {
	t.Helper()
	type res struct {
		s   string
		err error
	}
	ch := make(chan res, 1)
	go func() {
		for {
			s, err := p.stdout.ReadString('\n')
			if err != nil {
				ch <- res{err: err}
				return
			}
			if strings.HasPrefix(s, prefix) {
				ch <- res{s: strings.TrimSpace(s)}
				return
			}
		}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			t.Fatalf("waiting for %q: %v", prefix, r.err)
		}
		return r.s
	case <-time.After(timeout):
		t.Fatalf("no %q line after %s", prefix, timeout)
		return ""
	}
}

func TestMultiProcessWorkerKilledMidBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	ns := queuetest.Start(t)
	coord := start(t, "loadtest", "--nats", ns.URL(), "--tasks", "2000", "--task-ms", "20", "--ack-wait", "2s", "--out", t.TempDir())
	addr := strings.TrimPrefix(coord.line(t, "coordinator listening on ", 30*time.Second), "coordinator listening on ")
	var workers []*proc
	for range 3 {
		workers = append(workers, start(t, "worker", "--nats", ns.URL(), "--coordinator", addr, "--concurrency", "8", "--log-level", "warn"))
	}
	time.Sleep(700 * time.Millisecond) // let the batch get going across processes
	if err := workers[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-workers[0].done
	start(t, "worker", "--nats", ns.URL(), "--coordinator", addr, "--concurrency", "8", "--log-level", "warn")
	out := coord.line(t, "{", 120*time.Second)
	var rep loadtest.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("report %q: %v", out, err)
	}
	if rep.Recorded != 2000 || rep.MaxRecordCount != 1 || rep.Failed != 0 {
		t.Errorf("report = %+v, want 2000 recorded, each exactly once, none failed\ncoordinator stderr:\n%s", rep, coord.stderr.String())
	}
	// SIGTERM drains the surviving workers cleanly.
	for _, w := range workers[1:] {
		_ = w.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-w.done:
			if err != nil {
				t.Errorf("worker exit after SIGTERM: %v", err)
			}
		case <-time.After(40 * time.Second):
			t.Error("worker did not exit after SIGTERM")
		}
	}
}

func TestWorkerRetriesDeadNATS(t *testing.T) {
	if testing.Short() {
		t.Skip("starts processes")
	}
	p := start(t, "worker", "--nats", "nats://127.0.0.1:1", "--coordinator", "127.0.0.1:2", "--log-level", "warn")
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if strings.Count(p.stderr.String(), "nats unreachable, retrying") >= 2 {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("worker did not report retrying a dead NATS; stderr:\n%s", p.stderr.String())
}
