package nightly

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/skillfleet/skillfleet/internal/atomicfile"
	"github.com/skillfleet/skillfleet/internal/filelock"
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
	// Lessons are the slow memory: the newest gate decisions of earlier
	// nights (≤ [MaxLessons], redacted), shown to the reflector.
	Lessons []Lesson `json:"lessons,omitempty"`
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
	if len(s.Lessons) > MaxLessons {
		s.Lessons = s.Lessons[len(s.Lessons)-MaxLessons:]
	}
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	return writeFile(path, append(b, '\n'), 0o600)
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
	unlock, err = filelock.Lock(lp, 0o600, strconv.Itoa(os.Getpid()))
	if held := (*filelock.HeldError)(nil); errors.As(err, &held) {
		return nil, fmt.Errorf("%w (%s, held by pid %s)", ErrLocked, lp, held.Holder)
	}
	return unlock, err
}

// writeHook, in tests, runs after each chunk writeFile writes.
var writeHook func(path string, written int)

// writeFile replaces path with data atomically (see [atomicfile]),
// reporting each written chunk to writeHook when a test sets it.
func writeFile(path string, data []byte, perm fs.FileMode) error {
	var progress func(int)
	if hook := writeHook; hook != nil {
		progress = func(n int) { hook(path, n) }
	}
	return atomicfile.WriteProgress(path, data, perm, progress)
}
