package sandbox

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestResidentCap: a run whose processes together hold more anonymous
// memory than Limits.ResidentMB is killed and says so, although each
// process stays under its RLIMIT_AS; the same program under a larger cap
// runs to its end and reports its peak. Two processes of 60 MiB each
// pass a 100 MiB cap only together.
func TestResidentCap(t *testing.T) {
	t.Parallel()
	s := newBox(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	prog := `import os, sys, time
x = b"x" * (60 << 20)
if os.fork() == 0:
    y = b"y" * (60 << 20)
    time.sleep(60)
    os._exit(0)
time.sleep(float(sys.argv[1]))
print("survived")
`
	spec := func(capMB int, sleep string) Spec {
		return Spec{Argv: []string{"/usr/bin/python3", "-c", prog, sleep},
			Limits: Limits{ResidentMB: capMB, MemoryMB: 512, Wall: 60 * time.Second}}
	}
	start := time.Now()
	r := run(t, s, spec(100, "50"))
	if !r.MemoryExceeded || r.TimedOut || strings.Contains(r.Output, "survived") || !strings.HasPrefix(r.LimitHit(), "memory") {
		t.Fatalf("over the cap: %+v (limit hit %q)", r, r.LimitHit())
	}
	if r.ResidentPeak <= 100<<20 {
		t.Errorf("killed at %d MiB, want past the 100 MiB cap", r.ResidentPeak>>20)
	}
	t.Logf("killed at %d MiB resident after %v", r.ResidentPeak>>20, time.Since(start).Round(time.Millisecond))

	r = run(t, s, spec(400, "2"))
	if r.MemoryExceeded || r.ExitCode != 0 || !strings.Contains(r.Output, "survived") {
		t.Fatalf("under the cap: %+v", r)
	}
	if r.ResidentPeak < 100<<20 || r.ResidentPeak > 400<<20 {
		t.Errorf("peak %d MiB under a 400 MiB cap, want the two processes' ~120 MiB", r.ResidentPeak>>20)
	}
}

// TestCgroupMemoryReason: the cgroup check answers with a reason either way.
func TestCgroupMemoryReason(t *testing.T) {
	ok, reason := CgroupMemory()
	t.Logf("cgroup v2 memory: %v (%s)", ok, reason)
	if reason == "" {
		t.Error("no reason given")
	}
}

// TestResidentCapCountsSharedMemory: memory in a memfd the program maps
// (shared memory, not anonymous) counts toward the cap too.
func TestResidentCapCountsSharedMemory(t *testing.T) {
	t.Parallel()
	s := newBox(t)
	if _, err := os.Stat("/usr/bin/python3"); err != nil {
		t.Skip("no /usr/bin/python3")
	}
	prog := `import mmap, os, time
fd = os.memfd_create("balloon")
os.ftruncate(fd, 200 << 20)
m = mmap.mmap(fd, 200 << 20)
for i in range(0, 200 << 20, 4096):
    m[i] = 1
time.sleep(50)
print("survived")
`
	r := run(t, s, Spec{Argv: []string{"/usr/bin/python3", "-c", prog}, Limits: Limits{ResidentMB: 100, FileMB: 512, Wall: 60 * time.Second}})
	if !r.MemoryExceeded || strings.Contains(r.Output, "survived") {
		t.Fatalf("a 200 MiB memfd mapping under a 100 MiB cap: %+v", r)
	}
}
