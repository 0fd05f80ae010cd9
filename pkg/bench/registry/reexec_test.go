package registry

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// childEnv marks the copy of this test binary that
// TestHelperEnvironmentDoesNotTakeOverABinary starts.
const childEnv = "SKILLFLEET_REGISTRY_TEST_CHILD"

// TestHelperEnvironmentDoesNotTakeOverABinary: this binary imports the
// spreadsheet scorer and the sandbox (through the spreadsheet benchmark)
// and does not choose to serve as either's helper, so their environment
// variables must not turn it into one: started with each set, it runs its
// tests as asked.
func TestHelperEnvironmentDoesNotTakeOverABinary(t *testing.T) {
	if os.Getenv(childEnv) != "" {
		fmt.Println("ran as a test binary")
		return
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{"SKILLFLEET_SANDBOX_FORWARD=no-such-pair", "SKILLFLEET_SPREADSHEET_SCORER=1"} {
		cmd := exec.CommandContext(t.Context(), exe, "-test.run=^TestHelperEnvironmentDoesNotTakeOverABinary$", "-test.v")
		cmd.Env = append(os.Environ(), env, childEnv+"=1")
		cmd.Stdin = strings.NewReader("")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "ran as a test binary") {
			t.Errorf("with %s the test binary was taken over (%v):\n%s", env, err, out)
		}
	}
}
