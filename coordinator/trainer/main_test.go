package trainer_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/skillfleet/skillfleet/coordinator/fleettest"
)

// TestMain fails the package's tests when one leaves a goroutine running
// once every test has ended: the trainers and the in-memory dispatchers'
// tasks must all have stopped. The tests' runs collect garbage less often
// (fleettest.TuneGC).
func TestMain(m *testing.M) {
	fleettest.TuneGC()
	goleak.VerifyTestMain(m)
}
