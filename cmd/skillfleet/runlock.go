package main

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockRunDir makes this process the only coordinator of the run in dir:
// it holds an exclusive lock on dir/coordinator.lock (released by the
// kernel when the process ends, however it ends) and writes its pid and
// host there. A second coordinator on the same run dir is refused with a
// message naming the holder; nothing of the run is touched.
func lockRunDir(dir string) (unlock func(), err error) {
	path := filepath.Join(dir, "coordinator.lock")
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("run dir lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, codedError{exitLocked, fmt.Errorf("run dir %s is in use by another coordinator (%s); wait for it to finish or stop it, then re-run to resume",
				dir, cmp.Or(strings.TrimSpace(string(holder)), "holder unknown"))}
		}
		return nil, fmt.Errorf("run dir lock %s: %w", path, err)
	}
	host, _ := os.Hostname()
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte("pid "+strconv.Itoa(os.Getpid())+" on "+host+"\n"), 0)
	return func() { f.Close() }, nil
}
