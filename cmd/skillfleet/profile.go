package main

import (
	"fmt"
	"io"
	"os"
	"runtime/pprof"
)

// startProfile writes a CPU profile of the whole command to the file named
// by SKILLFLEET_CPUPROFILE (a developer's tool for scripts/bench). The
// returned function stops it; it is a no-op when the variable is unset.
func startProfile(stderr io.Writer) func() {
	path := os.Getenv("SKILLFLEET_CPUPROFILE")
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
