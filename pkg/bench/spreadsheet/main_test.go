package spreadsheet

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/skillfleet/skillfleet/pkg/sandbox"
)

// TestMain fails the package's tests when one leaves a goroutine
// running, and lets this test binary serve as the scorer's comparing child
// and as the sandbox's forwarder, which start this executable again.
func TestMain(m *testing.M) {
	if code, ok := sandbox.RunForwarder(); ok {
		os.Exit(code)
	}
	if code, ok := RunScorerChild(); ok {
		os.Exit(code)
	}
	goleak.VerifyTestMain(m)
}
