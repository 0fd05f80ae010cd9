package sandbox

// The memory cap of a whole run (Limits.ResidentMB). A cgroup's
// memory.max would be the kernel's own bound, but it needs a cgroup v2
// hierarchy with the memory controller delegated to the worker, which
// many worker hosts lack (cgroup v1 or hybrid hosts, containers without
// a delegated subtree; see CgroupMemory). RLIMIT_AS alone bounds each
// process's address space, not memory, and agent CLIs reserve far more
// address space than they use (Claude Code: ~9.6 GiB reserved for ~190
// MiB resident), so a cap low enough to matter breaks them. So the
// worker watches instead: every Limits.ResidentPoll it sums the resident
// memory not backed by a file (anonymous and shared-memory mappings) of
// the run's processes (bwrap and all its descendants, found through
// /proc) and kills the whole run when the sum passes the cap. What it
// does not see: between two polls a process can allocate past the cap
// (RLIMIT_AS, Limits.MemoryMB, stays the per-process backstop); files in
// the tmpfs mounts (/work, /tmp, /dev/shm) are bounded by their own
// sizes instead; and memory that no process maps (a memfd filled with
// write(2), pipe and socket buffers) is bounded only by RLIMIT_FSIZE and
// the open-files limit. Only a cgroup bounds all of it.

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// DefaultResidentPoll is how often the resident memory of a capped run
// is summed.
const DefaultResidentPoll = 100 * time.Millisecond

// treeResident sums the resident memory that is not backed by a file
// (RssAnon and RssShmem: heaps, stacks, shared anonymous and memfd
// mappings) of root and its descendants, in bytes, and counts the
// processes. Shared pages mapped by several processes count once each.
func treeResident(root int) (bytes int64, procs int) {
	for _, pid := range Descendants(root) {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
		if err != nil {
			continue
		}
		for _, l := range strings.Split(string(b), "\n") {
			k, v, ok := strings.Cut(l, ":")
			if !ok || (k != "RssAnon" && k != "RssShmem") {
				continue
			}
			if f := strings.Fields(v); len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				bytes += kb << 10
			}
		}
		procs++
	}
	return bytes, procs
}

// watchResident polls the tree of pid until stop is closed; when its
// anonymous resident memory passes limit it calls kill once and returns
// the sum it saw. It returns the peak seen otherwise.
func watchResident(pid int, limit int64, every time.Duration, stop <-chan struct{}, kill func()) (peak int64, exceeded bool) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return peak, false
		case <-t.C:
		}
		n, _ := treeResident(pid)
		peak = max(peak, n)
		if n > limit {
			kill()
			return n, true
		}
	}
}

// CgroupMemory reports whether this process could give each run a cgroup
// v2 memory.max here, and if not, why (for the check's table and the
// docs): the unified hierarchy must be mounted, hold the memory
// controller, and let this process make a child of its own cgroup.
func CgroupMemory() (ok bool, reason string) {
	b, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return false, "no /proc/self/cgroup"
	}
	rel := ""
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if p, ok := strings.CutPrefix(l, "0::"); ok {
			rel = p
		}
	}
	mount := ""
	if m, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, l := range strings.Split(string(m), "\n") {
			if i := strings.Index(l, " - cgroup2 "); i > 0 {
				if f := strings.Fields(l[:i]); len(f) >= 5 {
					mount = f[4]
					break
				}
			}
		}
	}
	if mount == "" {
		return false, "no cgroup v2 hierarchy is mounted"
	}
	ctrl, err := os.ReadFile(filepath.Join(mount, "cgroup.controllers"))
	if err != nil {
		return false, "cgroup v2 at " + mount + ": " + err.Error()
	}
	if !strings.Contains(" "+strings.TrimSpace(string(ctrl))+" ", " memory ") {
		return false, "the cgroup v2 hierarchy at " + mount + " has no memory controller (controllers: " + strings.TrimSpace(string(ctrl)) + "; on a hybrid host memory is bound to cgroup v1)"
	}
	dir := filepath.Join(mount, rel)
	st, err := os.Stat(dir)
	if err != nil || !st.IsDir() {
		return false, "this process's cgroup " + dir + " is not visible"
	}
	f, err := os.OpenFile(filepath.Join(dir, "cgroup.subtree_control"), os.O_WRONLY, 0)
	if err != nil {
		return false, "this process cannot manage its cgroup " + dir + " (no delegated subtree): " + err.Error()
	}
	_ = f.Close() // opened only to learn that it may be written: nothing was written
	return true, "cgroup v2 memory controller at " + dir
}
