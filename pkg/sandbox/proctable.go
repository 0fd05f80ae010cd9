package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Process is one live process of the process table, as /proc/PID/stat
// gives it.
type Process struct {
	PID, PPID int
	// PGID and SID are its process group and session.
	PGID, SID int
}

// ReadProcesses reads the process table from /proc, leaving out zombies
// and dead processes (they hold no memory and cannot be killed again).
// It is empty where /proc is missing; a process that exits while the
// table is read is left out.
func ReadProcesses() map[int]Process {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	procs := make(map[int]Process, len(ents))
	for _, e := range ents {
		if _, err := strconv.Atoi(e.Name()); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat"))
		if err != nil {
			continue
		}
		if p, ok := parseStat(string(b)); ok {
			procs[p.PID] = p
		}
	}
	return procs
}

// parseStat reads a /proc/PID/stat line: "pid (comm) state ppid pgrp
// session ...", where comm may hold spaces and parentheses. A zombie (Z)
// or dead (X) process, or a line not of that form, gives false.
func parseStat(s string) (Process, bool) {
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return Process{}, false
	}
	pid, err := strconv.Atoi(strings.TrimSpace(s[:open]))
	if err != nil {
		return Process{}, false
	}
	f := strings.Fields(s[closing+1:])
	if len(f) < 4 || f[0] == "Z" || f[0] == "X" {
		return Process{}, false
	}
	var n [3]int
	for i := range n {
		if n[i], err = strconv.Atoi(f[i+1]); err != nil {
			return Process{}, false
		}
	}
	return Process{PID: pid, PPID: n[0], PGID: n[1], SID: n[2]}, true
}

// Descendants lists the live processes of the tree rooted at root: root
// itself when it is live, and every process whose chain of parents leads
// to it. It is empty where /proc is missing.
func Descendants(root int) []int {
	return tree(ReadProcesses(), func(p Process) bool { return p.PID == root })
}

// GroupTree lists what is left of a process started in a session of its
// own, whose pid (root) numbers that session and its process group: the
// live processes in the group or the session, root itself, and all their
// descendants (a child that left with setsid, as sandbox launchers do, is
// still found by its parent). It is empty where /proc is missing.
func GroupTree(root int) []int {
	return tree(ReadProcesses(), func(p Process) bool {
		return p.PID == root || p.PGID == root || p.SID == root
	})
}

// tree returns the processes of procs that seed selects, and their
// descendants.
func tree(procs map[int]Process, seed func(Process) bool) []int {
	in := map[int]bool{}
	for pid, p := range procs {
		if seed(p) {
			in[pid] = true
		}
	}
	for changed := true; changed; {
		changed = false
		for pid, p := range procs {
			if !in[pid] && in[p.PPID] {
				in[pid], changed = true, true
			}
		}
	}
	out := make([]int, 0, len(in))
	for pid := range in {
		out = append(out, pid)
	}
	return out
}
