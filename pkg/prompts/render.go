package prompts

import (
	"fmt"
	"strconv"
	"strings"
)

// Limits of the readable step buffer; the JSON payload always has the
// full text.
const (
	maxShownTaskIDs = 10
	maxShownText    = 200 // runes of one target, content or instruction
)

// metaSkillHeading and metaSkillNote introduce the meta skill in a user
// message.
const (
	metaSkillHeading = "## Optimizer meta skill (your notes from earlier epochs)"
	metaSkillNote    = "You wrote these notes at the end of earlier epochs about which kinds of change help on this task. Use them to guide your judgement. They are not part of the skill: never copy them into it."
)

// RenderMetaSkill returns the meta-skill block of a user message: a fixed
// heading, a usage note, and the content.
func RenderMetaSkill(content string) string {
	return metaSkillHeading + "\n\n" + metaSkillNote + "\n\n" + strings.TrimSpace(content) + "\n"
}

// RenderStepBuffer returns the step buffer as readable Markdown ("previous
// steps in this epoch"): per entry a header "Step N — ACTION (f/t failed)",
// one line per failure pattern with its count and task ids, and for a
// rejected step the score transition and the numbered rejected changes.
// It returns "" for an empty buffer.
func RenderStepBuffer(entries []BufferEntry) string {
	if len(entries) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("## Previous steps in this epoch\n\n")
	b.WriteString("These steps were evaluated earlier in this epoch. The changes listed under a rejected step did not beat the current skill on held-out tasks: do not propose them again.\n")
	for _, e := range entries {
		fmt.Fprintf(&b, "\nStep %d — %s (%d/%d failed)\n", e.Step, e.Action, e.NFail, e.NTotal)
		for _, p := range e.FailurePatterns {
			fmt.Fprintf(&b, "- %s: %d", oneLine(p.Pattern), p.Count)
			if len(p.TaskIDs) > 0 {
				b.WriteString(" (" + taskIDs(p.TaskIDs) + ")")
			}
			b.WriteString("\n")
		}
		switch {
		case e.EarlyStopped && e.ScoreAfter == nil:
			fmt.Fprintf(&b, "Score: %s → not higher (the candidate did not beat it; its evaluation may have stopped early)\n", score(e.ScoreBefore))
		case e.ScoreBefore != nil || e.ScoreAfter != nil:
			fmt.Fprintf(&b, "Score: %s → %s\n", score(e.ScoreBefore), score(e.ScoreAfter))
		}
		if len(e.RejectedEdits) > 0 {
			b.WriteString("Rejected changes:\n")
			for i, r := range e.RejectedEdits {
				fmt.Fprintf(&b, "%d. %s\n", i+1, rejected(r))
			}
		}
	}
	return b.String()
}

func taskIDs(ids []string) string {
	if len(ids) <= maxShownTaskIDs {
		return strings.Join(ids, ", ")
	}
	return strings.Join(ids[:maxShownTaskIDs], ", ") + fmt.Sprintf(", … +%d more", len(ids)-maxShownTaskIDs)
}

func score(p *float64) string {
	if p == nil {
		return "?"
	}
	return strconv.FormatFloat(*p, 'f', 3, 64)
}

// rejected renders one rejected change: an edit as [op] target="…" →
// "content", a suggestion as [type] "title": instruction, a skill
// candidate as [full rewrite] "title": changes.
func rejected(r RejectedEdit) string {
	q := func(s string) string { return `"` + oneLine(s) + `"` }
	switch {
	case r.Op != "":
		s := "[" + r.Op + "]"
		if r.File != "" && r.File != "SKILL.md" {
			s += " file=" + q(r.File)
		}
		if r.Target != "" {
			s += " target=" + q(r.Target)
		}
		if r.Content != "" {
			s += " → " + q(r.Content)
		}
		return s
	case r.Type != "":
		return "[" + r.Type + "] " + q(r.Title) + ": " + oneLine(r.Instruction)
	default:
		return "[full rewrite] " + q(r.Title) + ": " + oneLine(strings.Join(r.ChangeSummary, "; "))
	}
}

// oneLine shows line breaks as \n and cuts s to maxShownText runes.
func oneLine(s string) string {
	const limit = maxShownText
	s = strings.ReplaceAll(strings.TrimSpace(s), "\r\n", "\n")
	s = strings.ReplaceAll(s, "\n", `\n`)
	if r := []rune(s); len(r) > limit {
		return strings.TrimRight(string(r[:limit]), " ") + "…"
	}
	return s
}
