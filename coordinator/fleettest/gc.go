package fleettest

import (
	"os"
	"runtime/debug"
)

// testGCPercent is the garbage collector's target for test binaries that
// train presets: a run allocates mostly short-lived JSON (payloads,
// trajectories, replies), and collecting when the heap has grown by 400%
// of the live heap instead of 100% cut the test binaries' CPU by a tenth
// (coordinator/trainer 8.5-8.9 to 7.7 CPU-s, peak RSS 57 to 107 MB;
// coordinator 3.5 to 3.2 CPU-s, 148 to 276 MB).
const testGCPercent = 400

// TuneGC sets the garbage collector's target for a test binary (call it
// from TestMain), unless GOGC is set in the environment.
func TuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(testGCPercent)
	}
}
