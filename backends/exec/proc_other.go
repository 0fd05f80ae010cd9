//go:build !unix

package exec

import osexec "os/exec"

// setProcessGroup keeps exec.CommandContext's default: kill the process.
func setProcessGroup(*osexec.Cmd) {}

// killGroup has no group to kill here.
func killGroup(*osexec.Cmd) {}
