package sleep

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/skillfleet/skillfleet/pkg/nightly"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// ResolvePaths makes the night's paths absolute and fills in the defaults
// from its config: the project (default: the working directory), the
// skill (skill_path, default the managed skill under home's
// .claude/skills; a package when skill_dir names one or skill_path names
// a directory), the memory file (default <project>/CLAUDE.md), the
// staging root under the project and the roots adopt may write under.
func (n *Night) ResolvePaths(home string) error {
	var err error
	if n.Project, err = filepath.Abs(cmp.Or(n.Project, ".")); err != nil {
		return err
	}
	c := n.Config
	if n.SkillPath, err = filepath.Abs(cmp.Or(c.SkillPath, filepath.Join(home, ".claude", "skills", nightly.ManagedSkillName, skillpkg.EntryFile))); err != nil {
		return err
	}
	if n.MemoryPath, err = filepath.Abs(cmp.Or(c.MemoryPath, filepath.Join(n.Project, "CLAUDE.md"))); err != nil {
		return err
	}
	// skill_path naming a SKILL.md is that one file, even in a package
	// directory; naming a directory, it is that package.
	dir := c.SkillDir
	if st, err := os.Stat(n.SkillPath); dir == "" && err == nil && st.IsDir() {
		dir = n.SkillPath
	}
	if dir != "" {
		if n.SkillDir, err = packageDir(dir); err != nil {
			return err
		}
		n.SkillPath = filepath.Join(n.SkillDir, skillpkg.EntryFile)
	}
	n.StagingRoot = filepath.Join(n.Project, ".skillfleet-sleep", "staging")
	n.AllowedRoots = []string{n.Project, filepath.Dir(n.SkillPath), filepath.Dir(n.MemoryPath)}
	if c.SkillRoot != "" {
		if n.SkillRoot, err = filepath.Abs(c.SkillRoot); err != nil {
			return err
		}
		n.AllowedRoots = append(n.AllowedRoots, n.SkillRoot)
	}
	return nil
}

// packageDir returns a skill package directory's absolute path with its
// symlinks resolved (a skills directory often links to a checkout; adopt
// swaps the real directory, and the link keeps pointing at it). A path
// that does not exist yet is kept: the night starts it from a scaffold.
func packageDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	target, err := filepath.EvalSymlinks(abs)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return abs, nil
	case err != nil:
		return "", fmt.Errorf("skill_dir %s: %w", dir, err)
	}
	if st, err := os.Stat(target); err != nil || !st.IsDir() {
		return "", fmt.Errorf("skill_dir %s: not a directory", dir)
	}
	return target, nil
}
