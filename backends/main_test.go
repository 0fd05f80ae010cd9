package backends

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/skillfleet/skillfleet/pkg/sandbox"
)

// TestMain fails the package's tests when one leaves a goroutine running
// (limiters, circuit breakers and HTTP clients must end with their
// callers), and lets this test binary serve as the sandbox's forwarder,
// which a sandboxed agent's model endpoint starts.
func TestMain(m *testing.M) {
	if code, ok := sandbox.RunForwarder(); ok {
		os.Exit(code)
	}
	goleak.VerifyTestMain(m)
}
