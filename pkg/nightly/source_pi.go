package nightly

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// SourcePi is pi (the pi coding agent): ~/.pi/agent/sessions/<slug>/*.jsonl.
const SourcePi = "pi"

// piEntry is one line of a pi session file. The first line is the session
// header (type "session": id, version, cwd); from version 2 on, entries form
// a tree through id and parentId, and the conversation the user sees is the
// branch that ends at the last entry written.
type piEntry struct {
	Type      string          `json:"type"`
	ID        string          `json:"id"`
	ParentID  json.RawMessage `json:"parentId"` // "null" for a root; absent before version 2
	Version   *int            `json:"version"`
	Cwd       string          `json:"cwd"`
	Timestamp string          `json:"timestamp"`
	Message   *struct {
		Role     string          `json:"role"`
		Content  json.RawMessage `json:"content"`
		ToolName string          `json:"toolName"`
	} `json:"message"`
}

// piFiles lists <home>/sessions/**/*.jsonl.
func piFiles(home string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(filepath.Join(home, "sessions"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return filepath.SkipAll
			}
			return nil // an unreadable directory is passed over
		}
		if d.Type().IsRegular() && strings.HasSuffix(p, ".jsonl") {
			out = append(out, p)
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// parsePi reads one pi session: the whole file for a version 1 (linear)
// session, the active branch of a tree session. A tree whose links are
// broken (an unknown or later parent, a duplicate id) is refused whole:
// reading past a damaged line could make an abandoned branch look active.
func parsePi(path string, o *HarvestOptions) (*Digest, Skipped, error) {
	var sk Skipped
	f, err := os.Open(path)
	if err != nil {
		return nil, sk, err
	}
	defer f.Close()
	var entries []piEntry
	bad := 0
	huge, err := readLines(f, o.MaxLineBytes, func(line []byte) {
		var e piEntry
		if json.Unmarshal(line, &e) != nil {
			bad++
			return
		}
		entries = append(entries, e)
	})
	if err != nil {
		return nil, sk, err
	}
	if len(entries) == 0 || entries[0].Type != "session" {
		return nil, sk, fmt.Errorf("%s: the first line is not a pi session header", path)
	}
	head := entries[0]
	version := 1
	if head.Version != nil {
		version = *head.Version
	}
	body := entries[1:]
	if version >= 2 {
		if bad > 0 || huge > 0 {
			return nil, sk, fmt.Errorf("%s: %d unreadable lines in a tree session", path, bad+huge)
		}
		if body, err = piActiveBranch(body); err != nil {
			return nil, sk, fmt.Errorf("%s: %w", path, err)
		}
	}
	sk.MalformedLines, sk.HugeLines = bad, huge
	s := &session{id: cmp.Or(head.ID, strings.TrimSuffix(filepath.Base(path), ".jsonl"))}
	if head.Cwd != "" {
		s.project = filepath.Clean(head.Cwd)
	}
	s.stamp(head.Timestamp)
	for _, e := range body {
		s.stamp(e.Timestamp)
		if e.Type != "message" || e.Message == nil {
			continue // model changes, compactions, custom entries
		}
		m := e.Message
		blocks, ok := contentBlocks(m.Content)
		if !ok {
			sk.MalformedLines++
			continue
		}
		var texts []string
		for _, b := range blocks {
			switch b.Type {
			case "text":
				texts = append(texts, b.Text)
			case "toolCall":
				s.tools = addUnique(s.tools, sanitizeToolName(b.Name))
			}
		}
		switch m.Role {
		case "user":
			s.user(strings.Join(texts, "\n"))
		case "assistant":
			s.assistant(strings.Join(texts, "\n"))
		case "toolResult":
			s.tools = addUnique(s.tools, sanitizeToolName(m.ToolName))
		}
	}
	if s.project == "" {
		s.project = "unknown"
	}
	return s.digest(path, &sk), sk, nil
}

// piActiveBranch returns the entries from a root to the last entry, in
// order. pi appends a child after its parent, so a parent not yet seen is
// a broken tree.
func piActiveBranch(entries []piEntry) ([]piEntry, error) {
	if len(entries) == 0 {
		return nil, nil
	}
	byID := make(map[string]int, len(entries))
	parent := make([]string, len(entries))
	for i, e := range entries {
		if e.ID == "" {
			return nil, fmt.Errorf("entry %d has no id", i+1)
		}
		if _, dup := byID[e.ID]; dup {
			return nil, fmt.Errorf("entry id %q appears twice", e.ID)
		}
		if len(e.ParentID) == 0 {
			return nil, fmt.Errorf("entry %q has no parentId", e.ID)
		}
		var p *string
		if err := json.Unmarshal(e.ParentID, &p); err != nil {
			return nil, fmt.Errorf("entry %q: parentId: %w", e.ID, err)
		}
		if p != nil {
			if _, ok := byID[*p]; !ok {
				return nil, fmt.Errorf("entry %q: parent %q is not an earlier entry", e.ID, *p)
			}
			parent[i] = *p
		}
		byID[e.ID] = i
	}
	var branch []piEntry
	for i := len(entries) - 1; ; {
		branch = append(branch, entries[i])
		if parent[i] == "" {
			break
		}
		i = byID[parent[i]]
	}
	for l, r := 0, len(branch)-1; l < r; l, r = l+1, r-1 {
		branch[l], branch[r] = branch[r], branch[l]
	}
	return branch, nil
}

// sanitizeToolName keeps a tool name short and plain: names come from the
// transcript and are shown to the miner.
func sanitizeToolName(n string) string {
	n = strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '.', r == ':', r == '-':
			return r
		}
		return '_'
	}, strings.TrimSpace(n))
	if len(n) > 80 {
		n = n[:80]
	}
	return n
}
