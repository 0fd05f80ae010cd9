package textgame

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when one leaves a goroutine running:
// what the package starts must end when its owner stops it.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
