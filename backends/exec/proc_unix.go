//go:build unix

package exec

import (
	"errors"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
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
		pids := treeOf(root)
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

// TreeOf lists the live processes of the tree rooted at root: those in
// its process group or session, and its descendants (by parent pid),
// found through /proc. It is empty where /proc is missing.
func TreeOf(root int) []int { return treeOf(root) }

func treeOf(root int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	type proc struct{ ppid, pgrp, sid int }
	procs := map[int]proc{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp session ...; comm may hold spaces.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) < 4 || f[0] == "Z" || f[0] == "X" {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		pgrp, _ := strconv.Atoi(f[2])
		sid, _ := strconv.Atoi(f[3])
		procs[pid] = proc{ppid, pgrp, sid}
	}
	in := map[int]bool{}
	for pid, p := range procs {
		if pid == root || p.pgrp == root || p.sid == root {
			in[pid] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for pid, p := range procs {
			if !in[pid] && in[p.ppid] {
				in[pid], changed = true, true
			}
		}
	}
	if _, ok := procs[root]; !ok {
		delete(in, root)
	}
	out := make([]int, 0, len(in))
	for pid := range in {
		out = append(out, pid)
	}
	return out
}
