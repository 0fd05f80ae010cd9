package fleettest

import (
	"os"
	"runtime/debug"
)

// testGCPercent is the garbage collector's target for test binaries that
// train presets: a run allocates mostly short-lived JSON (payloads,
// trajectories, replies), so collecting when the heap has grown by 400% of
// the live heap instead of 100% trades memory, which the tests have, for
// collector CPU, which the shared test machines lack.
const testGCPercent = 400

// TuneGC sets the garbage collector's target for a test binary (call it
// from TestMain), unless GOGC is set in the environment.
func TuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(testGCPercent)
	}
}
