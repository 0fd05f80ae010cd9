package filelock

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestLockRefusesASecondHolderUntilUnlocked(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	unlock, err := Lock(path, 0o600, "first")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Lock(path, 0o600, "second")
	var held *HeldError
	if !errors.As(err, &held) || held.Holder != "first" || held.Path != path {
		t.Fatalf("second Lock = %v, want a HeldError naming holder %q", err, "first")
	}
	unlock()
	unlock2, err := Lock(path, 0o600, "second")
	if err != nil {
		t.Fatalf("Lock after unlock = %v", err)
	}
	defer unlock2()
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "second\n" {
		t.Fatalf("lock file holds %q (%v), want %q", b, err, "second\n")
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("lock file mode %v (%v), want 0600", fi.Mode().Perm(), err)
	}
}

// TestLockHeldByAnotherProcess holds the lock in a child process (flock
// locks belong to the open file, so a second process is the real case).
func TestLockHeldByAnotherProcess(t *testing.T) {
	if os.Getenv("FILELOCK_CHILD") != "" {
		if _, err := Lock(os.Getenv("FILELOCK_CHILD"), 0o600, "child"); err != nil {
			os.Exit(3)
		}
		_, _ = os.Stdout.WriteString("locked\n")
		_, _ = os.Stdin.Read(make([]byte, 1)) // hold until the parent closes stdin
		os.Exit(0)
	}
	path := filepath.Join(t.TempDir(), "x.lock")
	cmd := exec.Command(os.Args[0], "-test.run=^TestLockHeldByAnotherProcess$")
	cmd.Env = append(os.Environ(), "FILELOCK_CHILD="+path)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stdin.Close(); _ = cmd.Wait() }()
	buf := make([]byte, 7)
	if _, err := stdout.Read(buf); err != nil || string(buf) != "locked\n" {
		t.Fatalf("child said %q (%v), want it to hold the lock", buf, err)
	}
	_, err = Lock(path, 0o600, "parent")
	var held *HeldError
	if !errors.As(err, &held) || held.Holder != "child" {
		t.Fatalf("Lock while the child holds it = %v, want a HeldError naming %q", err, "child")
	}
	_ = stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	unlock, err := Lock(path, 0o600, "parent")
	if err != nil {
		t.Fatalf("Lock after the child ended = %v", err)
	}
	unlock()
}

func TestLockNamesThePathOnFailure(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "x.lock")
	if _, err := Lock(path, 0o600, "me"); !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Fatalf("Lock in a missing directory = %v, want a not-exist error naming %s", err, path)
	}
}
