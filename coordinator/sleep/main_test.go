package sleep

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when one leaves a goroutine running:
// the night's and the sweep's workers must all end before their call returns.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
