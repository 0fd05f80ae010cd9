package sim

import (
	"os"
	"testing"

	"go.uber.org/goleak"

	"github.com/skillfleet/skillfleet/pkg/bench/spreadsheet"
	"github.com/skillfleet/skillfleet/pkg/sandbox"
)

// TestMain fails the package's tests when one leaves a goroutine running
// (the sim servers, agent servers and worlds end with their tests), and
// lets this test binary serve as the spreadsheet scorer's comparing child
// and as the sandbox's forwarder (the spreadsheet world's episodes start
// this executable again). The household worlds' gRPC connection to their
// environment server is the one exception: a benchmark keeps it for the
// process's life and has no Close, so its callback goroutines outlive the
// tests that played a game.
func TestMain(m *testing.M) {
	if code, ok := sandbox.RunForwarder(); ok {
		os.Exit(code)
	}
	if code, ok := spreadsheet.RunScorerChild(); ok {
		os.Exit(code)
	}
	goleak.VerifyTestMain(m, goleak.IgnoreAnyFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"))
}
