package report

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// PackageStep is what one step's candidate changed in a skill package
// (pkg/skillpkg): the files it added, removed or changed against the
// skill the step started from. A single-file run has none.
type PackageStep struct {
	Step    int
	Action  string
	Verdict string
	Files   []FileDiff
}

// FileDiff is one file's change: Status is "added", "removed" or
// "changed"; Lines are the diff lines, each starting "+ ", "- " or "  "
// (context is left out: only changed lines are listed).
type FileDiff struct {
	Path    string
	Status  string
	Added   int
	Removed int
	Lines   []string
}

// maxDiffLines bounds the lines a report shows of one file's diff.
const maxDiffLines = 40

// loadPackageDiffs fills r.Packages from the step directories: each
// step's candidate_skill.md against skills/skill_v<step-1>.md (the skill
// the step started from), when either is a package bundle. A step
// without both files is skipped; one whose skills do not decode gets a
// note in r.Notes.
func (r *Report) loadPackageDiffs(dir string) {
	steps := make([]int, 0, len(r.Steps))
	for g := range r.Steps {
		steps = append(steps, g)
	}
	sort.Ints(steps)
	for _, g := range steps {
		cand, err := os.ReadFile(filepath.Join(dir, "steps", fmt.Sprintf("step_%04d", g), "candidate_skill.md"))
		if err != nil {
			continue // a skipped step has no candidate
		}
		base, err := os.ReadFile(filepath.Join(dir, "skills", fmt.Sprintf("skill_v%04d.md", g-1)))
		if err != nil {
			continue
		}
		if !skillpkg.IsBundle(string(cand)) && !skillpkg.IsBundle(string(base)) {
			continue
		}
		files, err := diffPackages(string(base), string(cand))
		if err != nil {
			r.Notes = append(r.Notes, fmt.Sprintf("step %d: package diff: %v", g, err))
			continue
		}
		rec := r.Steps[g]
		r.Packages = append(r.Packages, PackageStep{Step: g, Action: rec.Action, Verdict: Verdict(rec.Action), Files: files})
	}
}

// diffPackages compares two skills carried as text (bundles or plain
// SKILL.md texts) file by file, in path order with SKILL.md first.
func diffPackages(before, after string) ([]FileDiff, error) {
	a, err := skillpkg.Decode(before)
	if err != nil {
		return nil, fmt.Errorf("before: %w", err)
	}
	b, err := skillpkg.Decode(after)
	if err != nil {
		return nil, fmt.Errorf("candidate: %w", err)
	}
	paths := map[string]bool{}
	for _, p := range a.Paths() {
		paths[p] = true
	}
	for _, p := range b.Paths() {
		paths[p] = true
	}
	order := make([]string, 0, len(paths))
	for p := range paths {
		if p != skillpkg.EntryFile {
			order = append(order, p)
		}
	}
	sort.Strings(order)
	order = append([]string{skillpkg.EntryFile}, order...)
	var out []FileDiff
	for _, p := range order {
		x, inA := a.File(p)
		y, inB := b.File(p)
		if inA && inB && x == y {
			continue
		}
		d := FileDiff{Path: p, Status: "changed"}
		switch {
		case !inA:
			d.Status = "added"
		case !inB:
			d.Status = "removed"
		}
		d.Lines, d.Added, d.Removed = diffLines(splitLines(x), splitLines(y))
		out = append(out, d)
	}
	return out, nil
}

func splitLines(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

// diffLines lists the lines removed from a and added in b, in order, by a
// longest common subsequence (files are small: a package file is at most
// 64 KiB; beyond 2000 lines a side, every line counts as changed).
func diffLines(a, b []string) (lines []string, added, removed int) {
	if len(a) > 2000 || len(b) > 2000 {
		for _, l := range a {
			lines = append(lines, "- "+l)
		}
		for _, l := range b {
			lines = append(lines, "+ "+l)
		}
		return lines, len(b), len(a)
	}
	// lcs[i][j] is the LCS length of a[i:] and b[j:].
	lcs := make([][]int, len(a)+1)
	for i := range lcs {
		lcs[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case i < len(a) && j < len(b) && a[i] == b[j]:
			i++
			j++
		case i < len(a) && (j == len(b) || lcs[i+1][j] >= lcs[i][j+1]):
			lines = append(lines, "- "+a[i])
			removed++
			i++
		default:
			lines = append(lines, "+ "+b[j])
			added++
			j++
		}
	}
	return lines, added, removed
}

// Shown returns the diff lines a report prints, at most maxDiffLines.
func (d FileDiff) Shown() []string { return d.Lines[:min(len(d.Lines), maxDiffLines)] }

// Hidden is how many diff lines Shown leaves out.
func (d FileDiff) Hidden() int { return len(d.Lines) - len(d.Shown()) }

// Summary is one line: the path, its status and the line counts.
func (d FileDiff) Summary() string {
	mark := map[string]string{"added": "+", "removed": "-", "changed": "~"}[d.Status]
	return fmt.Sprintf("%s %s (%s, +%d -%d lines)", mark, d.Path, d.Status, d.Added, d.Removed)
}
