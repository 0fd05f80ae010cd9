package coordinator_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/skillfleet/skillfleet/internal/fleettest"
)

// TestMain fails the package's tests when one leaves a goroutine running
// once every test has ended: the hub, the trainer, the embedded NATS
// server and the in-process workers must all be stopped by their tests.
// The tests' runs collect garbage less often (fleettest.TuneGC), and
// their temporary directories are on a memory file system when there is
// one (fleettest.InMemory).
func TestMain(m *testing.M) {
	fleettest.TuneGC()
	goleak.VerifyTestMain(fleettest.InMemory(m))
}
