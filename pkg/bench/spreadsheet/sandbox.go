package spreadsheet

// What contains a generated program (see pkg/sandbox for the details):
//
//   - The boundary is the kernel, set up by bubblewrap: the program runs
//     as uid 65534 in its own user, mount, PID, network, IPC and UTS
//     namespaces. Its filesystem holds the Python runtime read-only and a
//     size-limited tmpfs at /work with the input workbook, the program and
//     this bootstrap; no dataset, no gold workbook, no other run, no host
//     socket. The network is a private loopback. rlimits bound CPU,
//     memory, file size, processes and open files; every process it
//     starts dies when it ends, and the tmpfs goes with them.
//   - The output workbook leaves the sandbox as data (a capped tar
//     stream): only a regular file counts, never a symlink, FIFO or
//     directory, and the worker never opens a path the program chose.
//   - The scorer reads that workbook as hostile: a size cap, unzip limits
//     on the reader, and the whole comparison under a timeout.
//   - A second layer inside the interpreter: an audit hook refusing
//     network use, process creation and writes outside the work
//     directory, and the program's own bindings of INPUT_PATH and
//     OUTPUT_PATH removed from its syntax tree. The hook only turns
//     ordinary mistakes into clear errors; it is not the boundary.
//
// Where bubblewrap or user namespaces are missing, New refuses (see
// sandbox.New); Config.UnsafeNoSandbox runs without the kernel layer, and
// says so in the log.

import (
	"context"
	"fmt"
	"path"
	"sync"
	"time"

	"github.com/skillfleet/skillfleet/pkg/sandbox"
)

// Limits bound one execution of generated code.
type Limits struct {
	Wall     time.Duration // wall-clock time (default 60s)
	CPU      int           // CPU seconds (default 30)
	MemoryMB int           // address space (default 1024)
	FileMB   int           // largest file written (default 64)
	Procs    int           // processes and threads (default 32)
	Output   int           // bytes of stdout+stderr kept (default 64 KiB)
	WorkMB   int           // size of the work directory's tmpfs (default 128)
	// OutputMB caps the output workbook's size (default 32).
	OutputMB int
}

func (l Limits) withDefaults() Limits {
	if l.Wall <= 0 {
		l.Wall = 60 * time.Second
	}
	for _, f := range []struct {
		v *int
		d int
	}{{&l.CPU, 30}, {&l.MemoryMB, 1024}, {&l.FileMB, 64}, {&l.Procs, 32}, {&l.Output, 64 << 10}, {&l.WorkMB, 128}, {&l.OutputMB, 32}} {
		if *f.v <= 0 {
			*f.v = f.d
		}
	}
	return l
}

func (l Limits) sandbox(keepAll bool) sandbox.Limits {
	collect := l.OutputMB
	if keepAll {
		collect = l.WorkMB
	}
	return sandbox.Limits{Wall: l.Wall, CPU: l.CPU, MemoryMB: l.MemoryMB, FileMB: l.FileMB, Procs: l.Procs,
		Output: l.Output, WorkMB: l.WorkMB, CollectMB: collect}
}

// RunResult is one execution's outcome.
type RunResult struct {
	ExitCode int
	TimedOut bool
	Output   string // stdout and stderr, capped
	// Limit names the limit the program ran into ("" for none).
	Limit string
	// Workbook is what the program left at OUTPUT_PATH (nil: nothing).
	// Only Type "file" has data; anything else is refused by the scorer.
	Workbook *sandbox.Entry
	// Files is the whole work directory when RunOptions.KeepAll is set.
	Files map[string]*sandbox.Entry
	// Isolation is "bubblewrap" or "none (unsafe opt-in)".
	Isolation string
	Elapsed   time.Duration
}

// Failed reports whether the code did not run to a clean exit.
func (r RunResult) Failed() bool { return r.TimedOut || r.ExitCode != 0 }

// Paths inside the sandbox.
const (
	// OutputName is the output workbook's name in the work directory.
	OutputName = "output.xlsx"
	inputName  = "input.xlsx"
)

// bootstrap is the second layer: an audit hook that refuses network
// access, process creation and writes outside the work directory, and
// the removal of the program's own INPUT_PATH / OUTPUT_PATH bindings.
const bootstrap = `import os, sys
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

// Sandbox runs generated Python code against one input workbook.
type Sandbox struct {
	// Python is the interpreter on the host (default python3); its real
	// location is bound read-only into the sandbox.
	Python string
	Limits Limits
	// Unsafe runs the code without the kernel isolation (explicit opt-in,
	// logged); Logf receives that warning.
	Unsafe bool
	Logf   func(format string, args ...any)

	once sync.Once
	box  *sandbox.Sandbox
	exe  string
	err  error
}

// Ready sets the sandbox up (once) and returns why it cannot run code.
func (s *Sandbox) Ready() error {
	s.once.Do(func() {
		python := s.Python
		if python == "" {
			python = "python3"
		}
		rt, err := sandbox.PythonRuntime(python)
		if err != nil {
			s.err = err
			return
		}
		s.exe = rt.Exe
		s.box, s.err = sandbox.New(sandbox.Options{ReadOnly: rt.ReadOnly, Unsafe: s.Unsafe, Logf: s.Logf})
	})
	return s.err
}

// Isolation says how programs are contained ("" before Ready).
func (s *Sandbox) Isolation() string {
	if s.box == nil {
		return ""
	}
	return s.box.Isolation()
}

// RunOptions change one run.
type RunOptions struct {
	// KeepAll hands back the whole work directory in RunResult.Files.
	KeepAll bool
}

// Run executes code with the input workbook (its bytes) as INPUT_PATH and
// returns what it left at OUTPUT_PATH. An error means the code could not
// be run at all.
func (s *Sandbox) Run(ctx context.Context, code string, input []byte, o RunOptions) (RunResult, error) {
	if err := s.Ready(); err != nil {
		return RunResult{}, err
	}
	l := s.Limits.withDefaults()
	collect := []string{OutputName}
	if o.KeepAll {
		collect = []string{"."}
	}
	res, err := s.box.Run(ctx, sandbox.Spec{
		// -I: no PYTHON* variables, no user site-packages; -B: no bytecode.
		Argv: []string{s.exe, "-I", "-B", "sandbox_boot.py"},
		Env: []string{"INPUT_PATH=" + path.Join(sandbox.WorkDir, inputName),
			"OUTPUT_PATH=" + path.Join(sandbox.WorkDir, OutputName)},
		Files: []sandbox.File{{Name: inputName, Data: input}, {Name: "solution.py", Data: []byte(code)},
			{Name: "sandbox_boot.py", Data: []byte(bootstrap)}},
		Network: sandbox.NetNone,
		Limits:  l.sandbox(o.KeepAll),
		Collect: collect,
	})
	if err != nil {
		return RunResult{}, err
	}
	out := RunResult{ExitCode: res.ExitCode, TimedOut: res.TimedOut, Output: res.Output, Limit: res.LimitHit(),
		Workbook: res.Files[OutputName], Isolation: res.Isolation, Elapsed: res.Elapsed}
	if o.KeepAll {
		out.Files = res.Files
	}
	if out.ExitCode != 0 && res.Signal != 0 {
		out.Output += fmt.Sprintf("\n[killed by signal %s: %s]", res.Signal, out.Limit)
	}
	return out, nil
}
