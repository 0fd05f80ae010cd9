package envserver

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/pkg/sandbox"
)

// BridgeSandbox says how a bridge child (scripts/alfworld_bridge.py) runs
// under pkg/sandbox: the model's actions reach the game engine as text,
// so the engine is treated as exposed to hostile input.
//
// The child gets a private network (none), a tmpfs work directory that is
// its HOME, the interpreter's own tree read-only, the script and the
// PYTHONPATH entries read-only, and the game data (ALFWORLD_DATA, or the
// invoking user's ~/.cache/alfworld) read-only; nothing else of the host,
// and only PYTHON*, ALFWORLD_* and TEXTWORLD_* variables of env. Every
// process it starts dies with it.
type BridgeSandbox struct {
	// Bwrap is the bubblewrap binary (default: bwrap on PATH).
	Bwrap string
	// ReadOnly are further host paths bound read-only at the same place
	// (a user site-packages directory, a model cache).
	ReadOnly []string
	// MemoryMB, CPUSeconds and WorkMB bound the child (defaults 4096 MB
	// of address space, 24 h of CPU, 256 MB of work directory).
	MemoryMB, CPUSeconds, WorkMB int
}

// Places in the sandbox.
const (
	bridgeScriptDir = "bridge"             // under sandbox.WorkDir
	bridgeDataDir   = "/opt/alfworld-data" // ALFWORLD_DATA
	bridgePathRoot  = "/opt/pythonpath"    // PYTHONPATH entry i at /opt/pythonpath/i
)

// StartSandboxedBridge starts argv (an interpreter, then a script and its
// arguments) in the sandbox. It refuses, naming what is missing, where
// the isolation cannot be set up: there is no fallback to an unisolated
// child (StartBridge is that, chosen explicitly).
func StartSandboxedBridge(ctx context.Context, argv []string, env []string, o BridgeSandbox) (*Bridge, error) {
	if len(argv) == 0 {
		return nil, fmt.Errorf("bridge: no command")
	}
	ro := append([]string(nil), o.ReadOnly...)
	exe := argv[0]
	if strings.Contains(filepath.Base(exe), "python") {
		rt, err := sandbox.PythonRuntime(exe)
		if err != nil {
			return nil, fmt.Errorf("bridge sandbox: %w", err)
		}
		exe = rt.Exe
		ro = append(ro, rt.ReadOnly...)
	} else if !strings.ContainsRune(exe, '/') {
		return nil, fmt.Errorf("bridge sandbox: %q: give the interpreter's path or a python on PATH", exe)
	}
	box, err := sandbox.New(sandbox.Options{Bwrap: o.Bwrap, ReadOnly: ro})
	if err != nil {
		return nil, fmt.Errorf("bridge sandbox: %w", err)
	}
	spec, err := bridgeSpec(exe, argv[1:], env)
	if err != nil {
		return nil, err
	}
	spec.Limits = sandbox.Limits{
		MemoryMB: cmpOr(o.MemoryMB, 4096), CPU: cmpOr(o.CPUSeconds, 24*3600), WorkMB: cmpOr(o.WorkMB, 256),
		Procs: 256, OpenFiles: 1024, FileMB: 256, Wall: 365 * 24 * time.Hour,
	}
	cmd, cleanup, err := box.Command(ctx, spec)
	if err != nil {
		return nil, fmt.Errorf("bridge sandbox: %w", err)
	}
	in, err := cmd.StdinPipe()
	if err != nil {
		cleanup()
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		cleanup()
		return nil, err
	}
	b := &Bridge{cmd: cmd, in: in, out: bufio.NewReaderSize(out, 1<<20), stderr: &lockedWriter{}, cleanup: cleanup}
	cmd.Stderr = b.stderr
	if err := cmd.Start(); err != nil {
		cleanup()
		return nil, fmt.Errorf("bridge %s (sandboxed): %w", strings.Join(argv, " "), err)
	}
	return b, nil
}

// bridgeSpec maps the command and environment into the sandbox: script
// files given as arguments are copied into its work directory, PYTHONPATH
// entries and the game data are bound read-only.
func bridgeSpec(exe string, args []string, env []string) (sandbox.Spec, error) {
	spec := sandbox.Spec{Argv: []string{exe}, Network: sandbox.NetNone}
	for _, a := range args {
		st, err := os.Stat(a)
		if err != nil || !st.Mode().IsRegular() || !strings.HasSuffix(a, ".py") {
			spec.Argv = append(spec.Argv, a)
			continue
		}
		data, err := os.ReadFile(a)
		if err != nil {
			return spec, fmt.Errorf("bridge sandbox: script %s: %w", a, err)
		}
		name := bridgeScriptDir + "/" + filepath.Base(a)
		spec.Files = append(spec.Files, sandbox.File{Name: name, Data: data, Mode: 0o444})
		spec.Argv = append(spec.Argv, sandbox.WorkDir+"/"+name)
	}
	vars := map[string]string{}
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if ok && (strings.HasPrefix(k, "PYTHON") || strings.HasPrefix(k, "ALFWORLD_") || strings.HasPrefix(k, "TEXTWORLD_")) {
			vars[k] = v
		}
		if k == "HOME" {
			vars["\x00home"] = v
		}
	}
	if pp := vars["PYTHONPATH"]; pp != "" {
		var inside []string
		for i, p := range filepath.SplitList(pp) {
			if p == "" {
				continue
			}
			abs, err := filepath.Abs(p)
			if err != nil {
				return spec, err
			}
			if _, err := os.Stat(abs); err != nil {
				return spec, fmt.Errorf("bridge sandbox: PYTHONPATH entry %s: %w", p, err)
			}
			t := bridgePathRoot + "/" + strconv.Itoa(i)
			spec.Binds = append(spec.Binds, sandbox.Bind{Source: abs, Target: t})
			inside = append(inside, t)
		}
		vars["PYTHONPATH"] = strings.Join(inside, ":")
	}
	data := vars["ALFWORLD_DATA"]
	if data == "" && vars["\x00home"] != "" {
		// The bridge's own default, resolved for the invoking user.
		if d := filepath.Join(vars["\x00home"], ".cache", "alfworld"); isDir(d) {
			data = d
		}
	}
	delete(vars, "\x00home")
	if data != "" {
		abs, err := filepath.Abs(data)
		if err != nil || !isDir(abs) {
			return spec, fmt.Errorf("bridge sandbox: ALFWORLD_DATA %s is not a directory", data)
		}
		spec.Binds = append(spec.Binds, sandbox.Bind{Source: abs, Target: bridgeDataDir})
		vars["ALFWORLD_DATA"] = bridgeDataDir
	}
	for k, v := range vars {
		spec.Env = append(spec.Env, k+"="+v)
	}
	return spec, nil
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func cmpOr(a, b int) int {
	if a > 0 {
		return a
	}
	return b
}
