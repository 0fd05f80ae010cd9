// Package filelock makes one process at a time the owner of something on
// disk (a run dir, a state file) through an exclusive flock on a lock file.
// The kernel releases the lock when the process ends, however it ends, so
// a crash never leaves a stale lock behind.
package filelock

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"
)

// HeldError is returned by [Lock] when another process holds the lock.
type HeldError struct {
	Path   string // the lock file
	Holder string // the line the holder wrote into it; empty if unknown
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("lock %s is held by %s", e.Path, cmp.Or(e.Holder, "an unknown process"))
}

// Lock takes an exclusive lock on path (created with mode perm when
// missing) without waiting, and writes holder, one line saying who holds
// it, into the file for whoever finds it held. unlock releases the lock.
// A lock another process holds is a [*HeldError] carrying that process's
// holder line; other failures are errors naming path.
func Lock(path string, perm fs.FileMode, holder string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, perm)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		line, _ := os.ReadFile(path)
		_ = f.Close() // only opened, not written
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, &HeldError{Path: path, Holder: strings.TrimSpace(string(line))}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	// The holder line is informational: a failure to write it leaves the
	// lock held and only makes a refusal say less.
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(holder+"\n"), 0)
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close()
	}, nil
}
