package nightly

import (
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite" // the pure-Go SQLite driver, "sqlite"
)

// openSnapshot opens a private copy of the SQLite database at path. The
// agent that owns it may be writing it: the copy is made with plain reads
// (the database and its write-ahead log), so this process never takes a
// lock on the user's files, never writes them and never creates a -shm or
// -journal beside them; SQLite then replays the copied log into the copy.
// A database that changes while it is copied is copied again, and refused
// after three tries. close removes the copy.
func openSnapshot(path string) (db *sql.DB, closeFn func(), err error) {
	dir, err := os.MkdirTemp("", "skillfleet-harvest-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { _ = os.RemoveAll(dir) }
	copyPath := filepath.Join(dir, "db.sqlite")
	for try := 0; ; try++ {
		before, err := dbStamp(path)
		if err != nil {
			cleanup()
			return nil, nil, err
		}
		if err := copyFile(path, copyPath); err != nil {
			cleanup()
			return nil, nil, err
		}
		_ = os.Remove(copyPath + "-wal")
		if err := copyFile(path+"-wal", copyPath+"-wal"); err != nil && !errors.Is(err, os.ErrNotExist) {
			cleanup()
			return nil, nil, err
		}
		after, err := dbStamp(path)
		if err != nil {
			cleanup()
			return nil, nil, err
		}
		if before == after {
			break
		}
		if try == 2 {
			cleanup()
			return nil, nil, fmt.Errorf("%s: changed each time it was copied", path)
		}
	}
	db, err = sql.Open("sqlite", copyPath)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	db.SetMaxOpenConns(1)
	if err := db.Ping(); err != nil {
		db.Close()
		cleanup()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return db, func() { db.Close(); cleanup() }, nil
}

// dbStamp is the size and modification time of a database and its log.
func dbStamp(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	s := fmt.Sprint(st.Size(), st.ModTime().UnixNano())
	if w, err := os.Stat(path + "-wal"); err == nil {
		s += fmt.Sprint(" ", w.Size(), w.ModTime().UnixNano())
	}
	return s, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// requireColumns fails naming the first table or column of want that the
// database lacks, and returns the columns each table has.
func requireColumns(db *sql.DB, want map[string][]string) (map[string][]string, error) {
	have := map[string][]string{}
	tables := make([]string, 0, len(want))
	for t := range want {
		tables = append(tables, t)
	}
	slices.Sort(tables)
	for _, t := range tables {
		rows, err := db.Query(`SELECT name FROM pragma_table_info(?)`, t)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var c string
			if err := rows.Scan(&c); err != nil {
				rows.Close()
				return nil, err
			}
			have[t] = append(have[t], c)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		if len(have[t]) == 0 {
			return nil, fmt.Errorf("no table %s", t)
		}
		for _, c := range want[t] {
			if !slices.Contains(have[t], c) {
				return nil, fmt.Errorf("table %s has no column %s", t, c)
			}
		}
	}
	return have, nil
}

// dbTime reads a timestamp column: RFC 3339 or SQLite's "YYYY-MM-DD
// HH:MM:SS" text (UTC), or a number of milliseconds (or seconds) since the
// epoch. Zero when it is none of these.
func dbTime(v any) time.Time {
	switch x := v.(type) {
	case int64:
		if x <= 0 {
			return time.Time{}
		}
		if x < 10_000_000_000 {
			return time.Unix(x, 0).UTC()
		}
		return time.UnixMilli(x).UTC()
	case float64:
		return dbTime(int64(x))
	case []byte:
		return dbTime(string(x))
	case string:
		x = strings.TrimSpace(x)
		if n, err := strconv.ParseInt(x, 10, 64); err == nil {
			return dbTime(n)
		}
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999", "2006-01-02T15:04:05.999999999"} {
			if t, err := time.Parse(layout, x); err == nil {
				return t.UTC()
			}
		}
	}
	return time.Time{}
}

// dbString reads a text column that may be NULL or a blob.
func dbString(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []byte:
		return string(x)
	}
	return ""
}

func wrapPath(path string, err error) error { return fmt.Errorf("%s: %w", path, err) }
