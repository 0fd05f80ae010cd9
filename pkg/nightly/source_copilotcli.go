package nightly

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// SourceCopilotCLI is the GitHub Copilot CLI: its session store,
// <COPILOT_HOME>/session-store.db (SQLite), indexes every session's working
// directory, branch and turns.
const SourceCopilotCLI = "copilot_cli"

// readCopilotCLI reads the sessions of the Copilot CLI's store that may be
// new: those of a wanted project that ended after the project's cursor (a
// session resumed after it is read whole). The store is read from a private
// copy (see [openSnapshot]); a store that is missing is no sessions, one
// that cannot be read or has another schema is an error (counted as
// unreadable by [Harvest]).
func readCopilotCLI(o *HarvestOptions) ([]*Digest, Skipped, error) {
	var sk Skipped
	path := filepath.Join(o.CopilotHome, "session-store.db")
	if _, err := os.Stat(path); os.IsNotExist(err) {
		return nil, sk, nil
	}
	db, done, err := openSnapshot(path)
	if err != nil {
		return nil, sk, err
	}
	defer done()
	have, err := requireColumns(db, map[string][]string{
		"sessions": {"id", "cwd", "created_at", "updated_at"},
		"turns":    {"session_id", "turn_index", "user_message", "assistant_response"},
	})
	if err != nil {
		return nil, sk, wrapPath(path, err)
	}
	branchCol := "NULL"
	if slices.Contains(have["sessions"], "branch") {
		branchCol = "branch"
	}
	rows, err := db.Query(`SELECT id, cwd, ` + branchCol + `, created_at, updated_at FROM sessions ORDER BY updated_at DESC, id`)
	if err != nil {
		return nil, sk, wrapPath(path, err)
	}
	type meta struct {
		id, cwd, branch string
		start, end      time.Time
	}
	var sessions []meta
	for rows.Next() {
		var id, cwd, branch, created, updated any
		if err := rows.Scan(&id, &cwd, &branch, &created, &updated); err != nil {
			rows.Close()
			return nil, sk, wrapPath(path, err)
		}
		m := meta{id: dbString(id), cwd: dbString(cwd), branch: dbString(branch), start: dbTime(created), end: dbTime(updated)}
		switch {
		case m.id == "" || m.cwd == "" || m.end.IsZero():
			sk.Unreadable++ // a session that cannot be scoped or dated
		case o.inScope(filepath.Clean(m.cwd), m.end, &sk):
			sessions = append(sessions, m)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, sk, wrapPath(path, err)
	}
	// session_files is optional: older stores do not have it.
	_, filesErr := requireColumns(db, map[string][]string{"session_files": {"session_id", "file_path", "tool_name"}})
	var out []*Digest
	for _, m := range sessions {
		s := &session{id: m.id, project: filepath.Clean(m.cwd), branch: m.branch, start: m.start, end: m.end}
		if s.start.IsZero() {
			s.start = m.end
		}
		if err := copilotTurns(db, s); err != nil {
			return nil, sk, wrapPath(path, err)
		}
		if filesErr == nil {
			if err := copilotFiles(db, s); err != nil {
				return nil, sk, wrapPath(path, err)
			}
		}
		sk.HugeLines += copilotEventTools(filepath.Join(o.CopilotHome, "session-state", m.id, "events.jsonl"), o.MaxLineBytes, s)
		if d := s.digest(path+"#"+m.id, &sk); d != nil {
			out = append(out, d)
		}
	}
	return out, sk, nil
}

func copilotTurns(db *sql.DB, s *session) error {
	rows, err := db.Query(`SELECT user_message, assistant_response FROM turns WHERE session_id = ? ORDER BY turn_index`, s.id)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var u, a any
		if err := rows.Scan(&u, &a); err != nil {
			return err
		}
		s.user(dbString(u))
		s.assistant(dbString(a))
	}
	return rows.Err()
}

func copilotFiles(db *sql.DB, s *session) error {
	rows, err := db.Query(`SELECT file_path, tool_name FROM session_files WHERE session_id = ? ORDER BY file_path`, s.id)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var f, tool any
		if err := rows.Scan(&f, &tool); err != nil {
			return err
		}
		if p := dbString(f); p != "" && len(s.files) < 200 {
			s.files = addUnique(s.files, Redact(p))
		}
		s.tools = addUnique(s.tools, sanitizeToolName(dbString(tool)))
	}
	return rows.Err()
}

// copilotEventTools adds the tools the session ran from its event log,
// <COPILOT_HOME>/session-state/<id>/events.jsonl (the store's
// session_files holds only the files a tool touched, so a shell command
// that touched none leaves no tool there): the name of each
// tool.execution_start event. The log is optional: a session without one
// (or with an id that is not a plain name) adds nothing. It returns the
// lines skipped as longer than limit.
func copilotEventTools(path string, limit int, s *session) int {
	if id := filepath.Base(filepath.Dir(path)); id != s.id || id == "." || id == ".." {
		return 0
	}
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	huge, _ := readLines(f, limit, func(line []byte) {
		if !bytes.Contains(line, []byte(`"tool.execution_start"`)) {
			return
		}
		var e struct {
			Type string `json:"type"`
			Data struct {
				ToolName string `json:"toolName"`
			} `json:"data"`
		}
		if json.Unmarshal(line, &e) != nil || e.Type != "tool.execution_start" || e.Data.ToolName == "" || len(s.tools) >= 100 {
			return
		}
		s.tools = addUnique(s.tools, sanitizeToolName(e.Data.ToolName))
	})
	return huge
}
