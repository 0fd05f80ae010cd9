package testfs

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestTreeSeesEveryChange(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "a", "b"), 0o755); err != nil {
		t.Fatal(err)
	}
	f := filepath.Join(root, "a", "b", "f")
	if err := os.WriteFile(f, []byte("one"), 0o644); err != nil {
		t.Fatal(err)
	}
	before := Tree(t, root)
	if len(before) != 4 || before["a/b/f"] == "" {
		t.Fatalf("Tree = %v, want ., a, a/b and a/b/f", before)
	}
	same := func() bool {
		now := Tree(t, root)
		if len(now) != len(before) {
			return false
		}
		for k, v := range before {
			if now[k] != v {
				return false
			}
		}
		return true
	}
	if !same() {
		t.Fatal("Tree of an unchanged tree differs")
	}
	for _, change := range []struct {
		name     string
		do, undo func() error
	}{
		{"content", func() error { return os.WriteFile(f, []byte("two"), 0o644) }, func() error { return os.WriteFile(f, []byte("one"), 0o644) }},
		{"mode", func() error { return os.Chmod(f, 0o600) }, func() error { return os.Chmod(f, 0o644) }},
		{"added", func() error { return os.WriteFile(f+"2", nil, 0o644) }, func() error { return os.Remove(f + "2") }},
	} {
		if err := change.do(); err != nil {
			t.Fatal(err)
		}
		if same() {
			t.Errorf("Tree does not see a change of %s", change.name)
		}
		if err := change.undo(); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTmpfsFillsAndGrows(t *testing.T) {
	mnt := Tmpfs(t, "64k")
	big := make([]byte, 128<<10)
	err := os.WriteFile(filepath.Join(mnt, "big"), big, 0o644)
	if !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("writing 128 KiB to a 64 KiB tmpfs = %v, want ENOSPC", err)
	}
	Resize(t, mnt, "1m")
	if err := os.WriteFile(filepath.Join(mnt, "big"), big, 0o644); err != nil {
		t.Fatalf("after Resize to 1 MiB: %v", err)
	}
}
