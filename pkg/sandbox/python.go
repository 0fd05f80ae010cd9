package sandbox

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Runtime is an interpreter as the sandbox sees it.
type Runtime struct {
	// Exe is the interpreter's real path (also its path in the sandbox).
	Exe string
	// ReadOnly are the host directories it needs besides /usr (its
	// prefixes, e.g. a pyenv or venv tree); bind them with
	// Options.ReadOnly.
	ReadOnly []string
}

var pythonCache sync.Map // name → Runtime or error

// PythonRuntime asks the host interpreter python (a name on PATH or a
// path; a pyenv shim is resolved) where it really lives.
func PythonRuntime(python string) (Runtime, error) {
	if v, ok := pythonCache.Load(python); ok {
		if err, bad := v.(error); bad {
			return Runtime{}, err
		}
		return v.(Runtime), nil
	}
	rt, err := pythonRuntime(python)
	if err != nil {
		pythonCache.Store(python, err)
		return Runtime{}, err
	}
	pythonCache.Store(python, rt)
	return rt, nil
}

func pythonRuntime(python string) (Runtime, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, python, "-I", "-c",
		"import os, sys; print(os.path.realpath(sys.executable)); print(os.path.realpath(sys.prefix)); print(os.path.realpath(sys.base_prefix))").Output()
	if err != nil {
		return Runtime{}, fmt.Errorf("python interpreter %q: %w", python, err)
	}
	lines := strings.Fields(strings.TrimSpace(string(out)))
	if len(lines) != 3 || !filepath.IsAbs(lines[0]) {
		return Runtime{}, fmt.Errorf("python interpreter %q: unexpected answer %q", python, out)
	}
	rt := Runtime{Exe: lines[0]}
	seen := map[string]bool{}
	for _, p := range append([]string{filepath.Dir(filepath.Dir(lines[0]))}, lines[1:]...) {
		if p == "/" || p == "/usr" || strings.HasPrefix(p, "/usr/") || seen[p] {
			continue
		}
		seen[p] = true
		rt.ReadOnly = append(rt.ReadOnly, p)
	}
	return rt, nil
}
