package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// newBox is a sandbox; it fails the test on CI when bwrap is missing and
// skips elsewhere.
func newBox(t testing.TB) *Sandbox {
	t.Helper()
	s, err := New(Options{})
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		t.Skip(err)
	}
	return s
}

func sh(script string) []string { return []string{"/usr/bin/sh", "-c", script} }

func run(t *testing.T, s *Sandbox, spec Spec) *Result {
	t.Helper()
	if spec.Limits.Wall == 0 {
		spec.Limits.Wall = 20 * time.Second
	}
	r, err := s.Run(context.Background(), spec)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRunBasics(t *testing.T) {
	s := newBox(t)
	r := run(t, s, Spec{
		Argv:    sh(`id -u; pwd; echo "$GREETING"; env | sort | tr '\n' ' '; echo; cat in.txt; echo out > out.txt; mkdir sub; echo deep > sub/f; exit 7`),
		Env:     []string{"GREETING=hello"},
		Files:   []File{{Name: "in.txt", Data: []byte("input data\n")}},
		Collect: []string{"out.txt", "in.txt", "missing.txt"},
	})
	lines := strings.Split(r.Output, "\n")
	if r.ExitCode != 7 || len(lines) < 5 || lines[0] != "65534" || lines[1] != WorkDir || lines[2] != "hello" || lines[4] != "input data" {
		t.Fatalf("result %+v", r)
	}
	if env := strings.TrimSpace(lines[3]); env != "GREETING=hello HOME=/work LANG=C.UTF-8 PATH=/usr/bin:/bin PWD=/work TMPDIR=/work" {
		t.Errorf("environment: %q", env)
	}
	if e := r.Files["out.txt"]; e == nil || e.Type != "file" || string(e.Data) != "out\n" {
		t.Errorf("collected out.txt: %+v", e)
	}
	if r.Files["in.txt"] == nil || r.Files["missing.txt"] != nil || r.Files["sub/f"] != nil {
		t.Errorf("collected: %v", r.Files)
	}
	if r.Isolation != "bubblewrap" {
		t.Errorf("isolation %q", r.Isolation)
	}
	// "." collects the whole work directory.
	r = run(t, s, Spec{Argv: sh("mkdir -p a/b && echo x > a/b/c && ln -s /etc/passwd link && mkfifo pipe"), Collect: []string{"."}})
	if e := r.Files["a/b/c"]; e == nil || string(e.Data) != "x\n" || r.Files["link"].Type != "symlink" || r.Files["pipe"].Type != "fifo" || r.Files["a"].Type != "dir" {
		t.Errorf("whole dir: %v (%s)", r.Files, r.Output)
	}
}

func TestLimits(t *testing.T) {
	s := newBox(t)
	// Wall time: killed, reported, quick.
	start := time.Now()
	r := run(t, s, Spec{Argv: sh("sleep 30"), Limits: Limits{Wall: 300 * time.Millisecond}})
	if !r.TimedOut || r.LimitHit() != "wall time" || time.Since(start) > 5*time.Second {
		t.Errorf("wall: %+v after %s", r, time.Since(start))
	}
	// CPU seconds: SIGXCPU.
	r = run(t, s, Spec{Argv: sh("while :; do :; done"), Limits: Limits{CPU: 1}})
	if r.Signal != syscall.SIGXCPU || r.LimitHit() != "CPU time" {
		t.Errorf("cpu: %+v", r)
	}
	// Output: capped and marked.
	r = run(t, s, Spec{Argv: sh("head -c 100000 /dev/zero | tr '\\0' x"), Limits: Limits{Output: 1000}})
	if !r.OutputTruncated || len(r.Output) > 1100 {
		t.Errorf("output: %d bytes, truncated %v", len(r.Output), r.OutputTruncated)
	}
	// The work directory is a tmpfs of WorkMB: filling it fails (ENOSPC),
	// also across many files, and /tmp too; / is read-only.
	r = run(t, s, Spec{Argv: sh("i=0; while [ $i -lt 100 ]; do head -c 100000 /dev/zero > f$i || exit 3; i=$((i+1)); done"), Limits: Limits{WorkMB: 2}})
	if r.ExitCode != 3 || !strings.Contains(r.Output, "No space left") {
		t.Errorf("work size: %+v", r)
	}
	r = run(t, s, Spec{Argv: sh("head -c 3000000 /dev/zero > /tmp/f || echo tmpfull; touch /x || echo rootro"), Limits: Limits{WorkMB: 2}})
	if !strings.Contains(r.Output, "tmpfull") || !strings.Contains(r.Output, "rootro") {
		t.Errorf("/tmp and /: %q", r.Output)
	}
	// Collected files past CollectMB are refused as too large.
	r = run(t, s, Spec{Argv: sh("head -c 2000000 /dev/zero > big"), Collect: []string{"big"}, Limits: Limits{CollectMB: 1}})
	if e := r.Files["big"]; e == nil || !e.TooLarge || e.Data != nil || !r.CollectTruncated {
		t.Errorf("collect cap: %+v", r.Files["big"])
	}
	// Processes: a fork bomb stops at the limit.
	r = run(t, s, Spec{Argv: sh("(n=0; while [ $n -lt 50 ]; do sleep 5 & n=$((n+1)); done); set -- /proc/[0-9]*; echo $#"), Limits: Limits{Procs: 10, Wall: 20 * time.Second}})
	lines := strings.Split(strings.TrimSpace(r.Output), "\n")
	if n, err := strconv.Atoi(lines[len(lines)-1]); err != nil || n > 12 || !strings.Contains(r.Output, "Cannot fork") {
		t.Errorf("procs: %d processes (%v)\n%s", n, err, r.Output)
	}
}

// TestNoSurvivors: a process that detaches (new session, background)
// does not outlive the run, neither on return nor on the wall limit.
func TestNoSurvivors(t *testing.T) {
	s := newBox(t)
	mark := fmt.Sprintf("survivor-%d", time.Now().UnixNano())
	for _, wall := range []time.Duration{20 * time.Second, 500 * time.Millisecond} {
		r := run(t, s, Spec{Argv: sh("setsid sh -c 'exec sleep 60 " + mark + "' >/dev/null 2>&1 & sleep 0.2; [ " + fmt.Sprint(wall < time.Second) + " = true ] && sleep 30; exit 0"), Limits: Limits{Wall: wall}})
		_ = r
		time.Sleep(200 * time.Millisecond)
		if pids := procsWith(mark); len(pids) > 0 {
			t.Errorf("wall %s: survivors %v", wall, pids)
		}
	}
}

// procsWith lists host processes whose command line contains s.
func procsWith(s string) []string {
	var out []string
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), s) && !strings.Contains(string(b), "-test.") {
			out = append(out, e.Name()+": "+strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	return out
}

// TestNetwork: NetNone reaches no host listener (TCP on loopback,
// abstract or filesystem AF_UNIX); NetHost reaches the TCP one.
func TestNetwork(t *testing.T) {
	s := newBox(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	hits := make(chan string, 8)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			hits <- "tcp"
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	probe := fmt.Sprintf("exec 5<>/dev/tcp/127.0.0.1/%d && echo CONNECTED", port)
	// dash has no /dev/tcp; use python when present, else bash.
	argv := []string{"/usr/bin/bash", "-c", probe}
	if _, err := os.Stat("/usr/bin/bash"); err != nil {
		t.Skip("no /usr/bin/bash for the probe")
	}
	r := run(t, s, Spec{Argv: argv})
	if strings.Contains(r.Output, "CONNECTED") {
		t.Errorf("none: connected to the host listener: %q", r.Output)
	}
	r = run(t, s, Spec{Argv: argv, Network: NetHost})
	if !strings.Contains(r.Output, "CONNECTED") {
		t.Errorf("host: no connection: %q", r.Output)
	}
	select {
	case <-hits:
	case <-time.After(2 * time.Second):
		t.Error("host mode: listener saw nothing")
	}
	select {
	case h := <-hits:
		t.Errorf("extra connection %s", h)
	default:
	}
}

// TestRefusals: no bwrap on PATH, a bad read-only path.
func TestRefusals(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	_, err := New(Options{})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "apt-get install bubblewrap") || strings.Contains(err.Error(), "\n") {
		t.Errorf("no bwrap: %v", err)
	}
	if _, err := New(Options{ReadOnly: []string{"relative/dir"}}); err == nil {
		t.Error("relative read-only path accepted")
	}
	if _, err := New(Options{Bwrap: "/usr/bin/bwrap", ReadOnly: []string{"/nonexistent/runtime"}}); err == nil || !strings.Contains(err.Error(), "/nonexistent/runtime") {
		t.Errorf("missing read-only path: %v", err)
	}
	var logged string
	s, err := New(Options{Unsafe: true, Logf: func(f string, a ...any) { logged = fmt.Sprintf(f, a...) }})
	if err != nil || !s.Unsafe() || !strings.Contains(logged, "WITHOUT isolation") {
		t.Errorf("unsafe opt-in: %v, %q", err, logged)
	}
}

// TestHostUID: seen from the host, every sandboxed process runs as an
// unprivileged user (nobody for a root worker), never as root.
func TestHostUID(t *testing.T) {
	s := newBox(t)
	mark := fmt.Sprintf("uid-probe-%d", time.Now().UnixNano())
	done := make(chan *Result, 1)
	go func() {
		r, _ := s.Run(context.Background(), Spec{Argv: []string{"/usr/bin/sh", "-c", "sleep 3", mark}, Limits: Limits{Wall: 20 * time.Second}})
		done <- r
	}()
	want := os.Geteuid()
	if want == 0 {
		want = Nobody
	}
	seen := 0
	for deadline := time.Now().Add(2500 * time.Millisecond); time.Now().Before(deadline) && seen == 0; time.Sleep(50 * time.Millisecond) {
		for _, p := range procsWith(mark) {
			pid, _, _ := strings.Cut(p, ":")
			st, err := os.ReadFile(filepath.Join("/proc", pid, "status"))
			if err != nil {
				continue
			}
			for _, l := range strings.Split(string(st), "\n") {
				if f := strings.Fields(l); len(f) == 5 && f[0] == "Uid:" {
					seen++
					for _, u := range f[1:] {
						if u != fmt.Sprint(want) {
							t.Errorf("pid %s runs as %v on the host, want %d", pid, f[1:], want)
						}
					}
				}
			}
		}
	}
	if seen == 0 {
		t.Error("the sandboxed process was not found on the host")
	}
	<-done
}

// BenchmarkOverhead: /usr/bin/true in the sandbox (namespaces, mounts,
// rlimits, collecting one file) against exec'ing it directly; the metric
// is the difference of the medians.
func BenchmarkOverhead(b *testing.B) {
	s := newBox(b)
	var boxed, direct []time.Duration
	for i := 0; i < b.N; i++ {
		start := time.Now()
		r, err := s.Run(context.Background(), Spec{Argv: []string{"/usr/bin/true"}, Files: []File{{Name: "in", Data: []byte("x")}}, Collect: []string{"in"}})
		if err != nil || r.Failed() || r.Files["in"] == nil {
			b.Fatal(err, r)
		}
		boxed = append(boxed, time.Since(start))
		start = time.Now()
		c := exec.Command("/usr/bin/true")
		if err := c.Run(); err != nil {
			b.Fatal(err)
		}
		direct = append(direct, time.Since(start))
	}
	med := func(d []time.Duration) time.Duration {
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		return d[len(d)/2]
	}
	mb, md := med(boxed), med(direct)
	b.ReportMetric(float64(mb.Microseconds())/1000, "ms-sandboxed-median")
	b.ReportMetric(float64((mb-md).Microseconds())/1000, "ms-overhead-median")
}

// TestCommandPipes: the long-lived use (an environment bridge, an agent
// CLI): the caller drives the sandboxed process over stdin/stdout.
func TestCommandPipes(t *testing.T) {
	s := newBox(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd, cleanup, err := s.Command(ctx, Spec{Argv: sh(`while read line; do echo "got $line in $(pwd) as $(id -u)"; done`),
		Files: []File{{Name: "bridge.py", Data: []byte("pass\n")}}})
	if err != nil {
		t.Fatal(err)
	}
	defer cleanup()
	in, _ := cmd.StdinPipe()
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(in, "hello")
	fmt.Fprintln(in, "world")
	in.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	if out.String() != "got hello in /work as 65534\ngot world in /work as 65534\n" {
		t.Errorf("bridge output %q", out.String())
	}
}

// TestUnsafeMode: the explicit opt-out runs the same spec as a plain
// process in a temporary directory standing for /work, then removes it.
func TestUnsafeMode(t *testing.T) {
	tmp := t.TempDir()
	if err := os.Chmod(tmp, 0o755); err != nil { // a root worker runs the program as nobody
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Dir(tmp), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	s, err := New(Options{Unsafe: true, Logf: func(string, ...any) {}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Run(context.Background(), Spec{Argv: sh(`cat "$IN"; echo made > out.txt; pwd`), Env: []string{"IN=/work/in.txt"},
		Files: []File{{Name: "in.txt", Data: []byte("data\n")}}, Collect: []string{"out.txt"}, Limits: Limits{Wall: 10 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(r.Output), "\n")
	if r.ExitCode != 0 || len(lines) != 2 || lines[0] != "data" || !strings.HasPrefix(lines[1], os.Getenv("TMPDIR")) || r.Isolation != "none (unsafe opt-in)" {
		t.Errorf("unsafe run: %+v", r)
	}
	if e := r.Files["out.txt"]; e == nil || string(e.Data) != "made\n" {
		t.Errorf("collected: %+v", r.Files)
	}
	if ents, _ := os.ReadDir(os.Getenv("TMPDIR")); len(ents) != 0 {
		t.Errorf("left behind: %v", ents)
	}
}

// TestForwards: the loopback-only mode. A forwarded host endpoint answers
// at 127.0.0.1:PORT inside; the same host listener is not reachable
// directly, nor is any other.
func TestForwards(t *testing.T) {
	s := newBox(t)
	if _, err := os.Stat("/usr/bin/bash"); err != nil {
		t.Skip("no /usr/bin/bash for the probe")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				buf := make([]byte, 64)
				n, _ := c.Read(buf)
				fmt.Fprintf(c, "pong to %s", strings.TrimSpace(string(buf[:n])))
			}()
		}
	}()
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	otherPort := other.Addr().(*net.TCPAddr).Port
	probe := fmt.Sprintf(`exec 5<>/dev/tcp/127.0.0.1/8089 && echo ping >&5 && cat <&5; echo
(exec 6<>/dev/tcp/127.0.0.1/%d) 2>/dev/null && echo DIRECT-REACHED
(exec 7<>/dev/tcp/127.0.0.1/%d) 2>/dev/null && echo OTHER-REACHED
exit 0`, port, otherPort)
	r := run(t, s, Spec{Argv: []string{"/usr/bin/bash", "-c", probe}, Forwards: []Forward{{Port: 8089, Target: ln.Addr().String()}}})
	if !strings.Contains(r.Output, "pong to ping") || strings.Contains(r.Output, "REACHED") || r.ExitCode != 0 {
		t.Errorf("forward: %+v", r)
	}
	if _, err := s.Run(context.Background(), Spec{Argv: sh("true"), Network: NetHost, Forwards: []Forward{{Port: 1, Target: "x:1"}}}); err == nil {
		t.Error("forwards with NetHost accepted")
	}
	if _, err := s.Run(context.Background(), Spec{Argv: sh("true"), Forwards: []Forward{{Port: 80, Target: "no-port"}}}); err == nil {
		t.Error("a target without a port accepted")
	}
	// A port the sandbox's user may not bind (below 1024): the run ends
	// as soon as the forwarder exits, with its error, not after a wait.
	start := time.Now()
	r = run(t, s, Spec{Argv: sh("echo RAN"), Forwards: []Forward{{Port: 80, Target: ln.Addr().String()}}})
	if r.ExitCode != 125 || strings.Contains(r.Output, "RAN") || !strings.Contains(r.Output, "forwarder did not start: sandbox forwarder: listen tcp 127.0.0.1:80") {
		t.Errorf("forward on port 80: %+v", r)
	}
	t.Logf("a forward on port 80 fails in %v", time.Since(start))
}

// The unsafe mode never kills "every process it can" after the program:
// outside a PID namespace that would be every process of the user.
func TestUnsafeScriptKillsNothing(t *testing.T) {
	l := Limits{}.WithDefaults()
	if strings.Contains(initScript(l, []string{"x"}, false), "kill") {
		t.Error("the unsafe init script kills")
	}
	if !strings.Contains(initScript(l, nil, true), "kill -s KILL -- -1") {
		t.Error("the isolated init script does not kill survivors")
	}
}

// TestDiesWithWorker: when the worker dies (SIGKILL, no cleanup), every
// process of its sandboxes dies too.
func TestDiesWithWorker(t *testing.T) {
	if mark := os.Getenv("SANDBOX_HELPER_MARK"); mark != "" {
		// The helper worker: a sandbox running until killed.
		s := newBox(t)
		_, _ = s.Run(context.Background(), Spec{Argv: []string{"/usr/bin/sh", "-c", `setsid /usr/bin/sh -c 'sleep 120' "$0" & sleep 120`, mark}, Limits: Limits{Wall: time.Minute}}) // the parent kills this process meanwhile
		return
	}
	newBox(t)
	mark := fmt.Sprintf("worker-death-%d", time.Now().UnixNano())
	cmd := exec.Command(os.Args[0], "-test.run", "^TestDiesWithWorker$")
	cmd.Env = append(os.Environ(), "SANDBOX_HELPER_MARK="+mark)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var seen []string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		seen = procsWith(mark)
		if slices.ContainsFunc(seen, func(p string) bool { return strings.Contains(p, "-c sleep 120 "+mark) }) {
			break
		}
	}
	t.Logf("sandbox processes before the kill: %d (the setsid one included)", len(seen))
	if !slices.ContainsFunc(seen, func(p string) bool { return strings.Contains(p, "-c sleep 120 "+mark) }) {
		cmd.Process.Kill()
		t.Fatalf("the helper's sandbox did not start: %v", seen)
	}
	cmd.Process.Kill()
	cmd.Wait()
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		if seen = procsWith(mark); len(seen) == 0 {
			return
		}
	}
	t.Errorf("processes outlived the killed worker: %v", seen)
}

// TestBindsAndStreams: a bind shows a host directory read-only at the
// chosen place, binds over the sandbox's own mounts are refused, and
// Stdout/Stderr get the program's two streams apart.
func TestBindsAndStreams(t *testing.T) {
	s := newBox(t)
	host, err := os.MkdirTemp("", "sandbox-bind-") // readable by a root worker's nobody
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(host) })
	if err := os.Chmod(host, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(host, "tool.txt"), []byte("tool\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	r := run(t, s, Spec{
		Argv:   sh(`cat /opt/tool/tool.txt; echo to-stderr >&2; touch /opt/tool/x 2>/dev/null && echo WROTE; ls ` + host + ` 2>/dev/null && echo HOST-PATH`),
		Binds:  []Bind{{Source: host, Target: "/opt/tool"}},
		Stdout: &out, Stderr: &errb,
	})
	if r.ExitCode != 0 && r.ExitCode != 2 && r.ExitCode != 1 {
		t.Fatalf("exit %d", r.ExitCode)
	}
	if out.String() != "tool\n" || errb.String() != "to-stderr\n" || r.Output != "" {
		t.Errorf("stdout %q stderr %q output %q", out.String(), errb.String(), r.Output)
	}
	for _, bad := range []Bind{{host, "/work/x"}, {host, "/tmp"}, {host, "/"}, {host, "/usr/local"}, {"rel", "/opt/x"}, {host, "opt"}, {host + "/missing", "/opt/x"}} {
		if _, err := s.Run(context.Background(), Spec{Argv: sh("true"), Binds: []Bind{bad}}); err == nil {
			t.Errorf("bind %v accepted", bad)
		}
	}
}
