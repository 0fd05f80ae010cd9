package telemetry

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestStartCPUProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cpu.pprof")
	t.Setenv(CPUProfileEnv, path)
	var stderr bytes.Buffer
	stop := StartCPUProfile(&stderr)
	stop()
	if fi, err := os.Stat(path); err != nil || fi.Size() == 0 || stderr.Len() > 0 {
		t.Errorf("profile %s: %v (stderr %q)", path, err, stderr.String())
	}

	t.Setenv(CPUProfileEnv, filepath.Join(t.TempDir(), "no", "cpu.pprof"))
	StartCPUProfile(&stderr)()
	if !strings.HasPrefix(stderr.String(), "skillfleet: "+CPUProfileEnv+": ") {
		t.Errorf("a profile that cannot be written: stderr %q", stderr.String())
	}

	t.Setenv(CPUProfileEnv, "")
	stderr.Reset()
	StartCPUProfile(&stderr)()
	if stderr.Len() > 0 {
		t.Errorf("unset: stderr %q", stderr.String())
	}
}

func TestHeapProfileOnSignal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heap.pprof")
	t.Setenv(HeapProfileEnv, path)
	var stderr bytes.Buffer
	stop := StartHeapProfiles(&stderr)
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if fi, err := os.Stat(path); err == nil && fi.Size() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no heap profile at %s 10 s after SIGUSR1 (stderr %q)", path, stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A pprof file is gzip-compressed protobuf.
	if len(raw) < 2 || raw[0] != 0x1f || raw[1] != 0x8b {
		t.Errorf("heap profile starts with % x, not gzip", raw[:min(len(raw), 2)])
	}
}
