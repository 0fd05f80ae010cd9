package telemetry

import (
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"
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

// HeapProfileEnv names the file [StartHeapProfiles] writes to.
const HeapProfileEnv = "SKILLFLEET_HEAPPROFILE"

// StartHeapProfiles makes every SIGUSR1 the process receives write a heap
// profile of its live memory (after a collection) to the file
// $SKILLFLEET_HEAPPROFILE names, replacing the previous one, until the
// returned function is called (a developer's tool: scripts/bench/scale.sh
// --for signals its campaign processes at the end of its window). It does
// nothing when the variable is unset; without it SIGUSR1 keeps its default
// action. Failures are reported on stderr, never fatal.
func StartHeapProfiles(stderr io.Writer) (stop func()) {
	path := os.Getenv(HeapProfileEnv)
	if path == "" {
		return func() {}
	}
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	quit, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-quit:
				return
			case <-sig:
				if err := writeHeapProfile(path); err != nil {
					fmt.Fprintln(stderr, "skillfleet: "+HeapProfileEnv+":", err)
				}
			}
		}
	}()
	return func() {
		signal.Stop(sig)
		close(quit)
		<-done
	}
}

// writeHeapProfile writes the heap profile to path through a temporary
// file, so a reader never sees half of one.
func writeHeapProfile(path string) error {
	runtime.GC()
	tmp := path + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("heap").WriteTo(f, 0); err != nil {
		_ = f.Close() // the write error is the one to report
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
