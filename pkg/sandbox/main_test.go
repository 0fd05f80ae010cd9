package sandbox

import (
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when one leaves a goroutine
// running, and lets this test binary serve as the forwarder that runs with
// Forwards start (this executable again, inside the sandbox).
func TestMain(m *testing.M) {
	if code, ok := RunForwarder(); ok {
		os.Exit(code)
	}
	goleak.VerifyTestMain(m)
}
