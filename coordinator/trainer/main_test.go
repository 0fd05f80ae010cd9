package trainer_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when one leaves a goroutine running
// once every test has ended: the trainers and the in-memory dispatchers'
// tasks must all have stopped.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
