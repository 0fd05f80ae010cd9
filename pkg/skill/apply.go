package skill

import (
	"strings"
)

// Edit operations (SkillOpt's four).
const (
	OpAppend      = "append"
	OpInsertAfter = "insert_after"
	OpReplace     = "replace"
	OpDelete      = "delete"
)

// Edit is one patch-mode edit: an op, an exact target (unused by append)
// and a content (unused by delete).
type Edit struct {
	Op      string
	Target  string
	Content string
}

// Status is the outcome of applying one edit, as SkillOpt names it.
type Status string

// Statuses, exactly SkillOpt's (spec §1.4 ⑤).
const (
	AppliedAppend                        Status = "applied_append"
	AppliedAppendBeforeProtected         Status = "applied_append_before_protected_region"
	AppliedInsertAfter                   Status = "applied_insert_after"
	AppliedInsertAfterFallbackAppend     Status = "applied_insert_after_fallback_append"
	AppliedInsertAfterFallbackBeforeProt Status = "applied_insert_after_fallback_before_protected_region"
	AppliedReplace                       Status = "applied_replace"
	AppliedDelete                        Status = "applied_delete"
	SkippedProtectedRegion               Status = "skipped_protected_region"
	SkippedReplaceMissingTarget          Status = "skipped_replace_missing_target"
	SkippedReplaceTargetNotFound         Status = "skipped_replace_target_not_found"
	SkippedDeleteMissingTarget           Status = "skipped_delete_missing_target"
	SkippedDeleteTargetNotFound          Status = "skipped_delete_target_not_found"
	SkippedUnknownOp                     Status = "skipped_unknown_op"
	// StatusError is SkillOpt's status for an edit whose application
	// raised. Apply never returns it: an Edit's fields are typed strings,
	// so none of SkillOpt's failure causes can occur. It is kept so that
	// reports read back from SkillOpt runs parse.
	StatusError Status = "error"
)

// Applied reports whether the edit changed (or was meant to change) the
// text: every applied_* status.
func (s Status) Applied() bool { return strings.HasPrefix(string(s), "applied") }

// Skipped reports whether the edit was skipped: every skipped_* status.
func (s Status) Skipped() bool { return strings.HasPrefix(string(s), "skipped") }

// Report is one row of the edit-apply report (edit_apply_report.json).
type Report struct {
	Index int `json:"index"`
	// Op is the op applied: the edit's op, or its canonical name when
	// ApplyOptions.NormalizeOps mapped it.
	Op string `json:"op"`
	// NormalizedFrom is the edit's original op when it was mapped (fix
	// B15); empty otherwise.
	NormalizedFrom string `json:"normalized_from,omitempty"`
	// Target is the edit's target, first 200 code points.
	Target string `json:"target"`
	// ContentPreview is the sanitised content, first 200 code points.
	ContentPreview string `json:"content_preview"`
	Status         Status `json:"status"`
}

// Summary counts a report's rows.
type Summary struct {
	Applied int `json:"applied"`
	Skipped int `json:"skipped"`
	Errors  int `json:"errors"`
}

// Summarize counts applied, skipped and errored rows.
func Summarize(reports []Report) Summary {
	var s Summary
	for _, r := range reports {
		switch {
		case r.Status.Applied():
			s.Applied++
		case r.Status.Skipped():
			s.Skipped++
		default:
			s.Errors++
		}
	}
	return s
}

// ApplyOptions changes how [Apply] reads edits.
type ApplyOptions struct {
	// NormalizeOps matches op names case-insensitively and maps common
	// synonyms to the four ops (fix B15; see [NormalizeOp]). Off, Apply is
	// exactly SkillOpt: "ADD" or "add" is skipped_unknown_op. The trainer
	// turns it on by default.
	NormalizeOps bool
}

// opSynonyms maps normalised op spellings to the four ops.
var opSynonyms = map[string]string{
	"append": OpAppend, "add": OpAppend, "insert": OpAppend, "append_rule": OpAppend,
	"add_rule": OpAppend, "add_section": OpAppend, "append_section": OpAppend,
	"new": OpAppend, "create": OpAppend,

	"insert_after": OpInsertAfter, "after": OpInsertAfter, "insertafter": OpInsertAfter,
	"add_after": OpInsertAfter, "append_after": OpInsertAfter, "insert_below": OpInsertAfter,

	"replace": OpReplace, "update": OpReplace, "modify": OpReplace, "edit": OpReplace,
	"rewrite": OpReplace, "change": OpReplace, "substitute": OpReplace, "revise": OpReplace,
	"replace_rule": OpReplace, "update_rule": OpReplace, "modify_rule": OpReplace,
	"edit_rule": OpReplace,

	"delete": OpDelete, "remove": OpDelete, "drop": OpDelete, "del": OpDelete,
	"erase": OpDelete, "remove_rule": OpDelete, "delete_rule": OpDelete,
}

var opSeparators = strings.NewReplacer("-", "_", " ", "_")

// NormalizeOp maps an op name to one of the four ops: trimmed,
// lower-cased, '-' and ' ' read as '_', then synonyms (add, insert,
// append_rule, new, create → append; after, add_after → insert_after;
// update, modify, edit, rewrite, change, revise → replace; remove, drop,
// del, erase → delete). It reports false for an unknown name.
func NormalizeOp(op string) (string, bool) {
	k := strings.ToLower(strings.TrimSpace(op))
	k = opSeparators.Replace(k)
	canon, ok := opSynonyms[k]
	return canon, ok
}

// Apply applies edits to skill one after the other, each seeing the text
// the previous one left, exactly as SkillOpt's apply_patch_with_report
// (spec §1.4 ⑤). Per edit:
//
//   - content is stripped (Python whitespace) and then the four protected
//     markers are removed from it; target is used verbatim;
//   - if target is non-empty and its first occurrence lies inside a
//     protected region (from the region's first start marker up to the end
//     of its first end marker), the edit is skipped_protected_region,
//     whatever its op;
//   - append: if a protected start marker exists, the text before the
//     earliest one is right-stripped and "\n\n" + content + "\n\n" goes
//     right before the marker (applied_append_before_protected_region);
//     otherwise the text becomes rstrip(skill) + "\n\n" + content + "\n"
//     (applied_append);
//   - insert_after: an empty or absent target falls back to append (the
//     _fallback_ statuses); otherwise, from the end of the target's first
//     occurrence, the next '\n' is found and "\n" + content + "\n" goes
//     right after it, or at the end of the text when there is none. A
//     target that ends with '\n' therefore inserts after the following
//     line, as in SkillOpt;
//   - replace and delete: an empty target is skipped_*_missing_target, an
//     absent one (exact, case-sensitive) skipped_*_target_not_found; else
//     the first occurrence is replaced by content, or removed (no
//     whitespace cleanup);
//   - any other op is skipped_unknown_op.
//
// It returns the new text and one report row per edit.
func Apply(skill string, edits []Edit, opts ApplyOptions) (string, []Report) {
	reports := make([]Report, len(edits))
	for i, e := range edits {
		op, from := e.Op, ""
		if opts.NormalizeOps {
			if canon, ok := NormalizeOp(op); ok && canon != op {
				op, from = canon, e.Op
			}
		}
		content := removeMarkers(pyStrip(e.Content))
		var st Status
		skill, st = applyOne(skill, op, e.Target, content)
		reports[i] = Report{
			Index:          i,
			Op:             op,
			NormalizedFrom: from,
			Target:         truncRunes(e.Target, 200),
			ContentPreview: truncRunes(content, 200),
			Status:         st,
		}
	}
	return skill, reports
}

func applyOne(skill, op, target, content string) (string, Status) {
	pos := -1
	if target != "" {
		pos = strings.Index(skill, target)
		if pos >= 0 && inProtected(skill, pos) {
			return skill, SkippedProtectedRegion
		}
	}
	switch op {
	case OpAppend:
		return appendContent(skill, content, AppliedAppendBeforeProtected, AppliedAppend)
	case OpInsertAfter:
		if pos < 0 {
			return appendContent(skill, content, AppliedInsertAfterFallbackBeforeProt, AppliedInsertAfterFallbackAppend)
		}
		end := pos + len(target)
		nl := strings.IndexByte(skill[end:], '\n')
		if nl < 0 {
			return skill + "\n" + content + "\n", AppliedInsertAfter
		}
		at := end + nl + 1
		return skill[:at] + "\n" + content + "\n" + skill[at:], AppliedInsertAfter
	case OpReplace:
		switch {
		case target == "":
			return skill, SkippedReplaceMissingTarget
		case pos < 0:
			return skill, SkippedReplaceTargetNotFound
		}
		return skill[:pos] + content + skill[pos+len(target):], AppliedReplace
	case OpDelete:
		switch {
		case target == "":
			return skill, SkippedDeleteMissingTarget
		case pos < 0:
			return skill, SkippedDeleteTargetNotFound
		}
		return skill[:pos] + skill[pos+len(target):], AppliedDelete
	}
	return skill, SkippedUnknownOp
}

// inProtected reports whether byte offset pos lies in a protected region:
// between the region's first start marker and the end of its first end
// marker.
func inProtected(skill string, pos int) bool {
	for _, r := range regions {
		s := strings.Index(skill, r.start)
		if s < 0 || pos < s {
			continue
		}
		e := strings.Index(skill, r.end)
		if e >= 0 && pos < e+len(r.end) {
			return true
		}
	}
	return false
}

// appendContent appends content before the earliest protected start
// marker, or at the end of the text when there is none.
func appendContent(skill, content string, before, atEnd Status) (string, Status) {
	at := -1
	for _, r := range regions {
		if i := strings.Index(skill, r.start); i >= 0 && (at < 0 || i < at) {
			at = i
		}
	}
	if at < 0 {
		return pyRStrip(skill) + "\n\n" + content + "\n", atEnd
	}
	return pyRStrip(skill[:at]) + "\n\n" + content + "\n\n" + skill[at:], before
}
