//go:build race

package trainer_test

// raceDetector reports whether the tests were built with -race.
const raceDetector = true
