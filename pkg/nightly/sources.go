package nightly

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
)

// claudeRecord is one line of a Claude Code session transcript.
type claudeRecord struct {
	Type        string `json:"type"`
	IsSidechain bool   `json:"isSidechain"`
	IsMeta      bool   `json:"isMeta"`
	Cwd         string `json:"cwd"`
	GitBranch   string `json:"gitBranch"`
	Timestamp   string `json:"timestamp"`
	SessionID   string `json:"sessionId"`
	Entrypoint  string `json:"entrypoint"`
	Message     *struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"message"`
	Snapshot *struct {
		TrackedFileBackups map[string]json.RawMessage `json:"trackedFileBackups"`
	} `json:"snapshot"`
}

func parseClaude(path string, o *HarvestOptions) (*Digest, Skipped, error) {
	var sk Skipped
	f, err := os.Open(path)
	if err != nil {
		return nil, sk, err
	}
	defer f.Close()
	s := &session{id: strings.TrimSuffix(filepath.Base(path), ".jsonl")}
	huge, err := readLines(f, o.MaxLineBytes, func(line []byte) {
		var r claudeRecord
		if json.Unmarshal(line, &r) != nil {
			sk.MalformedLines++
			return
		}
		if r.IsSidechain {
			return // a sub-agent's turns inside the session
		}
		if strings.HasPrefix(r.Entrypoint, "sdk") {
			s.headless = true
		}
		if r.Entrypoint == "cli" { // the terminal UI
			s.interactive = true
		}
		if s.project == "" && r.Cwd != "" {
			s.project = filepath.Clean(r.Cwd)
		}
		if s.branch == "" && r.GitBranch != "" {
			s.branch = r.GitBranch
		}
		if r.SessionID != "" {
			s.id = r.SessionID
		}
		if r.Snapshot != nil {
			for k := range r.Snapshot.TrackedFileBackups {
				if len(s.files) < 200 {
					s.files = addUnique(s.files, Redact(k))
				}
			}
		}
		// Only user and assistant records are turns: other records
		// (api-request-blob and the like) carry copies of messages too.
		if r.Message == nil || r.IsMeta || (r.Type != "user" && r.Type != "assistant") {
			return
		}
		s.stamp(r.Timestamp)
		blocks, ok := contentBlocks(r.Message.Content)
		if !ok {
			sk.MalformedLines++
			return
		}
		switch r.Message.Role {
		case "user":
			var texts []string
			for _, b := range blocks {
				if b.Type == "text" {
					texts = append(texts, b.Text)
				}
			}
			if len(texts) > 0 { // tool results alone are not a user turn
				s.user(strings.Join(texts, "\n"))
			}
		case "assistant":
			var texts []string
			for _, b := range blocks {
				switch b.Type {
				case "text":
					texts = append(texts, b.Text)
				case "tool_use":
					s.toolUse(b)
				}
			}
			if len(texts) > 0 {
				s.assistant(strings.Join(texts, "\n"))
			}
		}
	})
	sk.HugeLines += huge
	if err != nil {
		return nil, sk, err
	}
	if s.project == "" {
		s.project = filepath.Base(filepath.Dir(path))
	}
	return s.digest(path, &sk), sk, nil
}

// codexRecord is one line of a Codex session (rollout) file.
type codexRecord struct {
	Timestamp string          `json:"timestamp"`
	Type      string          `json:"type"`
	Payload   json.RawMessage `json:"payload"`
}

type codexPayload struct {
	Type       string          `json:"type"`
	ID         string          `json:"id"`
	Cwd        string          `json:"cwd"`
	Timestamp  string          `json:"timestamp"`
	Originator string          `json:"originator"`
	Source     json.RawMessage `json:"source"`
	Git        *struct {
		Branch string `json:"branch"`
	} `json:"git"`
	Message string          `json:"message"`
	Role    string          `json:"role"`
	Name    string          `json:"name"`
	Content json.RawMessage `json:"content"`
}

func parseCodex(path string, o *HarvestOptions) (*Digest, Skipped, error) {
	var sk Skipped
	f, err := os.Open(path)
	if err != nil {
		return nil, sk, err
	}
	defer f.Close()
	s := &session{id: strings.TrimSuffix(filepath.Base(path), ".jsonl")}
	// Codex logs a turn both as an event and as a response item; events
	// are preferred, items used only when a file has no events.
	var evUser, evAsst, itUser, itAsst []string
	huge, err := readLines(f, o.MaxLineBytes, func(line []byte) {
		var r codexRecord
		if json.Unmarshal(line, &r) != nil {
			sk.MalformedLines++
			return
		}
		var p codexPayload
		if len(r.Payload) > 0 && json.Unmarshal(r.Payload, &p) != nil {
			sk.MalformedLines++
			return
		}
		s.stamp(r.Timestamp)
		switch r.Type {
		case "session_meta":
			if p.ID != "" {
				s.id = p.ID
			}
			if p.Cwd != "" {
				s.project = filepath.Clean(p.Cwd)
			}
			if p.Git != nil {
				s.branch = p.Git.Branch
			}
			s.stamp(p.Timestamp)
			if p.Originator == "codex_exec" || strings.Contains(string(p.Source), "exec") {
				s.headless = true
			}
			if p.Originator == "codex-tui" || p.Originator == "codex_cli_rs" { // the terminal UI
				s.interactive = true
			}
		case "turn_context":
			if s.project == "" && p.Cwd != "" {
				s.project = filepath.Clean(p.Cwd)
			}
		case "event_msg":
			switch p.Type {
			case "user_message":
				evUser = append(evUser, p.Message)
			case "agent_message":
				evAsst = append(evAsst, p.Message)
			}
		case "response_item":
			switch p.Type {
			case "message":
				blocks, _ := contentBlocks(p.Content)
				var texts []string
				for _, b := range blocks {
					if b.Text != "" {
						texts = append(texts, b.Text)
					}
				}
				t := strings.Join(texts, "\n")
				switch p.Role {
				case "user":
					itUser = append(itUser, t)
				case "assistant":
					itAsst = append(itAsst, t)
				}
			case "function_call", "custom_tool_call":
				s.tools = addUnique(s.tools, p.Name)
			case "local_shell_call":
				s.tools = addUnique(s.tools, "shell")
			}
		}
	})
	sk.HugeLines += huge
	if err != nil {
		return nil, sk, err
	}
	users, asst := evUser, evAsst
	if len(users) == 0 && len(asst) == 0 {
		users, asst = itUser, itAsst
	}
	for _, u := range users {
		s.user(u)
	}
	for _, a := range asst {
		s.assistant(a)
	}
	if s.project == "" {
		s.project = "unknown"
	}
	return s.digest(path, &sk), sk, nil
}

// cursorRecord is one line of a Cursor agent transcript.
type cursorRecord struct {
	Role    string `json:"role"`
	Message *struct {
		Content json.RawMessage `json:"content"`
	} `json:"message"`
}

// cursorSlug is how Cursor names a workspace's directory under
// ~/.cursor/projects: the path with separators as dashes.
func cursorSlug(p string) string {
	return strings.Trim(strings.NewReplacer("/", "-", ".", "-", " ", "-").Replace(p), "-")
}

func parseCursor(path string, o *HarvestOptions) (*Digest, Skipped, error) {
	var sk Skipped
	st, err := os.Stat(path)
	if err != nil {
		return nil, sk, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, sk, err
	}
	defer f.Close()
	// <home>/projects/<ws>/agent-transcripts/<id>/<id>.jsonl
	rel, _ := filepath.Rel(filepath.Join(o.CursorHome, "projects"), path)
	ws, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
	s := &session{id: strings.TrimSuffix(filepath.Base(path), ".jsonl"), project: ws}
	// Cursor's transcripts carry no timestamps: the file's mtime is both
	// ends (so the short-session headless rule never applies to them).
	s.start, s.end, s.noTimes = st.ModTime().UTC(), st.ModTime().UTC(), true
	huge, err := readLines(f, o.MaxLineBytes, func(line []byte) {
		var r cursorRecord
		if json.Unmarshal(line, &r) != nil || r.Message == nil {
			sk.MalformedLines++
			return
		}
		blocks, ok := contentBlocks(r.Message.Content)
		if !ok {
			sk.MalformedLines++
			return
		}
		var texts []string
		for _, b := range blocks {
			switch b.Type {
			case "text":
				texts = append(texts, b.Text)
			case "tool_use", "tool_call":
				s.toolUse(b)
			}
		}
		t := strings.Join(texts, "\n")
		switch r.Role {
		case "user":
			s.user(stripTag(t, "user_query"))
		case "assistant":
			s.assistant(t)
		}
	})
	sk.HugeLines += huge
	if err != nil {
		return nil, sk, err
	}
	return s.digest(path, &sk), sk, nil
}

// stripTag removes an enclosing <tag>…</tag> around t.
func stripTag(t, tag string) string {
	t = strings.TrimSpace(t)
	open, closing := "<"+tag+">", "</"+tag+">"
	if strings.HasPrefix(t, open) {
		t = strings.TrimPrefix(t, open)
		if i := strings.LastIndex(t, closing); i >= 0 {
			t = t[:i]
		}
	}
	return strings.TrimSpace(t)
}
