package dispatch_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package's tests when one leaves a goroutine running:
// the dispatcher's, the journal's and the bulk window's goroutines must all
// end with Close.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
