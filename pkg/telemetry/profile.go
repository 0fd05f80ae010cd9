package telemetry

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// CPUProfileEnv names the file [StartCPUProfile] writes to.
const CPUProfileEnv = "SKILLFLEET_CPUPROFILE"

// StartCPUProfile writes a CPU profile of the process, until the returned
// function is called, to the file $SKILLFLEET_CPUPROFILE names (a
// developer's tool for scripts/bench); it does nothing when the variable
// is unset. Failures are reported on stderr, never fatal.
func StartCPUProfile(stderr io.Writer) (stop func()) {
	path := os.Getenv(CPUProfileEnv)
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		fmt.Fprintln(stderr, "skillfleet: SKILLFLEET_CPUPROFILE:", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		fmt.Fprintln(stderr, "skillfleet: SKILLFLEET_CPUPROFILE:", err)
		_ = f.Close() // nothing was written
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintln(stderr, "skillfleet: SKILLFLEET_CPUPROFILE:", err)
		}
	}
}
