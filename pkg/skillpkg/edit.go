package skillpkg

import (
	"cmp"
	"errors"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/skill"
)

// File operations, besides the four text operations of [skill.Apply].
const (
	OpCreateFile = "create_file"
	OpRemoveFile = "remove_file"
)

// Edit is one package edit: a text edit (append, insert_after, replace,
// delete) on the file File names, or a file operation. An empty File is
// SKILL.md, so today's edits are package edits unchanged. create_file
// makes File with Content as its text (used verbatim); remove_file removes
// File.
type Edit struct {
	File    string `json:"file,omitempty"`
	Op      string `json:"op"`
	Target  string `json:"target,omitempty"`
	Content string `json:"content,omitempty"`
}

// Statuses of the file operations. Text edits keep [skill.Apply]'s.
const (
	AppliedCreateFile skill.Status = "applied_create_file"
	AppliedRemoveFile skill.Status = "applied_remove_file"
)

// RefusedStatus is the status of an edit refused for r: "refused_" + r.
// It is neither Applied nor Skipped.
func RefusedStatus(r Reason) skill.Status { return skill.Status("refused_" + string(r)) }

// Report is one row of a package edit-apply report: the [skill.Report] row
// plus the file the edit named and, when refused, why.
type Report struct {
	skill.Report
	File   string `json:"file"`
	Reason Reason `json:"refused,omitempty"`
	Detail string `json:"refused_detail,omitempty"`
}

// Summary counts a package report's rows.
type Summary struct {
	Applied int            `json:"applied"`
	Skipped int            `json:"skipped"`
	Refused int            `json:"refused"`
	Reasons map[Reason]int `json:"refused_by_reason,omitempty"`
	// Files lists the files at least one applied edit changed, in order
	// of first change.
	Files []string `json:"files,omitempty"`
}

// Summarize counts applied, skipped and refused rows, refusals by reason.
func Summarize(reports []Report) Summary {
	var s Summary
	seen := map[string]bool{}
	for _, r := range reports {
		switch {
		case r.Reason != "":
			s.Refused++
			if s.Reasons == nil {
				s.Reasons = map[Reason]int{}
			}
			s.Reasons[r.Reason]++
		case r.Status.Applied():
			s.Applied++
			if !seen[r.File] {
				seen[r.File] = true
				s.Files = append(s.Files, r.File)
			}
		default:
			s.Skipped++
		}
	}
	return s
}

// SyntaxChecker checks a script's text after an edit; a non-nil error
// refuses the edit with [ReasonScriptSyntax]. See [CheckSyntax].
type SyntaxChecker func(name, text string) error

// ApplyOptions changes how [Apply] applies edits.
type ApplyOptions struct {
	// Text is passed to [skill.Apply] for text edits.
	Text skill.ApplyOptions
	// Limits bound the package after every edit; zero fields are
	// [DefaultLimits].
	Limits Limits
	// Check, when set, checks every file under scripts/ that an edit
	// changed or created.
	Check SyntaxChecker
	// TrainDescription lets set_description edits change SKILL.md's
	// front-matter description; without it they are refused
	// ([ReasonDescriptionOff]).
	TrainDescription bool
	// MaxDescription bounds a new description in characters (0 =
	// [DefaultMaxDescription]).
	MaxDescription int
}

// fileOp returns the file operation op names, if any. With normalize,
// case, '-' and ' ' are forgiven and add_file/new_file/delete_file read as
// the two.
func fileOp(op string, normalize bool) (string, bool) {
	if op == OpCreateFile || op == OpRemoveFile || op == OpSetDescription {
		return op, true
	}
	if !normalize {
		return "", false
	}
	k := strings.ToLower(strings.TrimSpace(op))
	k = strings.NewReplacer("-", "_", " ", "_").Replace(k)
	switch k {
	case OpCreateFile, "add_file", "new_file", "write_file":
		return OpCreateFile, true
	case OpRemoveFile, "delete_file", "rm_file":
		return OpRemoveFile, true
	case OpSetDescription, "update_description", "edit_description", "replace_description":
		return OpSetDescription, true
	}
	return "", false
}

// Apply applies edits to a copy of p one after the other, each seeing the
// package the previous one left; p is not changed. A text edit on a file
// is exactly [skill.Apply] of that one edit on the file's text, so on a
// single-file package with no File fields the SKILL.md text and the
// statuses are those of skill.Apply on the text.
//
// An edit is refused, and the package left as it was before it, when its
// file path is unsafe ([CheckPath]), its content is binary, it names a
// file the package lacks (or, for create_file, one it has), it would
// remove SKILL.md, the package after it breaks opts.Limits, or a changed
// script fails opts.Check. Each refusal is a row with its [Reason].
func Apply(p *Package, edits []Edit, opts ApplyOptions) (*Package, []Report) {
	lim := opts.Limits.resolved()
	q := p.Clone()
	reports := make([]Report, len(edits))
	for i, e := range edits {
		name := e.File
		if name == "" {
			name = EntryFile
		}
		row := Report{File: name}
		row.Index = i
		row.Op = e.Op
		row.Target = truncRunes(e.Target, 200)
		row.ContentPreview = truncRunes(e.Content, 200)
		err := applyEdit(q, name, e, opts, lim, &row)
		if err != nil {
			var re *RefusalError
			if !errors.As(err, &re) {
				re = &RefusalError{Reason: ReasonBadPath, Path: name, Detail: err.Error()}
			}
			row.Reason, row.Detail = re.Reason, re.Detail
			row.Status = RefusedStatus(re.Reason)
		}
		reports[i] = row
	}
	return q, reports
}

// applyEdit applies one edit to q in place, restoring q on refusal.
func applyEdit(q *Package, name string, e Edit, opts ApplyOptions, lim Limits, row *Report) error {
	if err := CheckPath(name); err != nil {
		return err
	}
	if err := CheckText(name, e.Content); err != nil {
		return err
	}
	if err := CheckText(name, e.Target); err != nil {
		return err
	}
	old, had := q.files[name]
	oldExec := q.exec[name]
	restore := func() {
		if had {
			q.files[name], q.exec[name] = old, oldExec
		} else {
			delete(q.files, name)
			delete(q.exec, name)
		}
	}
	if op, ok := fileOp(e.Op, opts.Text.NormalizeOps); ok {
		if op != e.Op {
			row.Op, row.NormalizedFrom = op, e.Op
		}
		switch op {
		case OpCreateFile:
			if had {
				return refuse(ReasonFileExists, name, "create_file of a file the package has; edit it instead")
			}
			q.files[name], q.exec[name] = e.Content, isScript(name)
			row.Status = AppliedCreateFile
		case OpRemoveFile:
			if name == EntryFile {
				return refuse(ReasonEntryFile, name, "SKILL.md cannot be removed")
			}
			if !had {
				return refuse(ReasonNoSuchFile, name, "remove_file of a file the package lacks")
			}
			delete(q.files, name)
			delete(q.exec, name)
			row.Status = AppliedRemoveFile
			return nil
		case OpSetDescription:
			if !opts.TrainDescription {
				return refuse(ReasonDescriptionOff, name, "the description is not trained (set train_description: true to train it)")
			}
			if name != EntryFile {
				return refuse(ReasonBadDescription, name, "set_description edits SKILL.md's front matter, not another file")
			}
			text, err := setDescription(old, e.Content, cmp.Or(opts.MaxDescription, DefaultMaxDescription))
			if err != nil {
				return err
			}
			q.files[name] = text
			row.Status = AppliedSetDescription
		}
	} else {
		if !had {
			return refuse(ReasonNoSuchFile, name, "the package has no such file; create it with create_file")
		}
		text, reps := skill.Apply(old, []skill.Edit{{Op: e.Op, Target: e.Target, Content: e.Content}}, opts.Text)
		r := reps[0]
		r.Index = row.Index
		row.Report = r
		if !r.Status.Applied() {
			return nil
		}
		q.files[name] = text
	}
	if err := q.checkBounds(lim, name); err != nil {
		restore()
		return err
	}
	if opts.Check != nil && isScript(name) {
		if err := opts.Check(name, q.files[name]); err != nil {
			restore()
			var re *RefusalError
			if errors.As(err, &re) {
				return re
			}
			return refuse(ReasonScriptSyntax, name, "%v", err)
		}
	}
	return nil
}

// truncRunes returns the first n code points of s.
func truncRunes(s string, n int) string {
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}
