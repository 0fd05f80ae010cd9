//go:build unix

package exec

import (
	"errors"
	"os"
	osexec "os/exec"
	"syscall"
)

// setProcessGroup starts the agent in a process group of its own, and
// makes cancellation kill the whole group, so children the agent started
// (tool calls, language servers) die with it.
func setProcessGroup(cmd *osexec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return signalGroup(cmd) }
}

// killGroup kills what is left of the agent's process group.
func killGroup(cmd *osexec.Cmd) { _ = signalGroup(cmd) }

func signalGroup(cmd *osexec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}
