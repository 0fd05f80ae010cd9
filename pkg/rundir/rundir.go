// Package rundir is the run directory of a training run: its file names,
// the record types that more than one package reads (the coordinator
// writes them, pkg/report and the commands read them), and [Dir], which
// writes it.
//
// Every file but events.jsonl is written atomically (a temporary file in
// the same directory, then a rename), so a reader or a resumed run never
// sees half a file. events.jsonl is append-only and synced per line; on
// resume the replayed events must equal the recorded ones line by line.
// A write error is returned, never a panic, and the first one is kept:
// from then on [Dir.Emit] refuses new events, so a decision is never
// recorded without the files it depends on (a full disk ends a run with
// one error and resumes once space is back).
//
// The package is a leaf: of skillfleet it imports only pkg/usage (the
// token counters its records carry).
package rundir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// File names inside a run directory.
const (
	// EventsFile is the append-only decision log, one [Event] per line.
	EventsFile = "events.jsonl"
	// StateFile is the trainer's resumable state.
	StateFile = "state.json"
	// SummaryFile is written at the end of a run.
	SummaryFile = "summary.json"
	// TokensFile is the token and call accounting by stage, role and model.
	TokensFile = "tokens.json"
	// RunIDFile holds the run id, which stays the same across resumes.
	RunIDFile = "run_id"
	// BestSkillFile is the best skill found.
	BestSkillFile = "best_skill.md"
	// StepRecordFile is the record of a step, inside [StepFile]'s directory.
	StepRecordFile = "record.json"
	// SkillsDir holds the skill snapshots ([SkillFile]).
	SkillsDir = "skills"
)

// StepFile names a file of step g's directory.
func StepFile(g int, name string) string { return fmt.Sprintf("steps/step_%04d/%s", g, name) }

// StepRecordGlob matches every step record, relative to the run directory.
const StepRecordGlob = "steps/step_*/" + StepRecordFile

// SkillFile names the skill snapshot after step g.
func SkillFile(g int) string { return fmt.Sprintf("%s/skill_v%04d.md", SkillsDir, g) }

// Event is one line of events.jsonl: a decision. Events carry no
// wall-clock times, so two runs that decide alike write identical logs.
type Event struct {
	Type           string             `json:"type"`
	Epoch          int                `json:"epoch,omitempty"`
	Step           int                `json:"step,omitempty"`
	Action         string             `json:"action,omitempty"`
	CandidateHash  string             `json:"candidate_hash,omitempty"`
	CurrentHash    string             `json:"current_hash,omitempty"`
	BestHash       string             `json:"best_hash,omitempty"`
	CandidateScore *float64           `json:"candidate_score,omitempty"`
	CurrentScore   float64            `json:"current_score"`
	BestScore      float64            `json:"best_score"`
	EarlyStopped   bool               `json:"early_stopped,omitempty"`
	Unchanged      bool               `json:"unchanged,omitempty"`
	CacheHit       bool               `json:"cache_hit,omitempty"`
	Unscored       bool               `json:"unscored,omitempty"`
	MetaHash       string             `json:"meta_hash,omitempty"`
	Counts         map[string]int     `json:"counts,omitempty"`
	Scores         map[string]float64 `json:"scores,omitempty"`
}

// ErrConfigChanged is returned by [Open] for a run directory made with
// another config.
var ErrConfigChanged = errors.New("made with a different config")

// Dir writes one run directory. Its methods are safe for concurrent use.
type Dir struct {
	dir        string
	configHash string

	mu       sync.Mutex
	events   *os.File
	existing [][]byte // events recorded before this process
	n        int      // events emitted or replayed so far
	emitted  []Event
	resumed  bool
	// fence, if set, confirms before each new event that this process
	// still leads the run (blocking while that cannot be confirmed).
	fence func() error
	// werr is the first write error.
	werr error
}

// Open opens (or creates) the run directory dir for a run whose config
// hashes to configHash. Recorded events are kept for replay; a torn last
// line (a crash mid-write) is cut off. A directory whose state.json names
// another config hash is refused with [ErrConfigChanged]; one of another
// run-dir format is migrated or refused first ([Prepare]).
func Open(dir, configHash string) (*Dir, error) {
	if _, err := Prepare(dir); err != nil {
		return nil, err
	}
	if err := os.MkdirAll(filepath.Join(dir, SkillsDir), 0o755); err != nil {
		return nil, fmt.Errorf("run dir: %w", err)
	}
	d := &Dir{dir: dir, configHash: configHash}
	if data, err := os.ReadFile(filepath.Join(dir, StateFile)); err == nil {
		var st struct {
			ConfigHash string `json:"config_hash"`
		}
		if json.Unmarshal(data, &st) == nil && st.ConfigHash != "" && st.ConfigHash != configHash {
			return nil, fmt.Errorf("run dir %s: %w (hash %s, now %s): use a new --out, or restore the original config", dir, ErrConfigChanged, st.ConfigHash, configHash)
		}
	}
	path := filepath.Join(dir, EventsFile)
	if data, err := os.ReadFile(path); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		good := 0
		for sc.Scan() {
			line := append([]byte(nil), sc.Bytes()...)
			if !json.Valid(line) {
				break // a torn last line
			}
			d.existing = append(d.existing, line)
			good += len(line) + 1
		}
		if err := os.Truncate(path, int64(good)); err != nil {
			return nil, fmt.Errorf("run dir %s: %s: %w", dir, EventsFile, err)
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("run dir %s: %s: %w", dir, EventsFile, err)
	}
	d.events = f
	d.resumed = len(d.existing) > 0
	return d, nil
}

// Path is the directory.
func (d *Dir) Path() string { return d.dir }

// Resuming reports whether events were recorded before this process.
func (d *Dir) Resuming() bool { return d.resumed }

// ExistingEvents is how many events were recorded before this process.
func (d *Dir) ExistingEvents() int { return len(d.existing) }

// SetFence installs a check made before each new event is written; an
// error from it refuses the event.
func (d *Dir) SetFence(f func() error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.fence = f
}

// Emit appends an event, or, while replaying a resumed run, checks it
// against the recorded one.
func (d *Dir) Emit(ev Event) error {
	line, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.werr != nil {
		return d.werr
	}
	if d.n < len(d.existing) {
		if !bytes.Equal(d.existing[d.n], line) {
			return fmt.Errorf("resume diverged from the recorded run at %s line %d:\n recorded: %s\n replayed: %s", EventsFile, d.n+1, d.existing[d.n], line)
		}
		d.n++
		d.emitted = append(d.emitted, ev)
		return nil
	}
	if d.fence != nil {
		// A decision is written only while this process leads the run.
		if err := d.fence(); err != nil {
			return fmt.Errorf("not writing event %d: %w", d.n+1, err)
		}
	}
	if _, err := d.events.Write(append(line, '\n')); err != nil {
		d.werr = fmt.Errorf("run dir %s: write %s: %w", d.dir, EventsFile, err)
		return d.werr
	}
	if err := d.events.Sync(); err != nil {
		d.werr = fmt.Errorf("run dir %s: sync %s: %w", d.dir, EventsFile, err)
		return d.werr
	}
	d.n++
	d.emitted = append(d.emitted, ev)
	return nil
}

// Emitted returns the events emitted or replayed by this process.
func (d *Dir) Emitted() []Event {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Event(nil), d.emitted...)
}

// WriteFile writes a file atomically. A write error is returned and also
// kept: from then on Emit refuses new events and Failed reports it, so a
// trainer stops at its next phase boundary, before state.json or
// events.jsonl can claim work whose files are missing. Callers that cannot
// stop on the spot may therefore leave the returned error to Failed.
func (d *Dir) WriteFile(rel, text string) error {
	return d.keep(writeAtomic(filepath.Join(d.dir, rel), rel, []byte(text)))
}

// WriteJSON writes v as indented JSON, atomically; errors as for
// WriteFile. An encoding error is returned but not kept (nothing was
// written).
func (d *Dir) WriteJSON(rel string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", rel, err)
	}
	return d.keep(writeAtomic(filepath.Join(d.dir, rel), rel, append(data, '\n')))
}

// keep records the first write error.
func (d *Dir) keep(err error) error {
	if err == nil {
		return nil
	}
	err = fmt.Errorf("run dir %s: %w", d.dir, err)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.werr == nil {
		d.werr = err
	}
	return err
}

// Failed returns the first write error, or nil.
func (d *Dir) Failed() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.werr
}

// Close closes the event log.
func (d *Dir) Close() error { return d.events.Close() }

// WriteAtomic writes data to path through a temporary file in the same
// directory and a rename, creating the directory if needed. On error the
// temporary file is removed and path is left as it was.
func WriteAtomic(path string, data []byte) error {
	return writeAtomic(path, filepath.Base(path), data)
}

// writeAtomic is WriteAtomic naming the file name in its errors.
func writeAtomic(path, name string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", name, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}
