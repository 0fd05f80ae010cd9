package nightly

import (
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// SourceOpencode is opencode: its database (opencode.db under its XDG data
// directory) holds sessions, their messages and the messages' parts.
const SourceOpencode = "opencode"

// defaultOpencodeDB is where opencode keeps its database: $OPENCODE_DB
// (relative to the data directory unless absolute), else opencode.db in
// $XDG_DATA_HOME/opencode or ~/.local/share/opencode.
func defaultOpencodeDB(home string) string {
	data := filepath.Join(home, ".local", "share", "opencode")
	if x := os.Getenv("XDG_DATA_HOME"); x != "" {
		data = filepath.Join(x, "opencode")
	}
	if p := os.Getenv("OPENCODE_DB"); p != "" && p != ":memory:" {
		if filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(data, p)
	}
	return filepath.Join(data, "opencode.db")
}

// opencodePart is the JSON of one part of a message: its text, or the name
// of the tool it called (arguments and results are not read).
type opencodePart struct {
	Type       string `json:"type"`
	Text       string `json:"text"`
	Synthetic  bool   `json:"synthetic"`
	Ignored    bool   `json:"ignored"`
	Tool       string `json:"tool"`
	Invocation *struct {
		ToolName string `json:"toolName"`
	} `json:"toolInvocation"`
}

// readOpencode reads opencode's root sessions (a session with a parent is
// a sub-agent's task, counted) of a wanted project that ended after the
// project's cursor, from a private copy of the database (see
// [openSnapshot]). Text the client adds itself (synthetic or ignored
// parts) is left out.
func readOpencode(o *HarvestOptions) ([]*Digest, Skipped, error) {
	var sk Skipped
	path := o.OpencodeDB
	if _, err := os.Stat(path); os.IsNotExist(err) {
		return nil, sk, nil
	}
	db, done, err := openSnapshot(path)
	if err != nil {
		return nil, sk, err
	}
	defer done()
	have, err := requireColumns(db, map[string][]string{
		"session": {"id", "parent_id", "directory", "time_created", "time_updated"},
		"message": {"id", "session_id", "time_created", "data"},
		"part":    {"id", "message_id", "session_id", "data"},
	})
	if err != nil {
		return nil, sk, wrapPath(path, err)
	}
	metaCol := "NULL"
	if slices.Contains(have["session"], "metadata") {
		metaCol = "metadata"
	}
	rows, err := db.Query(`SELECT id, parent_id, directory, ` + metaCol + `, time_created, time_updated FROM session ORDER BY time_updated DESC, id`)
	if err != nil {
		return nil, sk, wrapPath(path, err)
	}
	type meta struct {
		id, dir, branch string
		start, end      time.Time
	}
	var sessions []meta
	for rows.Next() {
		var id, parent, dir, md, created, updated any
		if err := rows.Scan(&id, &parent, &dir, &md, &created, &updated); err != nil {
			rows.Close()
			return nil, sk, wrapPath(path, err)
		}
		m := meta{id: dbString(id), dir: dbString(dir), start: dbTime(created), end: dbTime(updated)}
		var mdv struct {
			GitBranch string `json:"gitBranch"`
		}
		if json.Unmarshal([]byte(dbString(md)), &mdv) == nil {
			m.branch = mdv.GitBranch
		}
		switch {
		case parent != nil && dbString(parent) != "":
			sk.SubAgent++
		case m.id == "" || !filepath.IsAbs(m.dir) || m.end.IsZero():
			sk.Unreadable++
		case o.inScope(filepath.Clean(m.dir), m.end, &sk):
			sessions = append(sessions, m)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, sk, wrapPath(path, err)
	}
	var out []*Digest
	for _, m := range sessions {
		s := &session{id: m.id, project: filepath.Clean(m.dir), branch: m.branch, start: m.start, end: m.end}
		if s.start.IsZero() {
			s.start = m.end
		}
		ok, err := opencodeMessages(db, s, &sk)
		if err != nil {
			return nil, sk, wrapPath(path, err)
		}
		if !ok {
			sk.Unreadable++
			continue
		}
		if d := s.digest(path+"#"+m.id, &sk); d != nil {
			out = append(out, d)
		}
	}
	return out, sk, nil
}

// opencodeMessages adds a session's turns to s; false when a message or a
// part is not JSON (the session is then left out whole).
func opencodeMessages(db *sql.DB, s *session, sk *Skipped) (bool, error) {
	parts := map[string][]opencodePart{}
	prows, err := db.Query(`SELECT message_id, data FROM part WHERE session_id = ? ORDER BY message_id, id`, s.id)
	if err != nil {
		return false, err
	}
	bad := false
	for prows.Next() {
		var mid, data any
		if err := prows.Scan(&mid, &data); err != nil {
			prows.Close()
			return false, err
		}
		var p opencodePart
		if json.Unmarshal([]byte(dbString(data)), &p) != nil {
			bad = true
			continue
		}
		parts[dbString(mid)] = append(parts[dbString(mid)], p)
	}
	prows.Close()
	if err := prows.Err(); err != nil {
		return false, err
	}
	mrows, err := db.Query(`SELECT id, data FROM message WHERE session_id = ? ORDER BY time_created, id`, s.id)
	if err != nil {
		return false, err
	}
	defer mrows.Close()
	for mrows.Next() {
		var id, data any
		if err := mrows.Scan(&id, &data); err != nil {
			return false, err
		}
		var msg struct {
			Role  string          `json:"role"`
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal([]byte(dbString(data)), &msg) != nil {
			bad = true
			continue
		}
		var text []byte
		for _, p := range parts[dbString(id)] {
			switch {
			case p.Type == "text" && !p.Synthetic && !p.Ignored:
				if len(text) > 0 {
					text = append(text, '\n')
				}
				text = append(text, p.Text...)
			case p.Type == "tool" && msg.Role == "assistant":
				s.tools = addUnique(s.tools, sanitizeToolName(p.Tool))
			case p.Type == "tool-invocation" && p.Invocation != nil && msg.Role == "assistant":
				s.tools = addUnique(s.tools, sanitizeToolName(p.Invocation.ToolName))
			}
		}
		switch msg.Role {
		case "user":
			s.user(string(text))
		case "assistant":
			s.assistant(string(text))
		}
	}
	if bad {
		sk.MalformedLines++
	}
	return !bad, mrows.Err()
}
