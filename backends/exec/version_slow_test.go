package exec_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/backends/exec"
)

// TestVersionCheckCutShortSaysSlowStart: a --version that has not
// answered when the deadline passes is reported as a slow start on a
// busy machine, with the ways to go on (retry, --no-preflight,
// version_check=false), not as a binary to reinstall; and it is not
// remembered, so a later check with time enough passes.
func TestVersionCheckCutShortSaysSlowStart(t *testing.T) {
	t.Parallel()
	bin := script(t, "[ \"$1\" = --version ] && { sleep 3; echo 1.18.33; }\n")
	c := exec.New(exec.Config{Agent: exec.AgentOpencode, Bin: bin, Model: "m",
		Sandbox: exec.SandboxConfig{Mode: exec.SandboxNone, Logf: func(string, ...any) {}}})
	ctx, cancel := context.WithTimeout(t.Context(), 500*time.Millisecond)
	defer cancel()
	_, err := c.CheckVersion(ctx)
	if err == nil {
		t.Fatal("a --version cut short passed")
	}
	for _, want := range []string{bin + " --version gave no answer in time", "busy machine", "--no-preflight", "version_check=false"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	if strings.Contains(err.Error(), "install-agents") {
		t.Errorf("error %q sends the user to reinstall a CLI that only started slowly", err)
	}
	if v, err := c.CheckVersion(t.Context()); err != nil || v != "1.18.33" {
		t.Fatalf("the check with time enough = %q, %v", v, err)
	}
}
