package ui

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when one leaves a goroutine running:
// the dashboard's server and watchers goroutines must end when their owner stops.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
