package campaign

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when one leaves a goroutine running
// once every test has ended: a campaign's beats, watches and cells, and
// the embedded NATS servers, must all be stopped by their tests.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
