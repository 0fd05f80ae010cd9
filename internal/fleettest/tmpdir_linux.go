package fleettest

import (
	"os"
	"syscall"
)

// minMemoryFree is the room a memory file system must have for the test
// binary's temporary directories; a paper-preset run dir takes a few MB.
const minMemoryFree = 1 << 30

// memoryTempDir returns a fresh directory on /dev/shm, or "" when TMPDIR
// is set, /dev/shm is not a tmpfs or has less than minMemoryFree free, or
// the directory cannot be made.
func memoryTempDir() string {
	const shm, tmpfsMagic = "/dev/shm", 0x01021994
	if os.Getenv("TMPDIR") != "" {
		return ""
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(shm, &st); err != nil || st.Type != tmpfsMagic || uint64(st.Bavail)*uint64(st.Bsize) < minMemoryFree {
		return ""
	}
	dir, err := os.MkdirTemp(shm, "skillfleet-test-")
	if err != nil {
		return ""
	}
	return dir
}
