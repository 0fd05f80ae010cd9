//go:build crashhook

package fleet

import (
	"os"
	"strconv"
	"strings"
	"syscall"
)

// CrashHook is a run's [coordinator.Deps.Observe] that kills this process
// with SIGKILL when the n-th task of a stage finishes
// (SKILLFLEET_CRASH_AT=stage:n). Only binaries built with -tags crashhook
// have it: the crash-and-resume tests build one.
func CrashHook() func(stage string, done int) {
	spec := os.Getenv("SKILLFLEET_CRASH_AT")
	if spec == "" {
		return nil
	}
	stage, nstr, _ := strings.Cut(spec, ":")
	n, _ := strconv.Atoi(nstr)
	n = max(n, 1)
	return func(s string, done int) {
		if strings.HasPrefix(s, stage) && done >= n {
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		}
	}
}
