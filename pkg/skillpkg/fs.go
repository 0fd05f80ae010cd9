package skillpkg

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// Load reads the skill package at path. A directory is read in the Agent
// Skills layout: SKILL.md at its root (required, its front matter must
// parse), any other text files below it. A regular file is read as a
// single-file package (its SKILL.md), with no bound applied, as today.
//
// Symlinks, devices and other non-regular files, hidden names, binary
// files and a package over lim are refused with a [*RefusalError] naming
// the file; nothing is skipped silently.
func Load(dir string, lim Limits) (*Package, error) {
	st, err := os.Lstat(dir)
	if err != nil {
		return nil, fmt.Errorf("skill package: %w", err)
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		// The package root itself may be reached through a link (a
		// config naming ~/.claude/skills/x); resolve it once, then
		// refuse links below it.
		if dir, err = filepath.EvalSymlinks(dir); err != nil {
			return nil, fmt.Errorf("skill package: %w", err)
		}
		if st, err = os.Stat(dir); err != nil {
			return nil, fmt.Errorf("skill package: %w", err)
		}
	}
	if st.Mode().IsRegular() {
		b, err := os.ReadFile(dir)
		if err != nil {
			return nil, fmt.Errorf("skill package: %w", err)
		}
		return FromText(string(b)), nil
	}
	if !st.IsDir() {
		return nil, refuse(ReasonNotRegular, dir, "neither a file nor a directory")
	}
	lim = lim.resolved()
	files := map[string]string{}
	exec := map[string]bool{}
	total := 0
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("skill package: %w", err)
		}
		if p == dir {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return fmt.Errorf("skill package: %w", err)
		}
		rel = filepath.ToSlash(rel)
		if err := CheckPath(rel); err != nil {
			return err
		}
		t := d.Type()
		switch {
		case t&fs.ModeSymlink != 0:
			target, _ := os.Readlink(p)
			return refuse(ReasonSymlink, rel, "symlink to %q", target)
		case t.IsDir():
			return nil
		case !t.IsRegular():
			return refuse(ReasonNotRegular, rel, "file mode %v", t)
		}
		info, err := d.Info()
		if err != nil {
			return fmt.Errorf("skill package: %s: %w", rel, err)
		}
		if info.Size() > int64(lim.MaxFileBytes) {
			return refuse(ReasonFileTooLarge, rel, "%d bytes, limit %d", info.Size(), lim.MaxFileBytes)
		}
		if len(files)+1 > lim.MaxFiles {
			return refuse(ReasonTooManyFiles, rel, "more than %d files", lim.MaxFiles)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return fmt.Errorf("skill package: %w", err)
		}
		total += len(b)
		if total > lim.MaxTotalBytes {
			return refuse(ReasonTotalTooLarge, rel, "over %d bytes in all", lim.MaxTotalBytes)
		}
		if err := CheckText(rel, string(b)); err != nil {
			return err
		}
		files[rel] = string(b)
		exec[rel] = info.Mode()&0o111 != 0 || isScript(rel)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if _, ok := files[EntryFile]; !ok {
		return nil, refuse(ReasonNoEntry, dir, "no %s at the package root", EntryFile)
	}
	p := &Package{files: files, exec: exec}
	if _, err := p.FrontMatter(); err != nil {
		return nil, err
	}
	return p, nil
}

// Write writes p as a ready-to-install skill directory at dir: dir must
// not exist, or be an empty directory. Files are written 0644, scripts
// 0755. The package is written to a temporary sibling first and renamed
// into place, so dir is either complete or absent. Every path is checked
// again, and a symlink met on the way is refused.
func Write(p *Package, dir string) error {
	if st, err := os.Lstat(dir); err == nil {
		if st.Mode()&fs.ModeSymlink != 0 {
			return refuse(ReasonSymlink, dir, "output directory is a symlink")
		}
		if !st.IsDir() {
			return fmt.Errorf("skill package: %s exists and is not a directory", dir)
		}
		ents, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("skill package: %w", err)
		}
		if len(ents) > 0 {
			return fmt.Errorf("skill package: %s is not empty", dir)
		}
		if err := os.Remove(dir); err != nil {
			return fmt.Errorf("skill package: %w", err)
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("skill package: %w", err)
	}
	parent := filepath.Dir(dir)
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(dir)+".tmp-")
	if err != nil {
		return fmt.Errorf("skill package: %w", err)
	}
	defer os.RemoveAll(tmp)
	for _, name := range p.Paths() {
		if err := CheckPath(name); err != nil {
			return err
		}
		if err := writeFile(tmp, name, p.files[name], p.exec[name]); err != nil {
			return err
		}
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return fmt.Errorf("skill package: %w", err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		return fmt.Errorf("skill package: %w", err)
	}
	return nil
}

// writeFile writes one file below root, creating its directories and
// refusing any symlink on the way.
func writeFile(root, name, text string, exec bool) error {
	parts := strings.Split(name, "/")
	cur := root
	for _, d := range parts[:len(parts)-1] {
		cur = filepath.Join(cur, d)
		st, err := os.Lstat(cur)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(cur, 0o755); err != nil {
				return fmt.Errorf("skill package: %w", err)
			}
		case err != nil:
			return fmt.Errorf("skill package: %w", err)
		case st.Mode()&fs.ModeSymlink != 0:
			return refuse(ReasonSymlink, name, "directory %q is a symlink", d)
		case !st.IsDir():
			return fmt.Errorf("skill package: %s: %q is a file, not a directory", name, d)
		}
	}
	mode := fs.FileMode(0o644)
	if exec {
		mode = 0o755
	}
	f, err := os.OpenFile(filepath.Join(root, filepath.FromSlash(name)), os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("skill package: %w", err)
	}
	if _, err := f.WriteString(text); err != nil {
		_ = f.Close() // the write error is the one to report
		return fmt.Errorf("skill package: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("skill package: %w", err)
	}
	return os.Chmod(f.Name(), mode) // umask-proof
}
