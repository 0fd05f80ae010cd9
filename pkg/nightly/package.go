package nightly

import (
	"errors"
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/skill"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// A night may train a skill package (a directory in the Agent Skills
// layout: SKILL.md, references/, scripts/) instead of one SKILL.md. The
// night carries it as its bundle (pkg/skillpkg), the text the trainer
// carries a package as. Its edits are the learned-block edits of
// SKILL.md, as for a single file, plus file edits that create or append
// a reference file (references/<topic>.md) within skillpkg's bounds.
// Everything else is refused with a counted reason; SKILL.md outside the
// learned block and the other files' existing text are never changed.

// Reasons a night refuses an edit, besides skillpkg's ([skillpkg.Reason]:
// path_escape, absolute_path, bad_path, binary, file_too_large,
// too_many_files, total_too_large, file_exists, no_such_file).
const (
	// RefuseNotAPackage: a file edit on a single-file skill or on the
	// memory file, which have no other files.
	RefuseNotAPackage = "not_a_package"
	// RefuseNotAReference: a file edit outside references/ (a night
	// never writes scripts, which are code the agent runs, nor other
	// files).
	RefuseNotAReference = "not_a_reference"
	// RefuseFileOp: a file edit whose op is neither create_file nor
	// append.
	RefuseFileOp = "file_op"
	// RefuseMarker: content that holds a SKILLFLEET-SLEEP marker.
	RefuseMarker = "marker"
	// RefuseSecret: content that holds a secret-shaped string.
	RefuseSecret = "secret"
)

// File operations of a night's file edits.
const (
	FileOpCreate = skillpkg.OpCreateFile
	FileOpAppend = skill.OpAppend
)

// referencesDir is the only part of a package a night's file edits
// touch.
const referencesDir = "references/"

// Refusal is an edit a night refused, and why.
type Refusal struct {
	Document string `json:"document"`
	Edit     Edit   `json:"edit"`
	Reason   string `json:"reason"`
	Detail   string `json:"detail,omitempty"`
}

// IsFileEdit reports whether ed edits a package file other than SKILL.md
// (its learned block is edited by edits without a file).
func IsFileEdit(ed Edit) bool {
	return ed.File != "" && ed.File != skillpkg.EntryFile
}

// fileOp returns the file operation ed names: create_file or append,
// forgiving case, '-' and ' ', and "create" for create_file.
func fileOp(op string) (string, bool) {
	k := strings.ToLower(strings.TrimSpace(op))
	k = strings.NewReplacer("-", "_", " ", "_").Replace(k)
	switch k {
	case FileOpCreate, "create", "new_file", "add_file":
		return FileOpCreate, true
	case FileOpAppend:
		return FileOpAppend, true
	}
	return "", false
}

// ApplyDocEdits applies a night's edits to one document, one after the
// other: the skill (a bundle, with pkg) or the memory file. An edit
// without a file (or naming SKILL.md) is a learned-block edit of the
// document's SKILL.md, exactly [ApplyEdits]; with pkg, an edit naming
// references/<file> creates or appends that file through
// [skillpkg.Apply] within lim. A document that is not a package (pkg
// false) with no file edit is ApplyEdits of it, byte for byte.
//
// It returns the new document, the edits that changed it, those that
// matched nothing (with why) and those refused (with a reason).
func ApplyDocEdits(document, doc string, edits []Edit, pkg bool, lim skillpkg.Limits) (string, []Edit, []Unmatched, []Refusal, error) {
	anyFile := false
	for _, ed := range edits {
		anyFile = anyFile || IsFileEdit(ed)
	}
	if !pkg && !anyFile {
		out, applied, unmatched, err := ApplyEdits(doc, edits)
		return out, applied, unmatched, nil, err
	}
	var (
		applied   []Edit
		unmatched []Unmatched
		refused   []Refusal
	)
	refuse := func(ed Edit, reason, format string, args ...any) {
		// The refused content is shown clipped and redacted: it may be
		// large, binary or hold a secret.
		ed.Content = Redact(strings.ToValidUTF8(strings.ReplaceAll(clip(ed.Content, 200), "\x00", "\\0"), "?"))
		refused = append(refused, Refusal{Document: document, Edit: ed, Reason: reason, Detail: Redact(fmt.Sprintf(format, args...))})
	}
	for _, ed := range edits {
		if !IsFileEdit(ed) {
			var (
				a   []Edit
				u   []Unmatched
				err error
			)
			if pkg {
				doc, a, u, err = onEntry(doc, func(entry string) (string, []Edit, []Unmatched, error) { return ApplyEdits(entry, []Edit{ed}) })
			} else {
				doc, a, u, err = ApplyEdits(doc, []Edit{ed})
			}
			if err != nil {
				return doc, applied, unmatched, refused, err
			}
			applied, unmatched = append(applied, a...), append(unmatched, u...)
			continue
		}
		if !pkg {
			refuse(ed, RefuseNotAPackage, "the %s is one file; %s cannot be edited", document, ed.File)
			continue
		}
		op, ok := fileOp(ed.Op)
		if !ok {
			refuse(ed, RefuseFileOp, "op %q on %s: a night only creates (create_file) or appends to (append) reference files", ed.Op, ed.File)
			continue
		}
		if err := skillpkg.CheckPath(ed.File); err != nil {
			var re *skillpkg.RefusalError
			if errors.As(err, &re) {
				refuse(ed, string(re.Reason), "%s", re.Detail)
			} else {
				refuse(ed, string(skillpkg.ReasonBadPath), "%v", err)
			}
			continue
		}
		if !strings.HasPrefix(ed.File, referencesDir) {
			refuse(ed, RefuseNotAReference, "%s is not under %s; a night only writes reference files", ed.File, referencesDir)
			continue
		}
		if strings.Contains(ed.Content, "SKILLFLEET-SLEEP:") {
			refuse(ed, RefuseMarker, "the content holds a SKILLFLEET-SLEEP marker")
			continue
		}
		if ContainsSecret(ed.Content) {
			refuse(ed, RefuseSecret, "the content holds a secret-shaped string")
			continue
		}
		if strings.TrimSpace(ed.Content) == "" {
			unmatched = append(unmatched, Unmatched{Edit: ed, Reason: "empty content"})
			continue
		}
		p, err := skillpkg.Decode(doc)
		if err != nil {
			return doc, applied, unmatched, refused, fmt.Errorf("the %s package: %w", document, err)
		}
		content := ed.Content
		if op == FileOpCreate && !strings.HasSuffix(content, "\n") {
			content += "\n"
		}
		q, rows := skillpkg.Apply(p, []skillpkg.Edit{{File: ed.File, Op: op, Content: content}}, skillpkg.ApplyOptions{Limits: lim})
		row := rows[0]
		switch {
		case row.Reason != "":
			refuse(ed, string(row.Reason), "%s", row.Detail)
		case !row.Status.Applied():
			unmatched = append(unmatched, Unmatched{Edit: ed, Reason: string(row.Status)})
		default:
			doc = skillpkg.Encode(q)
			applied = append(applied, ed)
		}
	}
	return doc, applied, unmatched, refused, nil
}

// onEntry runs f on the SKILL.md of a skill carried as text (a bundle or
// a plain SKILL.md) and puts the result back ([skillpkg.OnEntry]); the
// other files are kept.
func onEntry(doc string, f func(string) (string, []Edit, []Unmatched, error)) (string, []Edit, []Unmatched, error) {
	var (
		applied   []Edit
		unmatched []Unmatched
		ferr      error
	)
	out, err := skillpkg.OnEntry(doc, func(entry string) string {
		next, a, u, err := f(entry)
		applied, unmatched, ferr = a, u, err
		if err != nil {
			return entry
		}
		return next
	})
	if ferr != nil {
		return doc, applied, unmatched, ferr
	}
	if err != nil {
		return doc, nil, nil, err
	}
	return out, applied, unmatched, nil
}

// SkillEntry returns the SKILL.md of a skill carried as text: the text
// itself unless it is a bundle (one that does not decode is returned as
// it is).
func SkillEntry(doc string) string {
	e, err := skillpkg.EntryText(doc)
	if err != nil {
		return doc
	}
	return e
}

// EnsureSkillBlock is [EnsureBlock] on the SKILL.md of a skill carried
// as text; a bundle keeps its other files.
func EnsureSkillBlock(doc string) (string, error) {
	out, _, _, err := onEntry(doc, func(entry string) (string, []Edit, []Unmatched, error) {
		e, err := EnsureBlock(entry, ScaffoldSkill)
		return e, nil, nil, err
	})
	return out, err
}

// ScaffoldPackage is the SKILL.md a night starts a package directory
// from when it does not exist yet (or is empty): the managed skill's
// scaffold, named after the directory.
func ScaffoldPackage(dir string) string {
	return strings.Replace(ScaffoldSkill(), "name: "+ManagedSkillName+"\n", "name: "+filepath.Base(dir)+"\n", 1)
}

// LivePackage is a live skill package as a night read it.
type LivePackage struct {
	// Dir is the live directory (absolute, symlinks resolved).
	Dir string
	// Text is the package's bundle, with a learned block in SKILL.md.
	Text string
	// Pins is every live file's sha256 (see [TreePins]); Existed says
	// whether Dir existed.
	Pins    map[string]string
	Existed bool
}

// ReadPackage reads the live skill package at dir with [skillpkg.Load]
// (bounds, refusals: a symlink, a hidden or binary file, a SKILL.md
// without a parsable front matter is an error naming it) and pins its
// files. A directory that does not exist, or is empty, starts from
// [ScaffoldPackage]. A file changed while it was read is an error.
func ReadPackage(dir string, lim skillpkg.Limits) (*LivePackage, error) {
	pins, existed, err := TreePins(dir)
	if err != nil {
		return nil, fmt.Errorf("skill package %s: %w", dir, err)
	}
	lp := &LivePackage{Dir: dir, Pins: pins, Existed: existed}
	var text string
	if len(pins) == 0 {
		text = ScaffoldPackage(dir)
	} else {
		p, err := skillpkg.Load(dir, lim)
		if err != nil {
			return nil, err
		}
		read := map[string]string{}
		for _, name := range p.Paths() {
			t, _ := p.File(name)
			read[name] = SHA256Hex([]byte(t))
		}
		if d := pinDiff(pins, read); d != "" {
			return nil, fmt.Errorf("skill package %s: %s while it was read; run the night again", dir, d)
		}
		text = skillpkg.Encode(p)
	}
	if lp.Text, err = EnsureSkillBlock(text); err != nil {
		return nil, fmt.Errorf("%s/SKILL.md: %w", dir, err)
	}
	return lp, nil
}

// PackageFiles lists the files whose text differs between two skills
// carried as text (bundles or plain SKILL.md texts), in path order,
// SKILL.md first: added, changed and removed files alike.
func PackageFiles(before, after string) []string {
	a, errA := skillpkg.Decode(before)
	b, errB := skillpkg.Decode(after)
	if errA != nil || errB != nil {
		if before != after {
			return []string{skillpkg.EntryFile}
		}
		return nil
	}
	var out []string
	seen := map[string]bool{}
	for _, p := range []*skillpkg.Package{b, a} {
		for _, name := range p.Paths() {
			if seen[name] {
				continue
			}
			seen[name] = true
			ta, okA := a.File(name)
			tb, okB := b.File(name)
			if okA != okB || ta != tb {
				out = append(out, name)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if (out[i] == skillpkg.EntryFile) != (out[j] == skillpkg.EntryFile) {
			return out[i] == skillpkg.EntryFile
		}
		return out[i] < out[j]
	})
	return out
}
