package fleettest

import "os"

// TestingM is the part of *testing.M that TestMain runs (goleak's too).
type TestingM interface {
	Run() int
}

// InMemory returns m, run with the test binary's temporary directories
// (t.TempDir: run dirs, JetStream stores) in a fresh directory on a
// memory file system when one has room and TMPDIR is not set, removed
// when m ends. A run writes every record atomically (a temporary file,
// then a rename), and on a disk mounted with discard each removal of a
// test's directory tree costs the kernel more than the run's own work:
// the trainer tests spent 1.7-1.9 CPU-s in the kernel with their run
// dirs on /tmp (ext4, discard) and 0.3 on /dev/shm.
func InMemory(m TestingM) TestingM {
	return inMemory{m}
}

type inMemory struct{ m TestingM }

func (r inMemory) Run() int {
	dir := memoryTempDir()
	if dir == "" {
		return r.m.Run()
	}
	defer os.RemoveAll(dir)
	if err := os.Setenv("TMPDIR", dir); err != nil {
		return r.m.Run()
	}
	defer os.Unsetenv("TMPDIR")
	return r.m.Run()
}
