package fleettest

import "os"

// TestingM is the part of *testing.M that TestMain runs (goleak's too).
type TestingM interface {
	Run() int
}

// InMemory returns m, run with a directory of its own for the runs shared
// by its tests ([Reference]), removed when m ends. When TMPDIR is not set
// and a memory file system has room, that directory is on it and is also
// where the test binary's temporary directories go (t.TempDir: run dirs,
// JetStream stores). A run writes every record atomically (a temporary
// file, then a rename), and on a disk mounted with discard each removal
// of a test's directory tree costs the kernel more than the run's own
// work: the trainer tests spent 1.7-1.9 CPU-s in the kernel with their run
// dirs on /tmp (ext4, discard) and 0.3 on /dev/shm.
func InMemory(m TestingM) TestingM {
	return inMemory{m}
}

type inMemory struct{ m TestingM }

func (r inMemory) Run() int {
	dir := memoryTempDir()
	if dir != "" {
		if err := os.Setenv("TMPDIR", dir); err != nil {
			_ = os.RemoveAll(dir)
			dir = ""
		} else {
			defer os.Unsetenv("TMPDIR")
		}
	}
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "skillfleet-test-"); err != nil {
			return r.m.Run()
		}
	}
	defer os.RemoveAll(dir)
	shared.mu.Lock()
	shared.root = dir
	shared.mu.Unlock()
	return r.m.Run()
}
