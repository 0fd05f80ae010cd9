//go:build !linux

package sandbox

import (
	"fmt"
	"os"
	"runtime"
	"syscall"
)

// DieWithParent does nothing here: only Linux kills a child with its
// parent.
func DieWithParent(*syscall.SysProcAttr) {}

// memFile needs Linux's memfd; the sandbox (bubblewrap) runs only there,
// so on other systems it says so.
func memFile(name string, _ []byte) (*os.File, error) {
	return nil, fmt.Errorf("sandbox: %s: in-memory files need Linux (this is %s)", name, runtime.GOOS)
}
