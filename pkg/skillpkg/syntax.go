package skillpkg

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// Syntax checks scripts without running them: Python with
// `python3 -m py_compile`, shell with `bash -n`, each on a copy in a
// fresh temporary directory. Zero fields take the defaults.
type Syntax struct {
	Python  string        // default "python3"
	Bash    string        // default "bash"
	Timeout time.Duration // per check; default 60s (a loaded machine must not turn a good script into a refusal)
}

// Language of a script, from its extension or, lacking one, its shebang:
// "python", "shell" or "" (not checked).
func Language(name, text string) string {
	switch path.Ext(name) {
	case ".py":
		return "python"
	case ".sh", ".bash":
		return "shell"
	case "":
		first, _, _ := strings.Cut(text, "\n")
		if !strings.HasPrefix(first, "#!") {
			return ""
		}
		switch {
		case strings.Contains(first, "python"):
			return "python"
		case strings.HasSuffix(first, "/sh"), strings.HasSuffix(first, "/bash"),
			strings.HasSuffix(first, " sh"), strings.HasSuffix(first, " bash"):
			return "shell"
		}
	}
	return ""
}

// Check is a [SyntaxChecker]: nil when the script parses or its language
// is not one Syntax checks, else a [*RefusalError] with
// [ReasonScriptSyntax] whose detail is the checker's message, temporary
// paths replaced by the package path. A checker that cannot run (missing
// interpreter, timeout) refuses too: an unchecked script is not passed.
func (s Syntax) Check(name, text string) error {
	lang := Language(name, text)
	if lang == "" {
		return nil
	}
	dir, err := os.MkdirTemp("", "skillpkg-syntax-")
	if err != nil {
		return refuse(ReasonScriptSyntax, name, "cannot check: %v", err)
	}
	defer os.RemoveAll(dir)
	base := path.Base(name)
	if lang == "python" && path.Ext(base) != ".py" {
		base += ".py"
	}
	file := filepath.Join(dir, base)
	if err := os.WriteFile(file, []byte(text), 0o600); err != nil {
		return refuse(ReasonScriptSyntax, name, "cannot check: %v", err)
	}
	timeout := s.Timeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var cmd *exec.Cmd
	if lang == "python" {
		// -I -S: no user site, no site module, no PYTHON* variables.
		cmd = exec.CommandContext(ctx, resolvePython(or(s.Python, "python3")), "-I", "-S", "-m", "py_compile", file)
	} else {
		cmd = exec.CommandContext(ctx, or(s.Bash, "bash"), "-n", file)
	}
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "LANG=C.UTF-8"}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	if err == nil {
		return nil
	}
	msg := strings.TrimSpace(strings.ReplaceAll(out.String(), file, name))
	var ee *exec.ExitError
	switch {
	case ctx.Err() != nil:
		return refuse(ReasonScriptSyntax, name, "cannot check: %s check timed out after %v", lang, timeout)
	case !errors.As(err, &ee):
		return refuse(ReasonScriptSyntax, name, "cannot check: %v", err)
	}
	if msg == "" {
		msg = fmt.Sprintf("%s syntax check failed (%v)", lang, err)
	}
	if len(msg) > 600 {
		msg = "…" + msg[len(msg)-600:]
	}
	return refuse(ReasonScriptSyntax, name, "%s", msg)
}

var (
	pyMu    sync.Mutex
	pyCache = map[string]string{}
)

// resolvePython returns the interpreter behind name, asked once per
// process: version-manager shims (pyenv) cost seconds per start, the
// interpreter itself a fraction. On any failure name is used as it is.
func resolvePython(name string) string {
	pyMu.Lock()
	defer pyMu.Unlock()
	if exe, ok := pyCache[name]; ok {
		return exe
	}
	exe := name
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, "-c", "import sys; print(sys.executable)").Output()
	if p := strings.TrimSpace(string(out)); err == nil && filepath.IsAbs(p) {
		exe = p
	}
	pyCache[name] = exe
	return exe
}

// CheckSyntax is [Syntax.Check] with the defaults.
func CheckSyntax(name, text string) error { return Syntax{}.Check(name, text) }
