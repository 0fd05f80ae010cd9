package trainer

import (
	"strings"

	"github.com/skillfleet/skillfleet/pkg/prompts"
	"github.com/skillfleet/skillfleet/pkg/skill"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// Skill packages (pkg/skillpkg). The trainer carries a skill as text: a
// plain SKILL.md, or a package's bundle. A plain skill takes the
// single-file paths; what follows only changes a bundle's handling.

// applyEdits applies patch-mode items to the current skill: each item
// names its file (none = SKILL.md); refusals (an unsafe path, a binary
// blob, a broken bound, a script that fails its syntax check) are rows
// with a counted reason. A plain skill with SKILL.md-only text edits is
// skill.Apply, byte for byte. A bundle that does not decode is an error.
// With trainDescription, set_description items replace SKILL.md's
// front-matter description (bounded); without, they are refused
// (description_off).
func applyEdits(current string, items []prompts.Item, normalize, trainDescription bool) (string, []skillpkg.Report, error) {
	edits := make([]skillpkg.Edit, len(items))
	for i, it := range items {
		edits[i] = skillpkg.Edit{File: it.File, Op: it.Op, Target: it.Target, Content: it.Content}
	}
	return skillpkg.ApplyText(current, edits, skillpkg.ApplyOptions{
		Text: skill.ApplyOptions{NormalizeOps: normalize}, Check: skillpkg.CheckSyntax, TrainDescription: trainDescription})
}

// editReports is what edit_apply_report.json holds: the single-file rows
// for a plain skill (unchanged), the package rows (with file and refusal
// reason) when the skill is, or becomes, a package.
func editReports(current, candidate string, rows []skillpkg.Report) any {
	if skillpkg.IsBundle(current) || skillpkg.IsBundle(candidate) {
		return rows
	}
	return skillpkg.SkillReports(rows)
}

// onEntry applies f to the skill's SKILL.md: f(s) for a plain skill; for a
// bundle, the other files stay as they are. The trainer's own bundles
// always decode (each was decoded when its edits were applied); one that
// does not is left unchanged.
func onEntry(s string, f func(string) string) string {
	out, err := skillpkg.OnEntry(s, f)
	if err != nil {
		return s
	}
	return out
}

// entryOf returns the skill's SKILL.md (the skill itself when plain).
func entryOf(s string) string {
	e, err := skillpkg.EntryText(s)
	if err != nil {
		return s
	}
	return e
}

// rewritten turns a rewrite's new text into the candidate: the text with
// current's protected regions restored, as before, for a plain skill; for
// a package, the new text replaces SKILL.md only (a rewrite that sends a
// whole bundle back gives its SKILL.md), and the other files are kept.
// ok is false when a bundle sent back does not decode.
func rewritten(newSkill, current string) (string, bool) {
	newSkill = strings.TrimRight(newSkill, " \t\r\n") + "\n"
	if !skillpkg.IsBundle(current) {
		return restoreProtected(newSkill, current), true
	}
	if skillpkg.IsBundle(newSkill) {
		e, err := skillpkg.EntryText(newSkill)
		if err != nil {
			return "", false
		}
		newSkill = e
	}
	out, err := skillpkg.WithEntry(current, restoreProtected(newSkill, entryOf(current)))
	return out, err == nil
}

// writeBest writes best_skill.md and, for a package, best_skill/ as a
// ready-to-install skill directory (replaced whole, atomically).
func (t *Trainer) writeBest() {
	t.rd.WriteFile("best_skill.md", t.st.Best)
	if t.s.RunDir == "" || !skillpkg.IsBundle(t.st.Best) {
		return
	}
	if _, err := skillpkg.WriteBest(t.s.RunDir, t.st.Best); err != nil {
		t.log.Error("cannot write the best skill package", "dir", skillpkg.BestDir, "err", err)
	}
}
