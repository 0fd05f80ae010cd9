package alfworld_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when one leaves a goroutine running:
// the game server a test starts must end with the test.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
