package worker

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when one leaves a goroutine running:
// every goroutine the worker starts must end with its Run or its call.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
