//go:build unix

package exec

import (
	"errors"
	"os"
	osexec "os/exec"
	"syscall"

	"github.com/skillfleet/skillfleet/pkg/sandbox"
)

// setProcessGroup starts the agent in a session and process group of its
// own, and makes cancellation kill its whole tree, so children the agent
// started (tool calls, sandboxes, language servers) die with it.
func setProcessGroup(cmd *osexec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Cancel = func() error { return killTree(cmd) }
}

// killGroup kills what is left of the agent's tree.
func killGroup(cmd *osexec.Cmd) { _ = killTree(cmd) }

// killTree SIGKILLs the agent's process group, its session, and every
// descendant of the agent still running (a child may have left the group
// with setsid, as sandbox launchers do), repeating until none is found.
func killTree(cmd *osexec.Cmd) error {
	if cmd.Process == nil {
		return nil
	}
	root := cmd.Process.Pid
	err := syscall.Kill(-root, syscall.SIGKILL)
	for range 5 {
		pids := sandbox.GroupTree(root)
		if len(pids) == 0 {
			break
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
	}
	if errors.Is(err, syscall.ESRCH) {
		return os.ErrProcessDone
	}
	return err
}
