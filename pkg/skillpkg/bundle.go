package skillpkg

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/skill"
)

// A bundle is a package as one text, for the places that carry a skill as
// a string (the trainer's state, resume files, cache keys, a target that
// gets the skill inlined). A single-file package's bundle is its SKILL.md
// text, byte for byte, so single-file runs do not change. A larger
// package's bundle is a header line, then every file but SKILL.md as a
// length-prefixed block, then a SKILL.md line and SKILL.md's text to the
// end:
//
//	<!-- SKILLPKG v1 files=3 -->
//	<!-- SKILLPKG FILE 42 - references/units.md -->
//	…42 bytes…
//	<!-- SKILLPKG FILE 18 x scripts/convert.py -->
//	…18 bytes…
//	<!-- SKILLPKG SKILL.md -->
//	---
//	name: units
//	…
//
// SKILL.md comes last so that text appended at the end of the bundle, and
// the protected regions (which live in SKILL.md), stay in SKILL.md.
const (
	bundleHeader = "<!-- SKILLPKG v1 files="
	bundleFile   = "<!-- SKILLPKG FILE "
	bundleEntry  = "<!-- SKILLPKG SKILL.md -->\n"
	markEnd      = " -->"
)

// IsBundle reports whether text is a multi-file bundle (see [Encode]).
func IsBundle(text string) bool { return strings.HasPrefix(text, bundleHeader) }

// Encode returns p's bundle: SKILL.md's text alone for a single-file
// package, the bundle format otherwise.
func Encode(p *Package) string {
	if p.SingleFile() {
		return p.Entry()
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s%d%s\n", bundleHeader, p.Len(), markEnd)
	for _, name := range p.Paths() {
		if name == EntryFile {
			continue
		}
		x := "-"
		if p.exec[name] {
			x = "x"
		}
		text := p.files[name]
		fmt.Fprintf(&b, "%s%d %s %s%s\n", bundleFile, len(text), x, name, markEnd)
		b.WriteString(text)
		b.WriteByte('\n')
	}
	b.WriteString(bundleEntry)
	b.WriteString(p.Entry())
	return b.String()
}

// Decode reads a bundle back: text that is not a multi-file bundle is a
// single-file package. A malformed bundle, or one whose files fail
// [CheckPath] or [CheckText], is an error naming the part.
func Decode(text string) (*Package, error) {
	if !IsBundle(text) {
		return FromText(text), nil
	}
	line, rest, ok := strings.Cut(text, "\n")
	if !ok || !strings.HasSuffix(line, markEnd) {
		return nil, errors.New("skill bundle: header line malformed")
	}
	n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(line, bundleHeader), markEnd))
	if err != nil || n < 1 {
		return nil, fmt.Errorf("skill bundle: header file count %q", line)
	}
	p := &Package{files: map[string]string{}, exec: map[string]bool{}}
	for strings.HasPrefix(rest, bundleFile) {
		line, after, ok := strings.Cut(rest, "\n")
		if !ok || !strings.HasSuffix(line, markEnd) {
			return nil, fmt.Errorf("skill bundle: file line %q malformed", line)
		}
		f := strings.SplitN(strings.TrimSuffix(strings.TrimPrefix(line, bundleFile), markEnd), " ", 3)
		if len(f) != 3 || (f[1] != "-" && f[1] != "x") {
			return nil, fmt.Errorf("skill bundle: file line %q malformed", line)
		}
		size, err := strconv.Atoi(f[0])
		if err != nil || size < 0 || size+1 > len(after) || after[size] != '\n' {
			return nil, fmt.Errorf("skill bundle: %s: length %q does not match its block", f[2], f[0])
		}
		name := f[2]
		if err := CheckPath(name); err != nil {
			return nil, err
		}
		if name == EntryFile {
			return nil, errors.New("skill bundle: SKILL.md as a file block")
		}
		if _, dup := p.files[name]; dup {
			return nil, fmt.Errorf("skill bundle: %s: twice", name)
		}
		if err := CheckText(name, after[:size]); err != nil {
			return nil, err
		}
		p.files[name], p.exec[name] = after[:size], f[1] == "x"
		rest = after[size+1:]
	}
	entry, ok := strings.CutPrefix(rest, bundleEntry)
	if !ok {
		return nil, errors.New("skill bundle: no SKILL.md line after the file blocks")
	}
	p.files[EntryFile] = entry
	if len(p.files) != n {
		return nil, fmt.Errorf("skill bundle: header says %d files, found %d", n, len(p.files))
	}
	return p, nil
}

// ReadInit reads env.skill_init: a file's bytes verbatim (today's
// behaviour, byte for byte), or a package directory's bundle after
// [Load] with lim.
func ReadInit(path string, lim Limits) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if !st.IsDir() {
		b, err := os.ReadFile(path)
		return string(b), err
	}
	p, err := Load(path, lim)
	if err != nil {
		return "", err
	}
	return Encode(p), nil
}

// ApplyText applies package edits to a skill carried as text (a bundle or
// a plain SKILL.md). A plain text with edits that all touch SKILL.md with
// text operations goes straight to [skill.Apply], unbounded, exactly as
// today; anything else is decoded, applied with [Apply] and encoded
// again. A bundle that does not decode is an error.
func ApplyText(text string, edits []Edit, opts ApplyOptions) (string, []Report, error) {
	if !IsBundle(text) && entryTextOnly(edits, opts.Text.NormalizeOps) {
		se := make([]skill.Edit, len(edits))
		for i, e := range edits {
			se[i] = skill.Edit{Op: e.Op, Target: e.Target, Content: e.Content}
		}
		out, reps := skill.Apply(text, se, opts.Text)
		rows := make([]Report, len(reps))
		for i, r := range reps {
			rows[i] = Report{Report: r, File: EntryFile}
		}
		return out, rows, nil
	}
	p, err := Decode(text)
	if err != nil {
		return text, nil, err
	}
	q, rows := Apply(p, edits, opts)
	return Encode(q), rows, nil
}

func entryTextOnly(edits []Edit, normalize bool) bool {
	for _, e := range edits {
		if e.File != "" && e.File != EntryFile {
			return false
		}
		if _, ok := fileOp(e.Op, normalize); ok {
			return false
		}
	}
	return true
}

// SkillReports returns the [skill.Report] rows of rows, the single-file
// edit_apply_report.json shape.
func SkillReports(rows []Report) []skill.Report {
	out := make([]skill.Report, len(rows))
	for i, r := range rows {
		out[i] = r.Report
	}
	return out
}

// BestDir is the run artifact a multi-file best skill is written to.
const BestDir = "best_skill"

// WriteBest writes a multi-file best skill (a bundle) as the
// ready-to-install directory runDir/best_skill, replacing an earlier one;
// it returns false and writes nothing for a plain single-file skill, whose
// artifact stays best_skill.md.
func WriteBest(runDir, text string) (bool, error) {
	if !IsBundle(text) {
		return false, nil
	}
	p, err := Decode(text)
	if err != nil {
		return false, err
	}
	return true, Replace(p, filepath.Join(runDir, BestDir))
}

// Replace writes p to dir like [Write], replacing whatever directory is
// there: the new tree is complete before the old one is moved away.
func Replace(p *Package, dir string) error {
	st, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return Write(p, dir)
	}
	if err != nil {
		return fmt.Errorf("skill package: %w", err)
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		return refuse(ReasonSymlink, dir, "output directory is a symlink")
	}
	next := dir + ".next"
	old := dir + ".old"
	_ = os.RemoveAll(next)
	_ = os.RemoveAll(old)
	if err := Write(p, next); err != nil {
		return err
	}
	if err := os.Rename(dir, old); err != nil {
		return fmt.Errorf("skill package: %w", err)
	}
	if err := os.Rename(next, dir); err != nil {
		return fmt.Errorf("skill package: %w", err)
	}
	return os.RemoveAll(old)
}

// EntryText returns SKILL.md's text of a skill carried as text: the text
// itself when it is not a bundle.
func EntryText(text string) (string, error) {
	if !IsBundle(text) {
		return text, nil
	}
	p, err := Decode(text)
	if err != nil {
		return "", err
	}
	return p.Entry(), nil
}

// WithEntry returns text with SKILL.md replaced by entry: entry itself
// when text is not a bundle, else the bundle with its other files kept.
// Rewrite-style updates, the slow-update block and the appendix, which
// produce or edit a whole SKILL.md, go through it so that they never
// touch the other files.
func WithEntry(text, entry string) (string, error) {
	if !IsBundle(text) {
		return entry, nil
	}
	p, err := Decode(text)
	if err != nil {
		return "", err
	}
	q := p.Clone()
	q.files[EntryFile] = entry
	return Encode(q), nil
}

// OnEntry applies f to SKILL.md of a skill carried as text: f(text) when
// it is not a bundle (byte for byte today's behaviour), else the bundle
// with SKILL.md replaced by f of it.
func OnEntry(text string, f func(string) string) (string, error) {
	if !IsBundle(text) {
		return f(text), nil
	}
	entry, err := EntryText(text)
	if err != nil {
		return "", err
	}
	return WithEntry(text, f(entry))
}
