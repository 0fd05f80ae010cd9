// Package skill is the skill document model: its content hash, SkillOpt's
// edit operations with their exact application statuses (spec §1.4 ⑤), the
// two protected regions (the slow-update guidance and the execution-notes
// appendix, spec §1.8 and §1.10) and a readable line diff.
//
// Everything here is pure text processing; nothing does I/O. Texts are Go
// strings holding UTF-8, and positions and lengths that SkillOpt counts in
// code points (report truncation) are counted in runes.
package skill

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"unicode"
	"unsafe"

	"golang.org/x/text/cases"
)

// Protected-region markers. Text between a start marker and its end marker
// is owned by the trainer: step edits may not target it, and every update
// mode keeps it (fix B14).
const (
	SlowStart     = "<!-- SLOW_UPDATE_START -->"
	SlowEnd       = "<!-- SLOW_UPDATE_END -->"
	AppendixStart = "<!-- APPENDIX_START -->"
	AppendixEnd   = "<!-- APPENDIX_END -->"
	// AppendixHeading is the first line inside the appendix region.
	AppendixHeading = "## Execution Notes Appendix"
)

// Region names, as reported by [RestoreProtected].
const (
	RegionSlowUpdate = "slow_update"
	RegionAppendix   = "appendix"
)

type region struct{ name, start, end string }

// regions in canonical order: slow update, then appendix.
var regions = [2]region{
	{RegionSlowUpdate, SlowStart, SlowEnd},
	{RegionAppendix, AppendixStart, AppendixEnd},
}

// markers are the four protected markers, removed from edit contents.
var markers = [4]string{SlowStart, SlowEnd, AppendixStart, AppendixEnd}

// Hash returns the skill's cache key: the first 16 hex characters of the
// SHA-256 of its UTF-8 text.
func Hash(text string) string {
	// Hash the string's bytes in place: Sum256 only reads them, and a
	// []byte(text) copy costs as much as the hashing on a 4 KB skill.
	sum := sha256.Sum256(unsafe.Slice(unsafe.StringData(text), len(text)))
	return hex.EncodeToString(sum[:8])
}

// isPySpace reports whether Python's str.isspace holds for r: Go's
// unicode.IsSpace plus the separators U+001C..U+001F.
func isPySpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// pyStrip is Python's str.strip().
func pyStrip(s string) string { return strings.TrimFunc(s, isPySpace) }

// pyRStrip is Python's str.rstrip().
func pyRStrip(s string) string { return strings.TrimRightFunc(s, isPySpace) }

// truncRunes returns the first n code points of s (Python's s[:n]).
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

// removeMarkers deletes every protected marker from s.
func removeMarkers(s string) string {
	if !strings.Contains(s, "<!-- ") {
		return s
	}
	for _, m := range markers {
		s = strings.ReplaceAll(s, m, "")
	}
	return s
}

// blockSpan returns the byte span [lo, hi) of the first block of a region
// in s: a start marker through the first end marker after it.
func blockSpan(s string, r region) (lo, hi int, ok bool) {
	lo = strings.Index(s, r.start)
	if lo < 0 {
		return 0, 0, false
	}
	e := strings.Index(s[lo+len(r.start):], r.end)
	if e < 0 {
		return 0, 0, false
	}
	return lo, lo + len(r.start) + e + len(r.end), true
}

// removeBlocks deletes every block of a region (start marker through the
// first end marker after it), leaving the surrounding text as it is: the
// regular expression START.*?END with DOTALL, replaced by "".
func removeBlocks(s string, r region) string {
	for {
		lo, hi, ok := blockSpan(s, r)
		if !ok {
			return s
		}
		s = s[:lo] + s[hi:]
	}
}

// cutBlocks deletes every block of a region and then any stray marker of
// it, joining the text around each cut with one blank line; a cut at the
// end leaves one final newline, a cut at the start none.
func cutBlocks(s string, r region) string {
	join := func(before, after string) string {
		before = strings.TrimRight(before, "\n")
		after = strings.TrimLeft(after, "\n")
		switch {
		case before == "":
			return after
		case after == "":
			return before + "\n"
		}
		return before + "\n\n" + after
	}
	for {
		lo, hi, ok := blockSpan(s, r)
		if !ok {
			break
		}
		s = join(s[:lo], s[hi:])
	}
	for _, m := range [2]string{r.start, r.end} {
		for {
			i := strings.Index(s, m)
			if i < 0 {
				break
			}
			s = join(s[:i], s[i+len(m):])
		}
	}
	return s
}

// appendBlock returns s right-stripped, a blank line, then block and a
// final newline.
func appendBlock(s, block string) string {
	return pyRStrip(s) + "\n\n" + block + "\n"
}

// renderBlock returns a region's block with body on the lines between the
// markers (no line at all for an empty body).
func renderBlock(r region, body string) string {
	if body == "" {
		return r.start + "\n" + r.end
	}
	return r.start + "\n" + body + "\n" + r.end
}

// StripProtected returns the skill without its protected regions: every
// slow-update and appendix block is cut out, with the text around each cut
// joined by one blank line. Stray unpaired markers are removed too.
func StripProtected(skill string) string {
	for _, r := range regions {
		skill = cutBlocks(skill, r)
	}
	return skill
}

// InjectSlowPlaceholder adds the empty slow-update block of epoch 1 (spec
// §1.8): the skill right-stripped, then
// "\n\n<!-- SLOW_UPDATE_START -->\n<!-- SLOW_UPDATE_END -->\n". A skill
// that already has a slow-update start marker is returned unchanged.
func InjectSlowPlaceholder(skill string) string {
	if strings.Contains(skill, SlowStart) {
		return skill
	}
	return appendBlock(skill, renderBlock(regions[0], ""))
}

// SlowContent returns the current slow-update guidance: the text of the
// first slow-update block, stripped; "" when there is none.
func SlowContent(skill string) string {
	lo, hi, ok := blockSpan(skill, regions[0])
	if !ok {
		return ""
	}
	return pyStrip(skill[lo+len(SlowStart) : hi-len(SlowEnd)])
}

// ReplaceSlowBlock returns SkillOpt's slow-update candidate (spec §1.8 step
// 6). The text that results is exactly:
//
//  1. every slow-update block (start marker through the first end marker
//     after it) deleted, the text around it left as it was;
//  2. every run of three or more newlines in the whole document collapsed
//     to two (SkillOpt does this too; bug B14 notes it);
//  3. the result right-stripped, then "\n\n", the start marker, "\n", the
//     content stripped, "\n", the end marker and "\n" (an empty content
//     gives the placeholder block, start marker "\n" end marker).
func ReplaceSlowBlock(skill, content string) string {
	s := collapseNewlines(removeBlocks(skill, regions[0]))
	return appendBlock(s, renderBlock(regions[0], pyStrip(content)))
}

// collapseNewlines replaces every run of 3+ '\n' with "\n\n".
func collapseNewlines(s string) string {
	if !strings.Contains(s, "\n\n\n") {
		return s
	}
	var b strings.Builder
	b.Grow(len(s))
	run := 0
	for i := 0; i < len(s); i++ {
		if s[i] == '\n' {
			run++
			if run > 2 {
				continue
			}
		} else {
			run = 0
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// InjectAppendix adds the empty execution-notes appendix (spec §1.10) at
// the end of the skill:
// "\n\n<!-- APPENDIX_START -->\n## Execution Notes Appendix\n<!-- APPENDIX_END -->\n"
// after right-stripping. A skill that already has an appendix start marker
// is returned unchanged.
func InjectAppendix(skill string) string {
	if strings.Contains(skill, AppendixStart) {
		return skill
	}
	return appendBlock(skill, renderAppendix(nil))
}

func renderAppendix(notes []string) string {
	var b strings.Builder
	b.WriteString(AppendixHeading)
	for _, n := range notes {
		b.WriteString("\n- ")
		b.WriteString(n)
	}
	return renderBlock(regions[1], b.String())
}

// AppendixNotes returns the notes of the first appendix block: each
// non-empty line after the heading, without a leading "- " or "* ".
func AppendixNotes(skill string) []string {
	lo, hi, ok := blockSpan(skill, regions[1])
	if !ok {
		return nil
	}
	var notes []string
	for _, line := range strings.Split(skill[lo+len(AppendixStart):hi-len(AppendixEnd)], "\n") {
		line = pyStrip(line)
		if line == "" || line == AppendixHeading {
			continue
		}
		if strings.HasPrefix(line, "- ") || strings.HasPrefix(line, "* ") {
			line = pyStrip(line[2:])
		}
		if line != "" {
			notes = append(notes, line)
		}
	}
	return notes
}

// FlushAppendix merges notes into the skill's appendix: the existing notes
// followed by the new ones, each made one line (whitespace runs collapsed,
// protected markers removed), deduplicated in order by [NoteKey] (the first
// spelling wins, empty notes dropped). Every appendix block is then cut out
// and the block is rewritten at the end of the skill, one "- note" line per
// note under the heading.
func FlushAppendix(skill string, notes []string) string {
	merged := DedupNotes(append(AppendixNotes(skill), notes...))
	return appendBlock(cutBlocks(skill, regions[1]), renderAppendix(merged))
}

// DedupNotes returns the notes made one line each (protected markers
// removed, whitespace runs collapsed to one space), without empty notes
// and without later notes whose [NoteKey] repeats an earlier one.
func DedupNotes(notes []string) []string {
	seen := make(map[string]bool, len(notes))
	var out []string
	for _, n := range notes {
		n = strings.Join(strings.FieldsFunc(removeMarkers(n), isPySpace), " ")
		k := NoteKey(n)
		if k == "" || seen[k] {
			continue
		}
		seen[k] = true
		out = append(out, n)
	}
	return out
}

// NoteKey is the canonical key that deduplicates appendix notes (spec
// §1.10): whitespace runs collapsed to one space and the ends trimmed,
// trailing " .;:,_-" characters stripped, then Unicode case folding.
func NoteKey(note string) string {
	k := strings.Join(strings.FieldsFunc(note, isPySpace), " ")
	k = strings.TrimRight(k, " .;:,_-")
	return cases.Fold().String(k)
}

// RestoreProtected puts the current skill's protected regions back into a
// rewritten candidate (fix B14; SkillOpt trusts the rewrite prompt). For
// each region, in canonical order (slow update, then appendix):
//
//   - if current has the region and the candidate holds exactly that block
//     once (and no other marker of the region), it stays where it is;
//   - if current has the region and the candidate dropped, altered or
//     duplicated it, the candidate's blocks and stray markers of the region
//     are cut out and current's block is appended at the end;
//   - if current has no such region, any block or marker of it that the
//     candidate invented is cut out.
//
// It returns the candidate and the names of the regions it changed (nil
// when the candidate already kept them).
func RestoreProtected(candidate, current string) (string, []string) {
	var changed []string
	var missing []string
	for _, r := range regions {
		lo, hi, ok := blockSpan(current, r)
		if !ok {
			if strings.Contains(candidate, r.start) || strings.Contains(candidate, r.end) {
				candidate = cutBlocks(candidate, r)
				changed = append(changed, r.name)
			}
			continue
		}
		block := current[lo:hi]
		if strings.Count(candidate, block) == 1 &&
			strings.Count(candidate, r.start) == 1 && strings.Count(candidate, r.end) == 1 {
			continue
		}
		candidate = cutBlocks(candidate, r)
		missing = append(missing, block)
		changed = append(changed, r.name)
	}
	for _, block := range missing {
		candidate = appendBlock(candidate, block)
	}
	return candidate, changed
}
