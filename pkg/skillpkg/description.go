package skillpkg

import (
	"strings"
	"unicode/utf8"

	"gopkg.in/yaml.v3"

	"github.com/skillfleet/skillfleet/pkg/skill"
)

// OpSetDescription replaces the description in SKILL.md's front matter
// with Edit.Content. The description is what an agent reads to decide
// whether to load the skill at all, so it is trained only when
// ApplyOptions.TrainDescription is set (config train_description: true);
// otherwise the edit is refused with [ReasonDescriptionOff].
const OpSetDescription = "set_description"

// AppliedSetDescription is the status of an applied set_description.
const AppliedSetDescription skill.Status = "applied_set_description"

// DefaultMaxDescription bounds a trained description, in characters: the
// Agent Skills format's limit for the field.
const DefaultMaxDescription = 1024

// setDescription returns entry with its front matter's description set
// to desc, the other front-matter lines and the body kept byte for byte.
// desc must be one line of at most max characters, not blank; entry must
// have a front matter that parses. The new line is written as YAML
// renders the value (quoted when it must be), and read back to check.
func setDescription(entry, desc string, limit int) (string, error) {
	switch {
	case strings.TrimSpace(desc) == "":
		return "", refuse(ReasonBadDescription, EntryFile, "the new description is empty")
	case strings.ContainsAny(desc, "\r\n"):
		return "", refuse(ReasonBadDescription, EntryFile, "the new description spans several lines; give one line")
	case utf8.RuneCountInString(desc) > limit:
		return "", refuse(ReasonBadDescription, EntryFile, "the new description has %d characters, over the bound of %d", utf8.RuneCountInString(desc), limit)
	}
	desc = strings.TrimSpace(desc)
	if _, err := ParseFrontMatter(entry); err != nil {
		return "", err
	}
	rest, ok := strings.CutPrefix(entry, "---\n")
	if !ok {
		return "", refuse(ReasonBadDescription, EntryFile, "SKILL.md has no front matter (a first line ---) to hold a description")
	}
	lines := strings.SplitAfter(rest, "\n")
	end := -1
	for i, l := range lines {
		if strings.TrimRight(l, "\r\n") == "---" {
			end = i
			break
		}
	}
	if end < 0 {
		return "", refuse(ReasonFrontMatter, EntryFile, "front matter opened with --- is never closed")
	}
	b, err := yaml.Marshal(map[string]string{"description": desc})
	if err != nil {
		return "", refuse(ReasonBadDescription, EntryFile, "%v", err)
	}
	newLine := string(b)
	fm := lines[:end]
	var out []string
	replaced := false
	for i := 0; i < len(fm); i++ {
		l := fm[i]
		if !replaced && strings.HasPrefix(l, "description:") {
			out = append(out, newLine)
			replaced = true
			// Drop the old value's continuation lines (indented, or blank
			// inside a block scalar).
			for i+1 < len(fm) && (strings.HasPrefix(fm[i+1], " ") || strings.HasPrefix(fm[i+1], "\t") || strings.TrimSpace(fm[i+1]) == "") {
				i++
			}
			continue
		}
		out = append(out, l)
	}
	if !replaced {
		out = append(out, newLine)
	}
	text := "---\n" + strings.Join(out, "") + strings.Join(lines[end:], "")
	got, err := ParseFrontMatter(text)
	if err != nil || got.Description != desc {
		return "", refuse(ReasonBadDescription, EntryFile, "the front matter does not read back the new description")
	}
	return text, nil
}
