package sandbox

import (
	"fmt"
	"io"
	"os"
	"path"
	"syscall"

	"golang.org/x/sys/unix"
)

// DieWithParent has the kernel kill the child when the process that
// started it dies, so no sandboxed command outlives its worker.
func DieWithParent(attr *syscall.SysProcAttr) { attr.Pdeathsig = syscall.SIGKILL }

// memFile is an anonymous in-memory file holding data, at offset 0.
func memFile(name string, data []byte) (*os.File, error) {
	fd, err := unix.MemfdCreate("sandbox-"+path.Base(name), unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("sandbox: memfd for %s: %w", name, err)
	}
	f := os.NewFile(uintptr(fd), name)
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("sandbox: memfd for %s: %w", name, err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		_ = f.Close()
		return nil, err
	}
	return f, nil
}
