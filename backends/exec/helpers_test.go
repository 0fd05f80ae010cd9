package exec_test

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/skillfleet/skillfleet/backends/exec"
)

// unsandboxed is the explicit opt-out (option sandbox=none); the test
// checks that it is logged.
func unsandboxed(t *testing.T) exec.SandboxConfig {
	t.Helper()
	var mu sync.Mutex
	var logged []string
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		if len(logged) != 1 || !strings.Contains(logged[0], "WITHOUT the sandbox") {
			t.Errorf("the opt-out logged %q, want one warning", logged)
		}
	})
	return exec.SandboxConfig{Mode: exec.SandboxNone, Logf: func(f string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		logged = append(logged, fmt.Sprintf(f, a...))
	}}
}

// optOut runs a real-CLI test's agent with the explicit opt-out (option
// sandbox=none), for the tests of the unsandboxed path.
func optOut(cfg *exec.Config) {
	cfg.Sandbox.Mode = exec.SandboxNone
	cfg.Sandbox.Logf = func(string, ...any) {}
}
