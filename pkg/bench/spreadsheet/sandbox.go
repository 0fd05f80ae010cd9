package spreadsheet

// What the sandbox contains, and how:
//
//   - Files: the program runs in a fresh directory under the system
//     temporary directory (its working directory, HOME and TMPDIR) holding
//     a copy of the input workbook. An audit hook in the interpreter
//     refuses opening a file for writing, and removing, renaming,
//     creating directories, linking, chmod/chown/utime and truncating,
//     outside that directory (/dev/null excepted). Reading is allowed. A
//     root worker also runs the program as nobody (65534), so the kernel
//     refuses writes to anything not writable by everyone.
//   - Network: a new network namespace (with a new user namespace when the
//     worker is not root) where the kernel allows one: only a loopback
//     interface, which is down. The audit hook refuses every socket
//     operation but creating one in any case, and alone when the kernel
//     refuses the namespace. RunResult.Network says which applied.
//   - Processes: the audit hook refuses subprocess, os.system, exec, spawn
//     and fork; RLIMIT_NPROC allows Limits.Procs more processes or threads
//     than the user already runs. The program is in its own process
//     group, killed as a whole at the wall limit or cancellation.
//   - Resources: RLIMIT_CPU, RLIMIT_AS (memory), RLIMIT_FSIZE (largest
//     file), no core files; stdout and stderr kept to Limits.Output bytes.
//   - Environment: only PATH=/usr/bin:/bin, LANG=C.UTF-8, HOME, TMPDIR,
//     INPUT_PATH, OUTPUT_PATH; Python in isolated mode (-I: no PYTHON*
//     variables, no user site-packages). The program's own bindings of
//     INPUT_PATH and OUTPUT_PATH are removed from its syntax tree.
//
// The audit hook and the limits guard against generated code's mistakes;
// they are not a boundary against deliberately hostile code (ctypes, or
// code that edits the hook's state, can get past the hook). The network
// namespace and the nobody user are enforced by the kernel.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"
)

// Limits bound one execution of generated code.
type Limits struct {
	Wall     time.Duration // wall-clock time (default 60s)
	CPU      int           // CPU seconds (default 30)
	MemoryMB int           // address space (default 1024)
	FileMB   int           // largest file written (default 64)
	Procs    int           // processes and threads beyond those the user already runs (default 32)
	Output   int           // bytes of stdout+stderr kept (default 64 KiB)
}

func (l Limits) withDefaults() Limits {
	if l.Wall <= 0 {
		l.Wall = 60 * time.Second
	}
	if l.CPU <= 0 {
		l.CPU = 30
	}
	if l.MemoryMB <= 0 {
		l.MemoryMB = 1024
	}
	if l.FileMB <= 0 {
		l.FileMB = 64
	}
	if l.Procs <= 0 {
		l.Procs = 32
	}
	if l.Output <= 0 {
		l.Output = 64 << 10
	}
	return l
}

// RunResult is one execution's outcome.
type RunResult struct {
	ExitCode int
	TimedOut bool
	Output   string // stdout and stderr, capped
	// Network is how network access was denied: "namespace" (a fresh
	// network namespace: no interface but loopback) or "audit-hook" (the
	// interpreter refuses socket operations).
	Network string
}

// Failed reports whether the code did not run to a clean exit.
func (r RunResult) Failed() bool { return r.TimedOut || r.ExitCode != 0 }

// bootstrap runs the user's code under limits and an audit hook that
// refuses network access, process creation and writes outside the work
// directory. INPUT_PATH and OUTPUT_PATH are set as globals and in the
// environment.
const bootstrap = `import os, sys, resource
cpu, mem, fsize, procs = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu))
resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
resource.setrlimit(resource.RLIMIT_CORE, (0, 0))

def _tasks():
    # Threads the real user runs now: RLIMIT_NPROC counts them all.
    uid, n = os.getuid(), 0
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                if os.stat("/proc/" + pid).st_uid == uid:
                    n += len(os.listdir("/proc/" + pid + "/task"))
            except OSError:
                pass
    return n

_soft, _hard = resource.getrlimit(resource.RLIMIT_NPROC)
_cap = _tasks() + procs
if _hard != resource.RLIM_INFINITY:
    _cap = min(_cap, _hard)
resource.setrlimit(resource.RLIMIT_NPROC, (_cap, _cap))
del _soft, _hard, _cap
WORK = os.path.realpath(os.getcwd())
_real = os.path.realpath
_WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

def _inside(p):
    try:
        p = os.fsdecode(p)
    except Exception:
        return False
    r = _real(p)
    return r == WORK or r.startswith(WORK + os.sep) or r == "/dev/null"

def _hook(event, args):
    if event.startswith("socket.") and event not in ("socket.gethostname", "socket.__new__"):
        raise PermissionError("sandbox: network access is not allowed (" + event + ")")
    if event in ("subprocess.Popen", "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "pty.spawn"):
        raise PermissionError("sandbox: starting processes is not allowed (" + event + ")")
    if event == "open":
        path, mode, flags = args
        if isinstance(path, int):
            return
        writing = (mode is not None and any(c in mode for c in "wax+")) or (mode is None and flags is not None and flags & _WRITE)
        if writing and not _inside(path):
            raise PermissionError("sandbox: writing outside the work directory is not allowed: " + os.fsdecode(path))
    if event in ("os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.symlink", "os.link", "os.chmod", "os.chown", "os.utime", "os.truncate", "os.setxattr", "os.removexattr", "shutil.rmtree"):
        for a in args[:2]:
            if isinstance(a, (str, bytes, os.PathLike)) and not _inside(a):
                raise PermissionError("sandbox: changing files outside the work directory is not allowed")

INPUT_PATH = os.path.join(WORK, "input.xlsx")
OUTPUT_PATH = os.path.join(WORK, "output.xlsx")

import ast

class _KeepPaths(ast.NodeTransformer):
    # The code's own bindings of INPUT_PATH / OUTPUT_PATH are dropped: a
    # plain or annotated assignment of one becomes pass, an augmented one
    # pass, and any other binding (tuple targets, for, with, :=) binds a
    # throwaway name instead.
    def _fixed(self, t):
        return isinstance(t, ast.Name) and t.id in ("INPUT_PATH", "OUTPUT_PATH")
    def visit_Assign(self, node):
        node.targets = [t for t in node.targets if not self._fixed(t)]
        if not node.targets:
            return ast.copy_location(ast.Pass(), node)
        return self.generic_visit(node)
    def visit_AnnAssign(self, node):
        if self._fixed(node.target):
            return ast.copy_location(ast.Pass(), node)
        return self.generic_visit(node)
    def visit_AugAssign(self, node):
        if self._fixed(node.target):
            return ast.copy_location(ast.Pass(), node)
        return self.generic_visit(node)
    def visit_Name(self, node):
        if isinstance(node.ctx, ast.Store) and node.id in ("INPUT_PATH", "OUTPUT_PATH"):
            node.id = "_sandbox_discarded"
        return node

with open("solution.py") as f:
    src = f.read()
tree = ast.fix_missing_locations(_KeepPaths().visit(ast.parse(src, "solution.py")))
code = compile(tree, "solution.py", "exec")
del ast, src, tree, f
sys.addaudithook(_hook)
exec(code, {"__name__": "__main__", "INPUT_PATH": INPUT_PATH, "OUTPUT_PATH": OUTPUT_PATH})
`

// nobody is the user id a root worker runs generated code as.
const nobody = 65534

// Sandbox runs generated Python code against one input workbook.
type Sandbox struct {
	Python string
	Limits Limits
	// noNamespace disables the network namespace (tests of the fallback).
	noNamespace bool
}

// Run executes code with input copied into a fresh work directory under
// the system temporary directory and returns the result and that
// directory, which holds the output workbook (OutputName) and which the
// caller removes.
func (s *Sandbox) Run(ctx context.Context, code, input string) (RunResult, string, error) {
	l := s.Limits.withDefaults()
	data, err := os.ReadFile(input)
	if err != nil {
		return RunResult{}, "", fmt.Errorf("input workbook: %w", err)
	}
	dir, err := os.MkdirTemp("", "skillfleet-sheet-")
	if err != nil {
		return RunResult{}, "", err
	}
	res, err := s.run(ctx, dir, code, data, l)
	if err != nil {
		os.RemoveAll(dir)
		return RunResult{}, "", err
	}
	return res, dir, nil
}

// OutputName is the output workbook's name in the work directory.
const OutputName = "output.xlsx"

func (s *Sandbox) run(ctx context.Context, dir, code string, data []byte, l Limits) (RunResult, error) {
	if err := os.WriteFile(filepath.Join(dir, "input.xlsx"), data, 0o644); err != nil {
		return RunResult{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, "solution.py"), []byte(code), 0o644); err != nil {
		return RunResult{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, "sandbox_boot.py"), []byte(bootstrap), 0o644); err != nil {
		return RunResult{}, err
	}
	if os.Geteuid() == 0 {
		for _, p := range []string{dir, filepath.Join(dir, "input.xlsx"), filepath.Join(dir, "solution.py"), filepath.Join(dir, "sandbox_boot.py")} {
			if err := os.Chown(p, nobody, nobody); err != nil {
				return RunResult{}, fmt.Errorf("sandbox: hand %s to nobody: %w", p, err)
			}
		}
	}
	res, err := s.exec(ctx, dir, l, !s.noNamespace)
	if err != nil && !s.noNamespace {
		// The kernel refused a new network namespace: the audit hook alone
		// keeps the code off the network.
		res, err = s.exec(ctx, dir, l, false)
	}
	return res, err
}

func (s *Sandbox) exec(ctx context.Context, dir string, l Limits, netns bool) (RunResult, error) {
	ctx, cancel := context.WithTimeout(ctx, l.Wall)
	defer cancel()
	python := s.Python
	if python == "" {
		python = "python3"
	}
	cmd := exec.CommandContext(ctx, python, "-I", "-B", "sandbox_boot.py",
		strconv.Itoa(l.CPU), strconv.Itoa(l.MemoryMB<<20), strconv.Itoa(l.FileMB<<20), strconv.Itoa(l.Procs))
	if filepath.Base(python) == python {
		if p, err := exec.LookPath(python); err == nil {
			cmd.Path = p
		}
	}
	// -I: no PYTHON* variables, no user site-packages; -B: no bytecode files.
	cmd.Dir = dir
	cmd.Env = []string{"PATH=/usr/bin:/bin", "LANG=C.UTF-8", "HOME=" + dir, "TMPDIR=" + dir,
		"INPUT_PATH=" + filepath.Join(dir, "input.xlsx"), "OUTPUT_PATH=" + filepath.Join(dir, OutputName)}
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if os.Geteuid() == 0 {
		// A root worker runs the code as nobody: it can then write only
		// where anyone may, and the process limit holds (root ignores it).
		attr.Credential = &syscall.Credential{Uid: nobody, Gid: nobody}
	}
	mode := "audit-hook"
	if netns {
		attr.Cloneflags = syscall.CLONE_NEWNET
		if os.Geteuid() != 0 {
			attr.Cloneflags |= syscall.CLONE_NEWUSER
			attr.UidMappings = []syscall.SysProcIDMap{{ContainerID: os.Geteuid(), HostID: os.Geteuid(), Size: 1}}
			attr.GidMappings = []syscall.SysProcIDMap{{ContainerID: os.Getegid(), HostID: os.Getegid(), Size: 1}}
		}
		mode = "namespace"
	}
	cmd.SysProcAttr = attr
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	buf := &capped{max: l.Output}
	cmd.Stdout, cmd.Stderr = buf, buf
	if err := cmd.Start(); err != nil {
		return RunResult{}, fmt.Errorf("start python (%s): %w", mode, err)
	}
	err := cmd.Wait()
	res := RunResult{Output: buf.String(), Network: mode}
	if ctx.Err() != nil {
		res.TimedOut, res.ExitCode = true, -1
		return res, nil
	}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		res.ExitCode = ee.ExitCode()
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			res.Output += fmt.Sprintf("\n[killed by signal %s: a CPU or memory limit was reached]", ws.Signal())
		}
	case err != nil:
		res.ExitCode = -1
		res.Output += "\n" + err.Error()
	}
	return res, nil
}

// capped keeps the first max bytes written to it.
type capped struct {
	max  int
	b    bytes.Buffer
	lost bool
}

func (c *capped) Write(p []byte) (int, error) {
	if room := c.max - c.b.Len(); room > 0 {
		c.b.Write(p[:min(room, len(p))])
		if len(p) > room {
			c.lost = true
		}
	} else {
		c.lost = true
	}
	return len(p), nil
}

func (c *capped) String() string {
	if c.lost {
		return c.b.String() + "\n[... output truncated ...]"
	}
	return c.b.String()
}
