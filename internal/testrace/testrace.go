// Package testrace tells tests whether they were built with the race
// detector, so that an experiment that only measures (many trainings, no
// concurrency of its own under test) can leave the detector's pass to the
// concurrency tests: scripts/test.sh runs such packages once more without
// it (see its "without the race detector" pass).
package testrace

import "testing"

// SkipExperiment skips t when the race detector is on.
func SkipExperiment(t testing.TB, what string) {
	t.Helper()
	if Enabled {
		t.Skip(what + ": an experiment, run without -race (scripts/test.sh runs it in its pass without the detector)")
	}
}
