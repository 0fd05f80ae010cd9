package nightly

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// StateVersion is the state file's schema version.
const StateVersion = 1

// maxArchive bounds the task archive.
const maxArchive = 300

// State is what carries from one night to the next.
type State struct {
	Version int `json:"version"`
	// Night counts the nights run (dry runs excluded).
	Night int `json:"night"`
	// LastHarvest is each project's cursor: the start time of the last
	// night that harvested it.
	LastHarvest map[string]time.Time `json:"last_harvest"`
	// TaskArchive holds earlier nights' real tasks (newest last, ≤ 300).
	TaskArchive []Task `json:"task_archive"`
	// History is one line per night.
	History []NightRecord `json:"history"`
	// LastModelKey names the backend and model of the last night; a change
	// is reported, since scores across models do not compare.
	LastModelKey string `json:"last_model_key,omitempty"`
}

// NightRecord summarises one night in the state's history.
type NightRecord struct {
	Night    int       `json:"night"`
	Started  time.Time `json:"started"`
	Sessions int       `json:"sessions"`
	Tasks    int       `json:"tasks"`
	Action   string    `json:"action"`
	Reason   string    `json:"reason,omitempty"`
	Baseline float64   `json:"baseline"`
	Final    float64   `json:"final"`
	Tokens   int64     `json:"tokens"`
	Staging  string    `json:"staging,omitempty"`
}

// LoadState reads a state file; a missing file is a fresh state. A file
// that does not parse is an error naming it (never a silent fresh start).
func LoadState(path string) (*State, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &State{Version: StateVersion, LastHarvest: map[string]time.Time{}}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("state %s: %w", path, err)
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("state %s: not valid JSON (%w); move it aside to start afresh", path, err)
	}
	if s.Version > StateVersion {
		return nil, fmt.Errorf("state %s: version %d is newer than this skillfleet understands (%d)", path, s.Version, StateVersion)
	}
	if s.LastHarvest == nil {
		s.LastHarvest = map[string]time.Time{}
	}
	return &s, nil
}

// Save writes the state atomically (a temporary file, fsync, rename).
func (s *State) Save(path string) error {
	s.Version = StateVersion
	if len(s.TaskArchive) > maxArchive {
		s.TaskArchive = s.TaskArchive[len(s.TaskArchive)-maxArchive:]
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, append(b, '\n'), 0o600)
}

// Archive adds tasks to the archive, replacing older entries of the same id.
func (s *State) Archive(tasks []Task) {
	ids := map[string]bool{}
	for _, t := range tasks {
		ids[t.ID] = true
	}
	kept := s.TaskArchive[:0]
	for _, t := range s.TaskArchive {
		if !ids[t.ID] {
			kept = append(kept, t)
		}
	}
	s.TaskArchive = append(kept, tasks...)
	if len(s.TaskArchive) > maxArchive {
		s.TaskArchive = s.TaskArchive[len(s.TaskArchive)-maxArchive:]
	}
}

// ErrLocked is returned by [LockState] when another process holds the lock.
var ErrLocked = errors.New("state is locked by another night")

// LockState takes an exclusive lock on path+".lock" (flock), so two nights
// (or a night and an adopt) never read-modify-write the state at once. It
// does not wait: a held lock is [ErrLocked] naming the holder's pid.
func LockState(path string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	lp := path + ".lock"
	f, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", lp, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(lp)
		_ = f.Close() // only locked, not written
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w (%s, held by pid %s)", ErrLocked, lp, strings.TrimSpace(string(holder)))
		}
		return nil, fmt.Errorf("lock %s: %w", lp, err)
	}
	_ = f.Truncate(0)
	_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		_ = f.Close() // the pid line is informational
	}, nil
}

// writeHook, in tests, runs after each chunk WriteFileAtomic writes.
var writeHook func(path string, written int)

// WriteFileAtomic writes data to path so that a reader (or a crash) sees
// either the old file or the new one, never a part: a temporary file in
// the same directory, fsync, rename, fsync of the directory.
func WriteFileAtomic(path string, data []byte, perm fs.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	ok := false
	defer func() {
		if !ok {
			// The write already failed; this only clears the temporary.
			_ = f.Close()
			_ = os.Remove(tmp)
		}
	}()
	for off := 0; off < len(data) || off == 0; {
		n := min(len(data)-off, 1<<20)
		if _, err := f.Write(data[off : off+n]); err != nil {
			return fmt.Errorf("write %s: %w", tmp, err)
		}
		off += n
		if writeHook != nil {
			writeHook(path, off)
		}
		if n == 0 {
			break
		}
	}
	if err := f.Chmod(perm); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("fsync %s: %w", tmp, err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp, path); err != nil {
		return fmt.Errorf("rename onto %s: %w", path, err)
	}
	ok = true
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
	return nil
}
