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
// file, then a rename), and on a disk mounted with discard removing a
// test's directory tree can cost the kernel more than the run's own work;
// on a memory file system it costs little.
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
