package prompts

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when one leaves a goroutine running:
// renders that run at once must all have returned.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
