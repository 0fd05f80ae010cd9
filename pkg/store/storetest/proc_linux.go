package storetest

import (
	"os/exec"
	"syscall"
)

// setDeathSignal kills the server if the test binary dies without cleanup.
func setDeathSignal(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
