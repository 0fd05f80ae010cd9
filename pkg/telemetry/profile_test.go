package telemetry

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
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
