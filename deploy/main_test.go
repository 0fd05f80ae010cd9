package deploy_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when one leaves a goroutine running:
// the watches the container tests start beside the engine must end with
// them.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
