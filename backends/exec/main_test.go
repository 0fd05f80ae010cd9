package exec

import (
	"os"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/sandbox"
)

// TestMain lets this test binary serve as the sandbox's forwarder, which a
// sandboxed agent's model endpoint starts (this executable again).
func TestMain(m *testing.M) {
	if code, ok := sandbox.RunForwarder(); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}
