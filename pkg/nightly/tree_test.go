package nightly

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func writeTree(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTreePins(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pkg")
	if pins, existed, err := TreePins(dir); err != nil || existed || pins != nil {
		t.Fatalf("TreePins(absent) = %v, %t, %v", pins, existed, err)
	}
	writeTree(t, dir, map[string]string{"SKILL.md": "a\n", "references/x.md": "b\n", ".hidden": "c"})
	pins, existed, err := TreePins(dir)
	if err != nil || !existed || len(pins) != 3 || pins["references/x.md"] != SHA256Hex([]byte("b\n")) {
		t.Fatalf("TreePins = %v, %t, %v", pins, existed, err)
	}
	if TreeDigest(pins) == TreeDigest(map[string]string{}) || TreeDigest(nil) != "" {
		t.Fatal("digests do not tell trees apart")
	}
	changed := map[string]string{"SKILL.md": pins["SKILL.md"], "references/x.md": "0", "new.md": "1"}
	for _, c := range []struct {
		want, got map[string]string
		diff      string
	}{
		{pins, pins, ""},
		{pins, changed, ".hidden was removed"},
		{map[string]string{"references/x.md": pins["references/x.md"]}, changed, "references/x.md changed"},
		{map[string]string{}, changed, "SKILL.md was added"},
	} {
		if d := pinDiff(c.want, c.got); d != c.diff {
			t.Errorf("pinDiff = %q, want %q", d, c.diff)
		}
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "references", "link.md")); err != nil {
		t.Fatal(err)
	}
	if _, _, err := TreePins(dir); !errors.Is(err, ErrSymlink) {
		t.Fatalf("TreePins with a symlink = %v, want ErrSymlink", err)
	}
}

func TestSwapInExchangesWholeTrees(t *testing.T) {
	root := t.TempDir()
	live := filepath.Join(root, "papers")
	writeTree(t, live, map[string]string{"SKILL.md": "old\n", "references/a.md": "old a\n"})
	oldPins, _, _ := TreePins(live)
	next := nextSibling(live)
	files := map[string]treeFile{"SKILL.md": {[]byte("new\n"), 0o644}, "references/b.md": {[]byte("new b\n"), 0o644}, "scripts/x.py": {[]byte("pass\n"), 0o755}}
	if err := buildTree(next, files); err != nil {
		t.Fatal(err)
	}
	if err := swapIn(next, live, true); err != nil {
		t.Fatal(err)
	}
	got, _, _ := TreePins(live)
	if len(got) != 3 || got["references/b.md"] != SHA256Hex([]byte("new b\n")) {
		t.Fatalf("live after the swap: %v", got)
	}
	if fi, err := os.Stat(filepath.Join(live, "scripts", "x.py")); err != nil || fi.Mode().Perm() != 0o755 {
		t.Fatalf("script mode %v, %v", fi.Mode(), err)
	}
	if moved, _, _ := TreePins(next); pinDiff(oldPins, moved) != "" {
		t.Fatalf("the old tree is not whole beside the live one: %v", moved)
	}
	// A tree onto a path that does not exist, and not onto one that does.
	fresh := filepath.Join(root, "fresh")
	if err := buildTree(nextSibling(fresh), files); err != nil {
		t.Fatal(err)
	}
	if err := swapIn(nextSibling(fresh), fresh, false); err != nil {
		t.Fatal(err)
	}
	if err := buildTree(nextSibling(fresh), files); err != nil {
		t.Fatal(err)
	}
	if err := swapIn(nextSibling(fresh), fresh, false); err == nil {
		t.Fatal("swapIn onto an existing dir said to be absent succeeded")
	}
	// buildTree refuses paths that leave the tree.
	if err := buildTree(filepath.Join(root, "evil"), map[string]treeFile{"../x": {[]byte("x"), 0o644}}); err == nil {
		t.Fatal("buildTree wrote ../x")
	}
	if err := removeTree(fresh); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(fresh); err == nil {
		t.Fatal("removeTree left the tree")
	}
}

func TestRecoverSwapPutsTheOldTreeBack(t *testing.T) {
	root := t.TempDir()
	live := filepath.Join(root, "papers")
	writeTree(t, oldSibling(live), map[string]string{"SKILL.md": "old\n"})
	if err := recoverSwap(live); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(live, "SKILL.md")); err != nil || string(b) != "old\n" {
		t.Fatalf("live after recovery: %q, %v", b, err)
	}
}
