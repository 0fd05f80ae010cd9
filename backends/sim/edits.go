package sim

import (
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// Markers of the skill's protected regions; the sim never edits inside them.
var protectedMarkers = []string{"<!-- SLOW_UPDATE_START -->", "<!-- APPENDIX_START -->"}

// splitProtected splits a skill into its editable head and the rest, which
// starts at the first protected-region marker ("" when there is none).
func splitProtected(skill string) (head, rest string) {
	at := len(skill)
	for _, m := range protectedMarkers {
		if i := strings.Index(skill, m); i >= 0 && i < at {
			at = i
		}
	}
	return skill[:at], skill[at:]
}

// editableLines returns the lines of the skill's editable part.
func editableLines(skill string) []string {
	head, _ := splitProtected(skill)
	return strings.Split(head, "\n")
}

// Keys that say what an edit or a line is about, for de-duplication:
// "rule:ID" states the rule of pitfall ID, "harm:ID" its harmful rule.
func ruleKey(text string) string {
	if text == "" {
		return ""
	}
	v := simbench.ViewSkill(text)
	for _, p := range simbench.Catalogue() {
		if v.Broken(p.ID) {
			return "harm:" + p.ID
		}
	}
	for _, p := range simbench.Catalogue() {
		if v.Covered(p.ID) {
			return "rule:" + p.ID
		}
	}
	return ""
}

// bulletText strips a list marker and surrounding space from a line.
func bulletText(line string) string {
	s := strings.TrimSpace(line)
	for _, p := range []string{"- ", "* ", "+ "} {
		if strings.HasPrefix(s, p) {
			return strings.TrimSpace(s[len(p):])
		}
	}
	return s
}

// applyEdits applies patch-mode edits the way the prompts describe them,
// in order, never inside a protected region: append adds a paragraph at
// the end of the editable text; insert_after adds lines after the line
// holding target (else appends); replace and delete change the first
// occurrence of target and are skipped when it is missing. It is the
// sim's own simple patcher, used to build rewrite and full-rewrite replies.
func applyEdits(skill string, edits []prompts.Item) string {
	for _, e := range edits {
		head, rest := splitProtected(skill)
		content := strings.TrimSpace(e.Content)
		switch strings.ToLower(strings.TrimSpace(e.Op)) {
		case "append", "add":
			if content != "" {
				head = appendText(head, content)
			}
		case "insert_after":
			if content == "" {
				continue
			}
			at := -1
			if e.Target != "" {
				at = strings.Index(head, e.Target)
			}
			if at < 0 {
				head = appendText(head, content)
				break
			}
			end := strings.IndexByte(head[at:], '\n')
			if end < 0 {
				head = head + "\n" + content + "\n"
			} else {
				end += at
				head = head[:end+1] + content + "\n" + head[end+1:]
			}
		case "replace":
			if e.Target != "" && strings.Contains(head, e.Target) {
				head = strings.Replace(head, e.Target, content, 1)
			}
		case "delete", "remove":
			if e.Target != "" && strings.Contains(head, e.Target) {
				head = dropEmptyLines(strings.Replace(head, e.Target, "", 1))
			}
		}
		if rest != "" && !strings.HasSuffix(head, "\n\n") {
			head = strings.TrimRight(head, "\n") + "\n\n"
		}
		skill = head + rest
	}
	return skill
}

// appendText adds text as a new paragraph line at the end of head,
// keeping a list a list when both end and start with a bullet.
func appendText(head, text string) string {
	trimmed := strings.TrimRight(head, "\n")
	if trimmed == "" {
		return text + "\n"
	}
	lines := strings.Split(trimmed, "\n")
	last := strings.TrimSpace(lines[len(lines)-1])
	sep := "\n\n"
	if strings.HasPrefix(last, "- ") && strings.HasPrefix(text, "- ") {
		sep = "\n"
	}
	return trimmed + sep + text + "\n"
}

// dropEmptyLines removes list items left empty by a deletion and runs of
// blank lines.
func dropEmptyLines(s string) string {
	lines := strings.Split(s, "\n")
	out := lines[:0]
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "-" || t == "*" || t == "+" {
			continue
		}
		if t == "" && len(out) > 0 && strings.TrimSpace(out[len(out)-1]) == "" {
			continue
		}
		out = append(out, l)
	}
	return strings.Join(out, "\n")
}
