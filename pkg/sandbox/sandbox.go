// Package sandbox runs untrusted programs (model-written code, agent CLIs,
// environment bridges) under kernel isolation from bubblewrap (bwrap).
//
// Each run gets its own user, mount, PID, IPC, UTS and cgroup namespaces
// and, unless the caller asks for the host's, its own network namespace
// (nothing but a private loopback). Its filesystem is an empty read-only
// root holding /usr (and the extra runtime paths the caller names) read-only,
// a private /proc and a read-only /dev, and size-limited tmpfs mounts at
// /work (its working directory, HOME and TMPDIR), /tmp and /dev/shm. Nothing else of the host is there:
// no dataset, no gold answers, no other run, no host sockets, no /etc.
//
// The program runs as uid 65534 inside; a root worker also starts bwrap
// as uid 65534, so that even outside the namespaces the sandbox is nobody.
// Its rlimits (CPU, address space, file size, processes, open files) are
// set just before it starts. When it exits, every process it left behind
// is killed (the PID namespace's init exits and takes them all), the files
// the caller asked for are streamed out of the work directory as a tar
// stream that the Go side reads as hostile data (regular files only, sizes
// capped), and the tmpfs disappears. A cancelled context or the wall limit
// kills the whole tree; --die-with-parent kills it if the worker dies.
//
// There is no silent fallback: New refuses with one line naming what is
// missing (bwrap, user namespaces) and how to fix it. Running without
// isolation needs Options.Unsafe, which is logged.
package sandbox

import (
	"archive/tar"
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// WorkDir is the program's working directory inside the sandbox.
const WorkDir = "/work"

// Nobody is the user id the program runs as (and a root worker starts
// bwrap as).
const Nobody = 65534

// Network is what network a run may use.
type Network int

const (
	// NetNone is a private network namespace: only its own loopback, so
	// no host listener (TCP, UDP or abstract AF_UNIX) is reachable.
	NetNone Network = iota
	// NetHost shares the host's network namespace: for agent CLIs that
	// must reach a model endpoint. Everything else stays isolated; note
	// that abstract AF_UNIX sockets of the host are reachable then.
	NetHost
)

func (n Network) String() string {
	if n == NetHost {
		return "host"
	}
	return "none"
}

// ParseNetwork reads "none" or "host".
func ParseNetwork(s string) (Network, error) {
	switch s {
	case "", "none":
		return NetNone, nil
	case "host":
		return NetHost, nil
	}
	return NetNone, fmt.Errorf("sandbox network %q: want none or host", s)
}

// Limits bound one run. Zero fields take the defaults.
type Limits struct {
	Wall      time.Duration // wall-clock time (default 60s)
	CPU       int           // CPU seconds (default 30)
	MemoryMB  int           // address space per process (default 1024)
	FileMB    int           // largest file written (default 64)
	Procs     int           // processes and threads in the sandbox (default 64)
	OpenFiles int           // open files per process (default 256)
	WorkMB    int           // size of the /work tmpfs (default 256); /tmp and /dev/shm get min(WorkMB, 64) each
	Output    int           // bytes of stdout+stderr kept (default 64 KiB)
	CollectMB int           // bytes of collected files in all (default 64)
	// ResidentMB caps the resident memory not backed by a file (heaps,
	// stacks, shared anonymous and memfd mappings) of all the run's
	// processes together (0: no cap): the worker sums it every
	// ResidentPoll (default DefaultResidentPoll) and kills the run past
	// it (see memory.go for why a poll, not a cgroup).
	ResidentMB   int
	ResidentPoll time.Duration
}

// WithDefaults fills zero fields.
func (l Limits) WithDefaults() Limits {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	if l.Wall <= 0 {
		l.Wall = 60 * time.Second
	}
	def(&l.CPU, 30)
	def(&l.MemoryMB, 1024)
	def(&l.FileMB, 64)
	def(&l.Procs, 64)
	def(&l.OpenFiles, 256)
	def(&l.WorkMB, 256)
	def(&l.Output, 64<<10)
	def(&l.CollectMB, 64)
	return l
}

// File is placed in the work directory before the program starts.
type File struct {
	Name string // relative to WorkDir, no ".."
	Data []byte
	Mode os.FileMode // default 0644
}

// Spec is one run.
type Spec struct {
	// Argv is the program; Argv[0] is a path inside the sandbox (the host's
	// /usr is there, so /usr/bin/python3 is).
	Argv []string
	// Env is the program's whole environment (KEY=VALUE); HOME and TMPDIR
	// default to WorkDir and PATH to /usr/bin:/bin.
	Env     []string
	Files   []File
	Network Network
	// Forwards offer host endpoints inside a NetNone sandbox at
	// 127.0.0.1:Port (the loopback-only mode for agent CLIs: their model
	// endpoint and nothing else).
	Forwards []Forward
	Limits   Limits
	// Stdin is the program's standard input (default: none).
	Stdin io.Reader
	// Stdout and Stderr, when set, receive the program's output as it
	// comes, each on its own (Run then keeps no Result.Output); else both
	// go, capped at Limits.Output, to Result.Output.
	Stdout, Stderr io.Writer
	// Binds are host paths bound read-only at a place of the caller's
	// choosing (an agent CLI's install tree, CA certificates).
	Binds []Bind
	// NestedUserNS lets the program make user namespaces of its own
	// inside the sandbox (an agent CLI whose tool sandbox is bubblewrap
	// too). They nest inside this one: they see no more of the host, but
	// the kernel's namespace code is then reachable from the program.
	NestedUserNS bool
	// Collect names work-directory files to hand back in Result.Files;
	// "." hands back the whole work directory.
	Collect []string
}

// Bind is a host path offered read-only inside the sandbox.
type Bind struct {
	Source string // absolute host path
	Target string // absolute sandbox path, not under /work, /tmp, /proc, /dev or /run/sandbox-forward
}

// check refuses a bind that would shadow the sandbox's own mounts.
func (b Bind) check() error {
	if !filepath.IsAbs(b.Source) || !filepath.IsAbs(b.Target) {
		return fmt.Errorf("sandbox: bind %q -> %q: both paths must be absolute", b.Source, b.Target)
	}
	t := path.Clean(b.Target)
	for _, p := range []string{"/", WorkDir, "/tmp", "/proc", "/dev", "/usr", forwardDir} {
		if t == p || (p != "/" && strings.HasPrefix(t, p+"/")) {
			return fmt.Errorf("sandbox: bind target %q is (under) %s, which the sandbox mounts itself", b.Target, p)
		}
	}
	if _, err := os.Stat(b.Source); err != nil {
		return fmt.Errorf("sandbox: bind source: %w", err)
	}
	return nil
}

// Entry is a collected work-directory entry.
type Entry struct {
	Name string
	// Type is "file", "dir", "symlink", "fifo", "char", "block" or
	// "other"; only a file has Data.
	Type string
	Size int64
	Data []byte
	// TooLarge: a regular file that did not fit the collect limit; Data
	// is empty.
	TooLarge bool
	Mode     os.FileMode
}

// Result is a run's outcome.
type Result struct {
	ExitCode int // -1 when killed from outside (wall limit, cancel)
	// Signal, when the program was killed by one (SIGXCPU: CPU limit;
	// SIGKILL: memory or another hard limit; SIGXFSZ: file size).
	Signal          syscall.Signal
	TimedOut        bool
	Output          string // stdout and stderr, capped
	OutputTruncated bool
	// Files are the collected entries by name (see Spec.Collect).
	Files map[string]*Entry
	// CollectTruncated: the collected files exceeded Limits.CollectMB.
	CollectTruncated bool
	Elapsed          time.Duration
	// Isolation is "bubblewrap" or "none (unsafe opt-in)".
	Isolation string
	// MemoryExceeded: the run was killed for passing Limits.ResidentMB;
	// ResidentPeak is the largest sum of its processes' resident memory
	// not backed by a file seen (bytes; only with a cap).
	MemoryExceeded bool
	ResidentPeak   int64
}

// Failed reports whether the program did not run to a clean exit.
func (r *Result) Failed() bool { return r.TimedOut || r.ExitCode != 0 }

// LimitHit names the limit the run ran into, "" for none known.
func (r *Result) LimitHit() string {
	switch {
	case r.MemoryExceeded:
		return "memory (the resident set of the run's processes)"
	case r.TimedOut:
		return "wall time"
	case r.Signal == syscall.SIGXCPU:
		return "CPU time"
	case r.Signal == syscall.SIGXFSZ:
		return "file size"
	case r.Signal == syscall.SIGKILL:
		return "killed (memory or another hard limit)"
	case r.Signal == syscall.SIGSEGV || r.Signal == syscall.SIGABRT:
		return "crashed (" + r.Signal.String() + ", often the memory limit)"
	case r.OutputTruncated:
		return "output cap"
	case r.CollectTruncated:
		return "collect cap"
	}
	return ""
}

// Options configure a Sandbox.
type Options struct {
	// Bwrap is the bubblewrap binary (default: "bwrap" on PATH).
	Bwrap string
	// ReadOnly are host paths bound read-only at the same place besides
	// /usr (an interpreter outside /usr, see PythonRuntime).
	ReadOnly []string
	// Unsafe runs programs WITHOUT isolation (a plain process in a temp
	// directory, with the rlimits): an explicit opt-in, logged by New.
	Unsafe bool
	// Logf receives the unsafe-mode warning (default: standard error).
	Logf func(format string, args ...any)
}

// Sandbox runs programs; safe for concurrent use.
type Sandbox struct {
	bwrap  string
	ro     []string
	unsafe bool
}

// ErrUnavailable wraps every reason New refuses.
var ErrUnavailable = errors.New("sandbox unavailable")

var probeCache sync.Map // key → error (nil when the probe passed)

// New checks that isolation can be set up here (bwrap present, user
// namespaces usable, the read-only paths reachable) and returns the
// sandbox; else one line naming what is missing and how to fix it.
func New(o Options) (*Sandbox, error) {
	if o.Unsafe {
		logf := o.Logf
		if logf == nil {
			logf = func(f string, a ...any) { fmt.Fprintf(os.Stderr, f+"\n", a...) }
		}
		logf("sandbox: WARNING: running untrusted programs WITHOUT isolation (explicit unsafe opt-in): they can read the host's files, reach its network and outlive their run")
		return &Sandbox{unsafe: true}, nil
	}
	name := o.Bwrap
	if name == "" {
		name = "bwrap"
	}
	bw, err := exec.LookPath(name)
	if err != nil {
		return nil, fmt.Errorf("%w: bubblewrap (%s) is not on PATH: install it (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install bubblewrap)", ErrUnavailable, name)
	}
	var ro []string
	for _, p := range o.ReadOnly {
		if p == "" || !filepath.IsAbs(p) {
			return nil, fmt.Errorf("%w: read-only path %q is not absolute", ErrUnavailable, p)
		}
		p = filepath.Clean(p)
		if p == "/usr" || strings.HasPrefix(p, "/usr/") {
			continue
		}
		ro = append(ro, p)
	}
	sort.Strings(ro)
	s := &Sandbox{bwrap: bw, ro: ro}
	key := bw + "\x00" + strings.Join(ro, "\x00")
	if v, ok := probeCache.Load(key); ok {
		if v != nil {
			return nil, v.(error)
		}
		return s, nil
	}
	perr := s.probe()
	if perr != nil {
		probeCache.Store(key, perr)
		return nil, perr
	}
	probeCache.Store(key, nil)
	return s, nil
}

// probe runs /usr/bin/true in a full sandbox.
func (s *Sandbox) probe() error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	args := s.bwrapArgs(NetNone, Limits{}.WithDefaults(), nil, nil, false)
	args = append(args, "/usr/bin/true")
	cmd := exec.CommandContext(ctx, s.bwrap, args...)
	cmd.SysProcAttr = s.sysProcAttr()
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		msg = strings.ReplaceAll(msg, "\n", "; ")
		hint := "user namespaces must be available to uid " + strconv.Itoa(s.hostUID()) +
			" (sysctl user.max_user_namespaces > 0; kernel.unprivileged_userns_clone=1 on older Debian; kernel.apparmor_restrict_unprivileged_userns=0 on Ubuntu 23.10+; in a container, allow unshare/userns e.g. docker --security-opt seccomp=unconfined)"
		if strings.Contains(msg, "source path") {
			hint = "every read-only runtime path must exist and be readable by uid " + strconv.Itoa(s.hostUID())
		}
		return fmt.Errorf("%w: bwrap (%s) cannot set up isolation: %s; %s", ErrUnavailable, s.bwrap, msg, hint)
	}
	return nil
}

// Isolation says how runs are contained.
func (s *Sandbox) Isolation() string {
	if s.unsafe {
		return "none (unsafe opt-in)"
	}
	return "bubblewrap"
}

// Unsafe reports whether runs are not isolated.
func (s *Sandbox) Unsafe() bool { return s.unsafe }

// Bwrap is the bubblewrap binary in use ("" in unsafe mode).
func (s *Sandbox) Bwrap() string { return s.bwrap }

// hostUID is the uid bwrap runs as on the host.
func (s *Sandbox) hostUID() int {
	if os.Geteuid() == 0 {
		return Nobody
	}
	return os.Geteuid()
}

func (s *Sandbox) sysProcAttr() *syscall.SysProcAttr {
	attr := &syscall.SysProcAttr{Setpgid: true}
	DieWithParent(attr)
	if os.Geteuid() == 0 {
		// A root worker starts bwrap as nobody: the sandbox is nobody on
		// the host too, not root mapped to 65534.
		attr.Credential = &syscall.Credential{Uid: Nobody, Gid: Nobody, Groups: []uint32{}}
	}
	return attr
}

// bwrapArgs is the isolation: namespaces, the filesystem, the
// environment. files are (fd, name, mode) for --file; roBinds extra
// host paths (source, destination) bound read-only.
func (s *Sandbox) bwrapArgs(netw Network, l Limits, files []fileFD, roBinds [][2]string, nestedUserNS bool) []string {
	size := strconv.FormatInt(int64(l.WorkMB)<<20, 10)
	a := []string{"--unshare-all", "--unshare-user"}
	if !nestedUserNS {
		a = append(a, "--disable-userns")
	}
	a = append(a, "--die-with-parent", "--new-session",
		"--uid", strconv.Itoa(Nobody), "--gid", strconv.Itoa(Nobody),
		"--hostname", "sandbox",
		"--ro-bind", "/usr", "/usr")
	if netw == NetHost {
		a = append(a, "--share-net")
	}
	for _, l := range []string{"bin", "lib", "lib64", "sbin"} {
		if t, err := os.Readlink("/" + l); err == nil && strings.HasPrefix(t, "usr/") {
			a = append(a, "--symlink", t, "/"+l)
		} else if st, err := os.Stat("/" + l); err == nil && st.IsDir() {
			a = append(a, "--ro-bind", "/"+l, "/"+l)
		}
	}
	for _, p := range s.ro {
		a = append(a, "--ro-bind", p, p)
	}
	for _, b := range roBinds {
		a = append(a, "--ro-bind", b[0], b[1])
	}
	// Every writable place is a size-limited tmpfs: /work, and /tmp and
	// /dev/shm of at most 64 MiB each; /dev itself is read-only.
	small := strconv.FormatInt(int64(min(l.WorkMB, 64))<<20, 10)
	a = append(a, "--proc", "/proc", "--dev", "/dev",
		"--size", small, "--perms", "1777", "--tmpfs", "/dev/shm", "--remount-ro", "/dev",
		"--size", size, "--perms", "0755", "--tmpfs", WorkDir,
		"--size", small, "--perms", "1777", "--tmpfs", "/tmp")
	for _, f := range files {
		a = append(a, "--perms", fmt.Sprintf("%04o", f.mode), "--file", strconv.Itoa(f.fd), path.Join(WorkDir, f.name))
	}
	a = append(a, "--remount-ro", "/", "--chdir", WorkDir, "--clearenv")
	return a
}

type fileFD struct {
	fd   int
	name string
	mode os.FileMode
}

// cleanName checks a work-directory file name.
func cleanName(n string) (string, error) {
	c := path.Clean(n)
	if n == "" || path.IsAbs(n) || c == ".." || strings.HasPrefix(c, "../") || c == "." {
		return "", fmt.Errorf("sandbox: file name %q must be relative to the work directory", n)
	}
	return c, nil
}

// initScript runs the program under its rlimits with fd 3 closed, then
// (isolated mode only) kills everything else in the PID namespace, then
// streams the collected names out on fd 3.
func initScript(l Limits, collect []string, isolated bool) string {
	var b strings.Builder
	// CPU: SIGXCPU at the soft limit, SIGKILL a second later.
	fmt.Fprintf(&b, "(ulimit -c 0 && ulimit -t %d && ulimit -S -t %d", l.CPU+1, l.CPU)
	for _, kv := range []struct {
		flag string
		v    int64
	}{{"-v", int64(l.MemoryMB) << 10}, {"-f", int64(l.FileMB) << 11}, {"-p", int64(l.Procs)}, {"-n", int64(l.OpenFiles)}} {
		fmt.Fprintf(&b, " && ulimit %s %d", kv.flag, kv.v)
	}
	b.WriteString(` && exec "$@") 3>&-` + "\nst=$?\n")
	if isolated {
		// Every process but this one and the namespace's init: survivors
		// cannot change the files while they are collected.
		b.WriteString("kill -s KILL -- -1 2>/dev/null\n")
	}
	if len(collect) > 0 {
		b.WriteString("tar -c -f - --numeric-owner")
		whole := false
		for _, c := range collect {
			if c == "." {
				whole = true
			}
		}
		if !whole {
			b.WriteString(" --no-recursion --ignore-failed-read")
		}
		b.WriteString(" --")
		for _, c := range collect {
			b.WriteString(" " + shellQuote(c))
		}
		b.WriteString(" >&3 2>/dev/null\n")
	}
	b.WriteString("exit $st\n")
	return b.String()
}

func shellQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// Run executes spec and returns its result; an error means the sandbox
// could not run it at all (never that the program failed).
func (s *Sandbox) Run(ctx context.Context, spec Spec) (*Result, error) {
	if len(spec.Argv) == 0 {
		return nil, errors.New("sandbox: no program to run")
	}
	l := spec.Limits.WithDefaults()
	collect := make([]string, 0, len(spec.Collect))
	for _, c := range spec.Collect {
		if c == "." {
			collect = append(collect, ".")
			continue
		}
		n, err := cleanName(c)
		if err != nil {
			return nil, err
		}
		collect = append(collect, n)
	}
	ctx, cancel := context.WithTimeout(ctx, l.Wall)
	defer cancel()
	cr, cw, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	defer cr.Close()
	cmd, cleanup, err := s.command(ctx, spec, l, initScript(l, collect, !s.unsafe), cw)
	if err != nil {
		_ = cw.Close()
		return nil, err
	}
	defer cleanup()
	out := &capped{max: l.Output}
	cmd.Stdout, cmd.Stderr = out, out
	if spec.Stdout != nil || spec.Stderr != nil {
		cmd.Stdout, cmd.Stderr = orDiscard(spec.Stdout), orDiscard(spec.Stderr)
	}
	cmd.Stdin = spec.Stdin
	start := time.Now()
	err = cmd.Start()
	_ = cw.Close() // the sandbox holds the only write end now
	if err != nil {
		return nil, fmt.Errorf("sandbox: start %s: %w", cmd.Path, err)
	}
	// The collected tar stream is read while the program runs (tar only
	// writes after it ends).
	type collected struct {
		files     map[string]*Entry
		truncated bool
	}
	done := make(chan collected, 1)
	go func() {
		f, t := readCollected(cr, int64(l.CollectMB)<<20)
		_ = cr.Close() // a writer past the cap gets EPIPE
		done <- collected{f, t}
	}()
	var memPeak int64
	var memHit bool
	memDone := make(chan struct{})
	stopMem := make(chan struct{})
	if l.ResidentMB > 0 {
		pid := cmd.Process.Pid
		go func() {
			defer close(memDone)
			memPeak, memHit = watchResident(pid, int64(l.ResidentMB)<<20, cmp.Or(l.ResidentPoll, DefaultResidentPoll), stopMem,
				func() { _ = syscall.Kill(-pid, syscall.SIGKILL) })
		}()
	} else {
		close(memDone)
	}
	werr := cmd.Wait()
	close(stopMem)
	<-memDone
	timedOut := ctx.Err() != nil && !memHit
	res := &Result{Elapsed: time.Since(start), Isolation: s.Isolation(), MemoryExceeded: memHit, ResidentPeak: memPeak}
	var col collected
	// The stream ends at tar's end-of-archive, written before the
	// sandbox exits; on a loaded host reading it can lag the exit by
	// seconds, so the collector gets until the run's deadline (at least
	// 2 s), never a fixed 2 s that silently drops a saved output.
	grace := 2 * time.Second
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) > grace {
		grace = time.Until(dl)
	}
	select {
	case col = <-done:
	case <-time.After(grace):
		_ = cr.Close()
		col = <-done
	}
	res.Files, res.CollectTruncated = col.files, col.truncated
	res.Output, res.OutputTruncated = out.String(), out.lost
	if timedOut {
		res.TimedOut, res.ExitCode = true, -1
		res.Files = nil
		return res, nil
	}
	var ee *exec.ExitError
	switch {
	case errors.As(werr, &ee):
		res.ExitCode = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.ExitCode, res.Signal = -1, ws.Signal()
		} else if res.ExitCode > 128 && res.ExitCode < 128+65 {
			// The shell reports a program killed by signal N as 128+N.
			res.Signal = syscall.Signal(res.ExitCode - 128)
		}
	case errors.Is(werr, exec.ErrWaitDelay):
		// The program exited 0 but a process of the sandbox (bwrap's
		// init, still being torn down on a loaded host) held the output
		// pipe past WaitDelay: the run stands, its output as copied so far.
	case werr != nil:
		return nil, fmt.Errorf("sandbox: wait: %w", werr)
	}
	return res, nil
}

// command builds the bwrap (or, unsafe, plain) command running script
// with spec.Argv as its arguments; collectW becomes fd 3.
func (s *Sandbox) command(ctx context.Context, spec Spec, l Limits, script string, collectW *os.File) (*exec.Cmd, func(), error) {
	env := map[string]string{"PATH": "/usr/bin:/bin", "HOME": WorkDir, "TMPDIR": WorkDir, "LANG": "C.UTF-8"}
	var order []string
	for k := range env {
		order = append(order, k)
	}
	for _, kv := range spec.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, nil, fmt.Errorf("sandbox: environment entry %q is not KEY=VALUE", kv)
		}
		if _, seen := env[k]; !seen {
			order = append(order, k)
		}
		env[k] = v
	}
	sort.Strings(order)
	if s.unsafe {
		if len(spec.Forwards) > 0 {
			return nil, nil, errors.New("sandbox: forwards need the isolation (unsafe mode has the host network)")
		}
		if len(spec.Binds) > 0 {
			return nil, nil, errors.New("sandbox: binds need the isolation (unsafe mode sees the host's files at their own paths)")
		}
		return s.unsafeCommand(ctx, spec, script, collectW, env, order)
	}
	var fds []fileFD
	extra := []*os.File{collectW}
	var fw *forwarding
	closeAll := func() {
		for _, f := range extra[1:] {
			if fw == nil || f != fw.exe {
				_ = f.Close()
			}
		}
		if fw != nil {
			fw.close()
		}
	}
	if len(spec.Forwards) > 0 {
		if spec.Network != NetNone {
			return nil, nil, errForwardNetwork
		}
		var err error
		if fw, err = startForwards(spec.Forwards); err != nil {
			return nil, nil, err
		}
		extra = append(extra, fw.exe)
		script = fw.script(2+len(extra)) + fmt.Sprintf("exec %d>&-\n", 2+len(extra)) + script
	}
	for _, f := range spec.Files {
		name, err := cleanName(f.Name)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		mfd, err := memFile(name, f.Data)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		mode := f.Mode.Perm()
		if mode == 0 {
			mode = 0o644
		}
		extra = append(extra, mfd)
		fds = append(fds, fileFD{fd: 2 + len(extra), name: name, mode: mode})
	}
	var binds [][2]string
	for _, b := range spec.Binds {
		if err := b.check(); err != nil {
			closeAll()
			return nil, nil, err
		}
		binds = append(binds, [2]string{b.Source, path.Clean(b.Target)})
	}
	if fw != nil {
		binds = append(binds, [2]string{fw.dir, forwardDir})
	}
	args := s.bwrapArgs(spec.Network, l, fds, binds, spec.NestedUserNS)
	for _, k := range order {
		args = append(args, "--setenv", k, env[k])
	}
	args = append(args, "--", "/usr/bin/sh", "-c", script, "sandbox-init")
	args = append(args, spec.Argv...)
	cmd := exec.CommandContext(ctx, s.bwrap, args...)
	cmd.Env = []string{}
	cmd.Dir = "/"
	cmd.ExtraFiles = extra
	cmd.SysProcAttr = s.sysProcAttr()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	return cmd, closeAll, nil
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

// readCollected reads the tar stream of collected entries; only regular
// files carry data, capped at max bytes in all.
func readCollected(r io.Reader, limit int64) (map[string]*Entry, bool) {
	files := map[string]*Entry{}
	tr := tar.NewReader(r)
	var used int64
	truncated := false
	for len(files) < 100000 {
		h, err := tr.Next()
		if err != nil {
			break
		}
		name := strings.TrimSuffix(path.Clean(strings.TrimPrefix(h.Name, "./")), "/")
		if name == "" || name == "." || path.IsAbs(name) || name == ".." || strings.HasPrefix(name, "../") {
			continue
		}
		e := &Entry{Name: name, Size: h.Size, Mode: os.FileMode(h.Mode).Perm()}
		switch h.Typeflag {
		case tar.TypeReg:
			e.Type = "file"
			if h.Size < 0 || used+h.Size > limit {
				e.TooLarge, truncated = true, true
				files[name] = e
				return files, truncated
			}
			data, err := io.ReadAll(io.LimitReader(tr, h.Size))
			if err != nil || int64(len(data)) != h.Size {
				return files, truncated
			}
			used += h.Size
			e.Data = data
		case tar.TypeDir:
			e.Type = "dir"
		case tar.TypeSymlink, tar.TypeLink:
			e.Type = "symlink"
		case tar.TypeFifo:
			e.Type = "fifo"
		case tar.TypeChar:
			e.Type = "char"
		case tar.TypeBlock:
			e.Type = "block"
		default:
			e.Type = "other"
		}
		files[name] = e
	}
	return files, truncated
}

// capped keeps the first max bytes written to it.
type capped struct {
	mu   sync.Mutex
	max  int
	b    bytes.Buffer
	lost bool
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.b.Len(); room > 0 {
		c.b.Write(p[:min(room, len(p))])
		if len(p) > room {
			c.lost = true
		}
	} else if len(p) > 0 {
		c.lost = true
	}
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lost {
		return c.b.String() + "\n[... output truncated ...]"
	}
	return c.b.String()
}
