package sandbox

import (
	"os"
	"testing"
)

// TestMain lets this test binary serve as the forwarder that runs with
// Forwards start (this executable again, inside the sandbox).
func TestMain(m *testing.M) {
	if code, ok := RunForwarder(); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}
