// Package testfs holds file-system helpers for tests: a small tmpfs of
// the test's own to fill (the full-disk tests), and a picture of a
// directory tree to check that nothing in it changed.
package testfs

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// Tmpfs mounts a tmpfs of the given size (mount's syntax: "64k", "2m") on
// a fresh temporary directory and returns that directory; it is unmounted
// when the test ends. The test is skipped where it cannot mount one (not
// root, or no tmpfs).
func Tmpfs(t testing.TB, size string) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size, "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs: %v %s", err, out)
	}
	t.Cleanup(func() { _ = syscall.Unmount(mnt, syscall.MNT_DETACH) })
	return mnt
}

// Resize gives the tmpfs that [Tmpfs] mounted at mnt a new size, keeping
// its files.
func Resize(t testing.TB, mnt, size string) {
	t.Helper()
	if out, err := exec.Command("mount", "-o", "remount,size="+size, mnt).CombinedOutput(); err != nil {
		t.Fatalf("remount: %v %s", err, out)
	}
}

// Tree maps every path under root (slash-separated, relative to root;
// "." is root itself) to its mode and, for a regular file, a hash of its
// content: two pictures of a tree are equal when no file or directory in
// it was added, removed, changed or given another mode.
func Tree(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		v := info.Mode().String()
		if d.Type().IsRegular() {
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			h := sha256.Sum256(b)
			v += " " + hex.EncodeToString(h[:8])
		}
		out[filepath.ToSlash(rel)] = v
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
