package sim

import (
	"os"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/bench/spreadsheet"
	"github.com/skillfleet/skillfleet/pkg/sandbox"
)

// TestMain lets this test binary serve as the spreadsheet scorer's
// comparing child and as the sandbox's forwarder (the spreadsheet world's
// episodes start this executable again).
func TestMain(m *testing.M) {
	if code, ok := sandbox.RunForwarder(); ok {
		os.Exit(code)
	}
	if code, ok := spreadsheet.RunScorerChild(); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}
