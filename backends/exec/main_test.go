package exec

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/skillfleet/skillfleet/pkg/sandbox"
)

// TestMain fails the package's tests when one leaves a goroutine running
// (an agent's process readers, stream parsers and tunnels end with
// the call), and lets this test binary serve as the sandbox's forwarder,
// which a sandboxed agent's model endpoint starts (this executable again).
// A Client's egress proxy (an endpoint off the loopback) is the one
// exception: it serves the Client for the process's life, and a Client has
// no Close, so its accept loop outlives the tests that made one.
func TestMain(m *testing.M) {
	if code, ok := sandbox.RunForwarder(); ok {
		os.Exit(code)
	}
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("github.com/skillfleet/skillfleet/backends/exec.startConnectProxy.func1"))
}
