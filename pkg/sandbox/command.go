package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Command returns a command running spec.Argv in the sandbox for callers
// that drive the process themselves (an agent CLI, a long-lived bridge
// speaking over stdin/stdout): the caller sets Stdin/Stdout/Stderr, then
// Starts and Waits. spec.Collect and spec.Limits.Wall are not used (the
// context bounds the run); the rlimits and the isolation are as in Run.
// cleanup must be called after Wait.
func (s *Sandbox) Command(ctx context.Context, spec Spec) (cmd *exec.Cmd, cleanup func(), err error) {
	if len(spec.Argv) == 0 {
		return nil, nil, errors.New("sandbox: no program to run")
	}
	l := spec.Limits.WithDefaults()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return nil, nil, err
	}
	cmd, cl, err := s.command(ctx, spec, l, initScript(l, nil, !s.unsafe), devnull)
	_ = devnull.Close() // only read, and the command holds its own copy
	if err != nil {
		return nil, nil, err
	}
	return cmd, cl, nil
}

// unsafeCommand runs the script as a plain process in a fresh temporary
// directory standing for WorkDir: "/work" at the start of an argument or
// environment value is rewritten to it.
func (s *Sandbox) unsafeCommand(ctx context.Context, spec Spec, script string, collectW *os.File, env map[string]string, order []string) (*exec.Cmd, func(), error) {
	dir, err := os.MkdirTemp("", "skillfleet-sandbox-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	rewrite := func(v string) string {
		if v == WorkDir || strings.HasPrefix(v, WorkDir+"/") {
			return dir + strings.TrimPrefix(v, WorkDir)
		}
		return v
	}
	for _, f := range spec.Files {
		name, err := cleanName(f.Name)
		if err != nil {
			cleanup()
			return nil, nil, err
		}
		p := filepath.Join(dir, filepath.FromSlash(name))
		mode := f.Mode.Perm()
		if mode == 0 {
			mode = 0o644
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			cleanup()
			return nil, nil, err
		}
		if err := os.WriteFile(p, f.Data, mode); err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("sandbox: %s: %w", name, err)
		}
	}
	attr := &syscall.SysProcAttr{Setpgid: true}
	DieWithParent(attr)
	if os.Geteuid() == 0 {
		attr.Credential = &syscall.Credential{Uid: Nobody, Gid: Nobody, Groups: []uint32{}}
		// The program runs as nobody: its files must be nobody's.
		if err := filepath.Walk(dir, func(p string, _ os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			return os.Lchown(p, Nobody, Nobody)
		}); err != nil {
			cleanup()
			return nil, nil, fmt.Errorf("sandbox: %w", err)
		}
	}
	argv := []string{"-c", script, "sandbox-init"}
	for _, a := range spec.Argv {
		argv = append(argv, rewrite(a))
	}
	cmd := exec.CommandContext(ctx, "/bin/sh", argv...)
	cmd.Dir = dir
	for _, k := range order {
		cmd.Env = append(cmd.Env, k+"="+rewrite(env[k]))
	}
	cmd.ExtraFiles = []*os.File{collectW}
	cmd.SysProcAttr = attr
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	return cmd, func() {
		if cmd.Process != nil {
			// Whatever stayed in the process group (none left is fine).
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		cleanup()
	}, nil
}
