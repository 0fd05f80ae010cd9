package nightly

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// A skill package's live directory is staged, adopted and undone as one
// tree: every file is pinned by its sha256, a new tree is built complete
// beside the live one and swapped in with one rename, and the old tree is
// kept in the staging dir as the backup.

// TreePins returns the sha256 of every regular file below dir, by slash
// path relative to dir, and whether dir exists. Hidden files count (a
// file the user added is a change); a symlink anywhere, or another
// non-regular file, is an error: adopt never swaps a tree it cannot pin.
func TreePins(dir string) (map[string]string, bool, error) {
	st, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		return nil, true, fmt.Errorf("%w: %s", ErrSymlink, dir)
	}
	if !st.IsDir() {
		return nil, true, fmt.Errorf("%s: not a directory", dir)
	}
	pins := map[string]string{}
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		t := d.Type()
		switch {
		case t&fs.ModeSymlink != 0:
			return fmt.Errorf("%w: %s/%s", ErrSymlink, dir, rel)
		case t.IsDir():
			return nil
		case !t.IsRegular():
			return fmt.Errorf("%s/%s: not a regular file (mode %v)", dir, rel, t)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		pins[rel] = SHA256Hex(b)
		return nil
	})
	if err != nil {
		return nil, true, err
	}
	return pins, true, nil
}

// TreeDigest is one hex sha256 over a tree's pins (paths in byte order):
// equal digests, equal trees. An absent tree's digest is "".
func TreeDigest(pins map[string]string) string {
	if pins == nil {
		return ""
	}
	h := sha256.New()
	for _, k := range sortedKeys(pins) {
		fmt.Fprintf(h, "%s\x00%s\n", k, pins[k])
	}
	return hex.EncodeToString(h.Sum(nil))
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// pinDiff names the first difference between two trees' pins ("" when
// they are equal): a changed, added or removed file.
func pinDiff(want, got map[string]string) string {
	for _, k := range sortedKeys(want) {
		g, ok := got[k]
		switch {
		case !ok:
			return k + " was removed"
		case g != want[k]:
			return k + " changed"
		}
	}
	for _, k := range sortedKeys(got) {
		if _, ok := want[k]; !ok {
			return k + " was added"
		}
	}
	return ""
}

// treeFile is one file of a tree to build: its bytes and permission.
type treeFile struct {
	data []byte
	perm fs.FileMode
}

// readTree reads every regular file below dir with its permission,
// refusing symlinks and other non-regular files (see [TreePins]).
func readTree(dir string) (map[string]treeFile, error) {
	got, existed, err := TreePins(dir)
	if err != nil {
		return nil, err
	}
	if !existed {
		return nil, fmt.Errorf("%s: %w", dir, fs.ErrNotExist)
	}
	out := make(map[string]treeFile, len(got))
	for name := range got {
		p := filepath.Join(dir, filepath.FromSlash(name))
		fi, err := os.Lstat(p)
		if err != nil {
			return nil, err
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%s: not a regular file", p)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out[name] = treeFile{data: b, perm: fi.Mode().Perm()}
	}
	return out, nil
}

// treeSums pins a tree read with readTree.
func treeSums(tree map[string]treeFile) map[string]string {
	out := make(map[string]string, len(tree))
	for name, f := range tree {
		out[name] = SHA256Hex(f.data)
	}
	return out
}

// buildTree writes files as a new directory dst, which must not exist:
// every path is checked as a package path, directories are made 0755,
// every file is written atomically and synced, then dst itself is synced.
func buildTree(dst string, files map[string]treeFile) error {
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := skillpkg.CheckPath(name); err != nil {
			return err
		}
		p := filepath.Join(dst, filepath.FromSlash(name))
		if err := mkdirNoLinks(dst, filepath.Dir(p)); err != nil {
			return err
		}
		f := files[name]
		if err := writeFile(p, f.data, f.perm); err != nil {
			return err
		}
	}
	return syncDir(dst)
}

// mkdirNoLinks makes dir (below root) and its parents, refusing a
// symlink on the way.
func mkdirNoLinks(root, dir string) error {
	rel, err := filepath.Rel(root, dir)
	if err != nil || rel == "." {
		return err
	}
	cur := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		cur = filepath.Join(cur, part)
		st, err := os.Lstat(cur)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(cur, 0o755); err != nil {
				return err
			}
		case err != nil:
			return err
		case st.Mode()&fs.ModeSymlink != 0:
			return fmt.Errorf("%w: %s", ErrSymlink, cur)
		case !st.IsDir():
			return fmt.Errorf("%s: not a directory", cur)
		}
	}
	return nil
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// nextSibling is where a new tree is built beside the live dir; oldSibling
// where the old tree waits during a swap on a filesystem that cannot
// exchange two directories. Both are hidden, so an agent that lists its
// skills directory does not take them for skills, and both are ours:
// adopt removes a leftover one.
func nextSibling(live string) string {
	return filepath.Join(filepath.Dir(live), "."+filepath.Base(live)+".sleep-next")
}

func oldSibling(live string) string {
	return filepath.Join(filepath.Dir(live), "."+filepath.Base(live)+".sleep-old")
}

// swapIn puts the tree built at next in place of live. When live exists
// the two are exchanged in one rename (renameat2 RENAME_EXCHANGE), so a
// crash at any moment leaves live the old tree or the new one, whole;
// next then holds the old tree. When live does not exist, next is renamed
// onto it (refused if live appeared meanwhile). The parent is synced.
func swapIn(next, live string, liveExists bool) error {
	parent := filepath.Dir(live)
	if !liveExists {
		if err := renameNoReplace(next, live); err != nil {
			return fmt.Errorf("install %s: %w", live, err)
		}
		return syncDir(parent)
	}
	if err := exchange(next, live); err != nil {
		if !errors.Is(err, errNoExchange) {
			return fmt.Errorf("swap %s: %w", live, err)
		}
		// No atomic exchange here: two renames, the old tree waiting at
		// oldSibling in between, where recovery finds it.
		old := oldSibling(live)
		if err := os.RemoveAll(old); err != nil {
			return err
		}
		if err := os.Rename(live, old); err != nil {
			return fmt.Errorf("swap %s: %w", live, err)
		}
		if err := os.Rename(next, live); err != nil {
			return fmt.Errorf("swap %s: %w (the old tree is at %s)", live, err, old)
		}
		if err := os.Rename(old, next); err != nil {
			return fmt.Errorf("swap %s: %w", live, err)
		}
	}
	return syncDir(parent)
}

// recoverSwap finishes what an interrupted two-rename swap left: a live
// dir that is missing while its old tree waits at oldSibling is put back.
func recoverSwap(live string) error {
	old := oldSibling(live)
	if _, err := os.Lstat(old); err != nil {
		return nil
	}
	if _, err := os.Lstat(live); errors.Is(err, fs.ErrNotExist) {
		if err := os.Rename(old, live); err != nil {
			return fmt.Errorf("recover %s from %s: %w", live, old, err)
		}
		return syncDir(filepath.Dir(live))
	}
	return os.RemoveAll(old)
}

// removeTree removes a whole live tree as one step: it is renamed aside
// (a crash leaves it present or absent, never half), then deleted.
func removeTree(live string) error {
	trash := nextSibling(live)
	if err := os.RemoveAll(trash); err != nil {
		return err
	}
	if err := os.Rename(live, trash); err != nil {
		return err
	}
	if err := syncDir(filepath.Dir(live)); err != nil {
		return err
	}
	return os.RemoveAll(trash)
}

// renameIfAbsent renames a onto b after checking b does not exist (not
// atomic: the fallback where RENAME_NOREPLACE is missing).
func renameIfAbsent(a, b string) error {
	if _, err := os.Lstat(b); err == nil {
		return fmt.Errorf("%s: %w", b, fs.ErrExist)
	}
	return os.Rename(a, b)
}
