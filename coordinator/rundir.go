package coordinator

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// runDir writes the run directory. Files are written atomically (temp file
// + rename). events.jsonl is append-only; on resume the replayed events
// must equal the recorded ones line by line.
type runDir struct {
	dir        string
	mu         sync.Mutex
	events     *os.File
	existing   [][]byte
	n          int
	emitted    []Event
	configHash string
	wasResumed bool
	// fence, if set, confirms before each new event that this process
	// still leads the run (blocking while that cannot be confirmed).
	fence func() error
	// werr is the first write error (see writeFile).
	werr error
}

func openRunDir(dir, configHash string) (*runDir, error) {
	if err := os.MkdirAll(filepath.Join(dir, "skills"), 0o755); err != nil {
		return nil, fmt.Errorf("run dir: %w", err)
	}
	rd := &runDir{dir: dir, configHash: configHash}
	if data, err := os.ReadFile(filepath.Join(dir, "state.json")); err == nil {
		var st State
		if json.Unmarshal(data, &st) == nil && st.ConfigHash != "" && st.ConfigHash != configHash {
			return nil, fmt.Errorf("run dir %s was made with a different config (hash %s, now %s): use a new --out, or restore the original config", dir, st.ConfigHash, configHash)
		}
	}
	path := filepath.Join(dir, "events.jsonl")
	if data, err := os.ReadFile(path); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		good := 0
		for sc.Scan() {
			line := append([]byte(nil), sc.Bytes()...)
			if !json.Valid(line) {
				break // a torn last line
			}
			rd.existing = append(rd.existing, line)
			good += len(line) + 1
		}
		if err := os.Truncate(path, int64(good)); err != nil {
			return nil, fmt.Errorf("events.jsonl: %w", err)
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("events.jsonl: %w", err)
	}
	rd.events = f
	rd.wasResumed = len(rd.existing) > 0
	return rd, nil
}

func (r *runDir) resuming() bool      { return r.wasResumed }
func (r *runDir) existingEvents() int { return len(r.existing) }

// emit appends an event, or checks it against the recorded one on replay.
func (r *runDir) emit(ev Event) error {
	line, err := json.Marshal(ev)
	if err != nil {
		return fmt.Errorf("encode event: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.werr != nil {
		return r.werr
	}
	r.emitted = append(r.emitted, ev)
	if r.n < len(r.existing) {
		if !bytes.Equal(r.existing[r.n], line) {
			return fmt.Errorf("resume diverged from the recorded run at events.jsonl line %d:\n recorded: %s\n replayed: %s", r.n+1, r.existing[r.n], line)
		}
		r.n++
		return nil
	}
	if r.fence != nil {
		// A decision is written only while this process leads the run.
		if err := r.fence(); err != nil {
			r.emitted = r.emitted[:len(r.emitted)-1]
			return fmt.Errorf("not writing event %d: %w", r.n+1, err)
		}
	}
	r.n++
	if _, err := r.events.Write(append(line, '\n')); err != nil {
		r.werr = fmt.Errorf("run dir %s: write events.jsonl: %w", r.dir, err)
		return r.werr
	}
	if err := r.events.Sync(); err != nil {
		r.werr = fmt.Errorf("run dir %s: sync events.jsonl: %w", r.dir, err)
		return r.werr
	}
	return nil
}

func (r *runDir) close() error { return r.events.Close() }

// writeFile writes a run-dir file atomically. A write error is returned
// and also kept: from then on emit refuses new events and failed reports
// it, so the trainer stops at its next phase boundary, before state.json
// or events.jsonl can claim work whose files are missing. Callers that
// cannot stop on the spot may ignore the returned error for that reason.
func (r *runDir) writeFile(rel, text string) error {
	return r.keep(r.writeAtomic(rel, []byte(text)))
}

// writeJSON writes v as indented JSON; errors as for writeFile.
func (r *runDir) writeJSON(rel string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", rel, err)
	}
	return r.keep(r.writeAtomic(rel, append(data, '\n')))
}

// writeJSONErr is writeJSON for callers that handle the error themselves.
func (r *runDir) writeJSONErr(rel string, v any) error { return r.writeJSON(rel, v) }

// keep records the first write error.
func (r *runDir) keep(err error) error {
	if err == nil {
		return nil
	}
	err = fmt.Errorf("run dir %s: %w", r.dir, err)
	r.mu.Lock()
	if r.werr == nil {
		r.werr = err
	}
	r.mu.Unlock()
	return err
}

// failed is the first write error, or nil.
func (r *runDir) failed() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.werr
}

func (r *runDir) writeAtomic(rel string, data []byte) error {
	path := filepath.Join(r.dir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".tmp-"+filepath.Base(path)+"-")
	if err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", rel, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", rel, err)
	}
	return nil
}
