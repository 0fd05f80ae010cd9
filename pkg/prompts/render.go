package prompts

import (
	"strconv"
	"strings"
	"unicode/utf8"
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
		b.WriteString("\nStep ")
		b.WriteString(strconv.Itoa(e.Step))
		b.WriteString(" — ")
		b.WriteString(e.Action)
		b.WriteString(" (")
		b.WriteString(strconv.Itoa(e.NFail))
		b.WriteByte('/')
		b.WriteString(strconv.Itoa(e.NTotal))
		b.WriteString(" failed)\n")
		for _, p := range e.FailurePatterns {
			b.WriteString("- ")
			b.WriteString(oneLine(p.Pattern))
			b.WriteString(": ")
			b.WriteString(strconv.Itoa(p.Count))
			if len(p.TaskIDs) > 0 {
				b.WriteString(" (")
				writeTaskIDs(&b, p.TaskIDs)
				b.WriteByte(')')
			}
			b.WriteByte('\n')
		}
		switch {
		case e.EarlyStopped && e.ScoreAfter == nil:
			b.WriteString("Score: " + score(e.ScoreBefore) + " → not higher (the candidate did not beat it; its evaluation may have stopped early)\n")
		case e.ScoreBefore != nil || e.ScoreAfter != nil:
			b.WriteString("Score: " + score(e.ScoreBefore) + " → " + score(e.ScoreAfter) + "\n")
		}
		if len(e.RejectedEdits) > 0 {
			b.WriteString("Rejected changes:\n")
			for i, r := range e.RejectedEdits {
				b.WriteString(strconv.Itoa(i + 1))
				b.WriteString(". ")
				b.WriteString(rejected(r))
				b.WriteByte('\n')
			}
		}
	}
	return b.String()
}

// writeTaskIDs writes the first maxShownTaskIDs ids, and how many more
// there are.
func writeTaskIDs(b *strings.Builder, ids []string) {
	for i, id := range ids[:min(len(ids), maxShownTaskIDs)] {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(id)
	}
	if len(ids) > maxShownTaskIDs {
		b.WriteString(", … +")
		b.WriteString(strconv.Itoa(len(ids) - maxShownTaskIDs))
		b.WriteString(" more")
	}
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
	s = strings.TrimSpace(s)
	if strings.IndexByte(s, '\n') >= 0 {
		s = strings.ReplaceAll(s, "\r\n", "\n")
		s = strings.ReplaceAll(s, "\n", `\n`)
	}
	if len(s) <= limit || utf8.RuneCountInString(s) <= limit {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:limit]), " ") + "…"
}
