package tlsconf_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when one leaves a goroutine running:
// the TLS servers a test starts must be closed by it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
