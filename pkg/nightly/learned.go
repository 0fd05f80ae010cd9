package nightly

import (
	"errors"
	"fmt"
	"strings"
)

// The learned block's markers. Only the bullet lines between them are ever
// edited; everything outside is the user's and is never touched.
const (
	LearnedStart = "<!-- SKILLFLEET-SLEEP:LEARNED START -->"
	LearnedEnd   = "<!-- SKILLFLEET-SLEEP:LEARNED END -->"
)

// ManagedSkillName is the name of the skill a night maintains when no
// target skill is given.
const ManagedSkillName = "skillfleet-sleep-learned"

const learnedBanner = "_Maintained by `skillfleet sleep`: habits learned from your own sessions. Edit outside this block freely._"

// ScaffoldSkill is the skill document a first night starts from.
func ScaffoldSkill() string {
	return "---\nname: " + ManagedSkillName + "\ndescription: Habits learned overnight from your own coding sessions by skillfleet sleep. Read it before you answer.\n---\n\n# Learned habits\n\n" + emptyBlock()
}

// ScaffoldMemory is the memory file (CLAUDE.md) a first night starts from.
func ScaffoldMemory() string { return "# Project memory\n\n" + emptyBlock() }

func emptyBlock() string {
	return LearnedStart + "\n## Learned from your sessions\n\n" + learnedBanner + "\n\n" + LearnedEnd + "\n"
}

// Edit is one proposed change to the learned block or, for a skill
// package, to a reference file: File names it (none, or SKILL.md, is the
// learned block; see [ApplyDocEdits]).
type Edit struct {
	File      string `json:"file,omitempty"`
	Op        string `json:"op"`
	Content   string `json:"content,omitempty"`
	Anchor    string `json:"anchor,omitempty"`
	Rationale string `json:"rationale,omitempty"`
}

// Unmatched is an edit that changed nothing, and why.
type Unmatched struct {
	Edit   Edit   `json:"edit"`
	Reason string `json:"reason"`
}

// blockBounds finds the learned block: the line indexes of its markers.
// A document without markers gets none (-1, -1); markers out of order or
// repeated are an error.
func blockBounds(lines []string) (int, int, error) {
	s, e := -1, -1
	for i, l := range lines {
		switch strings.TrimSpace(l) {
		case LearnedStart:
			if s >= 0 {
				return 0, 0, errors.New("learned block: two start markers")
			}
			s = i
		case LearnedEnd:
			if e >= 0 {
				return 0, 0, errors.New("learned block: two end markers")
			}
			e = i
		}
	}
	switch {
	case s < 0 && e < 0:
		return -1, -1, nil
	case s < 0 || e < 0 || e < s:
		return 0, 0, errors.New("learned block: markers missing or out of order")
	}
	return s, e, nil
}

// EnsureBlock returns doc with a learned block: a scaffold for an empty
// document, the block appended to one without markers, doc itself
// otherwise.
func EnsureBlock(doc string, scaffold func() string) (string, error) {
	if strings.TrimSpace(doc) == "" {
		return scaffold(), nil
	}
	s, _, err := blockBounds(strings.Split(doc, "\n"))
	if err != nil {
		return "", err
	}
	if s >= 0 {
		return doc, nil
	}
	return strings.TrimRight(doc, "\n") + "\n\n" + emptyBlock(), nil
}

// LearnedLines returns the bullet lines of the learned block.
func LearnedLines(doc string) []string {
	lines := strings.Split(doc, "\n")
	s, e, err := blockBounds(lines)
	if err != nil || s < 0 {
		return nil
	}
	var out []string
	for _, l := range lines[s+1 : e] {
		if strings.HasPrefix(strings.TrimSpace(l), "- ") {
			out = append(out, strings.TrimSpace(strings.TrimSpace(l)[2:]))
		}
	}
	return out
}

func normText(s string) string {
	s = strings.TrimSpace(s)
	s = strings.TrimPrefix(s, "- ")
	return strings.Join(strings.Fields(strings.ToLower(s)), " ")
}

// ApplyEdits applies edits to the bullet lines of doc's learned block and
// returns the new document, the edits that changed it and those that did
// not (with why). Matching is on normalised text (lower case, collapsed
// whitespace) and reaches every matching line; ops are case-insensitive;
// an unknown op, a missing or absent anchor, a no-op replace, a duplicate
// add, or content holding a marker or a secret-shaped string is unmatched.
// Text outside the block is returned byte for byte.
func ApplyEdits(doc string, edits []Edit) (string, []Edit, []Unmatched, error) {
	lines := strings.Split(doc, "\n")
	s, e, err := blockBounds(lines)
	if err != nil {
		return doc, nil, nil, err
	}
	if s < 0 {
		return doc, nil, nil, errors.New("learned block: no markers (call EnsureBlock first)")
	}
	head, block, tail := lines[:s+1], append([]string(nil), lines[s+1:e]...), lines[e:]
	var applied []Edit
	var unmatched []Unmatched
	miss := func(ed Edit, why string) { unmatched = append(unmatched, Unmatched{Edit: ed, Reason: why}) }
	for _, ed := range edits {
		op := strings.ToLower(strings.TrimSpace(ed.Op))
		content := strings.Join(strings.Fields(ed.Content), " ")
		content = strings.TrimPrefix(content, "- ")
		if strings.Contains(content, "SKILLFLEET-SLEEP:") || strings.Contains(ed.Anchor, "SKILLFLEET-SLEEP:") {
			miss(ed, "touches the block's markers")
			continue
		}
		if ContainsSecret(content) {
			miss(ed, "content holds a secret-shaped string")
			continue
		}
		anchor := normText(ed.Anchor)
		if anchor == "" && op == "delete" {
			anchor = normText(content)
		}
		bulletIdx := func(match func(string) bool) []int {
			var idx []int
			for i, l := range block {
				if strings.HasPrefix(strings.TrimSpace(l), "- ") && match(normText(l)) {
					idx = append(idx, i)
				}
			}
			return idx
		}
		switch op {
		case "add":
			n := normText(content)
			if n == "" {
				miss(ed, "empty content")
				continue
			}
			if len(bulletIdx(func(l string) bool { return l == n })) > 0 {
				miss(ed, "duplicates a line of the block")
				continue
			}
			// Insert after the last bullet (or before the trailing blank
			// lines when there is none).
			at := len(block)
			for at > 0 && strings.TrimSpace(block[at-1]) == "" {
				at--
			}
			block = append(block[:at], append([]string{"- " + content}, block[at:]...)...)
		case "delete":
			if anchor == "" {
				miss(ed, "no anchor")
				continue
			}
			idx := bulletIdx(func(l string) bool { return strings.Contains(l, anchor) })
			if len(idx) == 0 {
				miss(ed, "anchor not found in the block")
				continue
			}
			for k := len(idx) - 1; k >= 0; k-- {
				block = append(block[:idx[k]], block[idx[k]+1:]...)
			}
		case "replace":
			if anchor == "" {
				miss(ed, "no anchor")
				continue
			}
			if normText(content) == "" {
				miss(ed, "empty content (use delete)")
				continue
			}
			idx := bulletIdx(func(l string) bool { return strings.Contains(l, anchor) })
			if len(idx) == 0 {
				miss(ed, "anchor not found in the block")
				continue
			}
			changed := false
			for _, i := range idx {
				if normText(block[i]) != normText(content) {
					changed = true
				}
				block[i] = "- " + content
			}
			if !changed {
				miss(ed, "replace changes nothing")
				continue
			}
			block = dedupBullets(block)
		default:
			miss(ed, fmt.Sprintf("unknown op %q (want add, replace or delete)", ed.Op))
			continue
		}
		applied = append(applied, ed)
	}
	out := append(append(append([]string(nil), head...), block...), tail...)
	return strings.Join(out, "\n"), applied, unmatched, nil
}

// dedupBullets drops bullet lines that repeat an earlier one.
func dedupBullets(block []string) []string {
	seen := map[string]bool{}
	out := block[:0]
	for _, l := range block {
		if strings.HasPrefix(strings.TrimSpace(l), "- ") {
			n := normText(l)
			if seen[n] {
				continue
			}
			seen[n] = true
		}
		out = append(out, l)
	}
	return out
}

// OutsideBlock returns doc with the learned block's content removed: two
// documents with the same OutsideBlock differ only inside the block.
func OutsideBlock(doc string) string {
	lines := strings.Split(doc, "\n")
	s, e, err := blockBounds(lines)
	if err != nil || s < 0 {
		return doc
	}
	return strings.Join(append(append([]string(nil), lines[:s+1]...), lines[e:]...), "\n")
}
