package ui

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/skillfleet/skillfleet/pkg/report"
	"github.com/skillfleet/skillfleet/pkg/usage"
)

// ProgressFileName is the file a run's live progress is written to, in the
// run dir, while a dashboard is served (see [ProgressFile]).
const ProgressFileName = "progress.json"

// Progress is what a run is doing right now: the phase or step, the wave of
// tasks in flight and the scores so far. The coordinator reports it (see
// coordinator.Progress.Listen); [ProgressFile] writes it to progress.json,
// which the dashboard and the terminal line read.
type Progress struct {
	// Head is the phase ("baseline evaluation") or "epoch e/E step s/S".
	Head   string `json:"head"`
	Epoch  int    `json:"epoch,omitempty"`
	Epochs int    `json:"epochs,omitempty"`
	// Step is the step being run (1-based), Steps the run's total.
	Step  int `json:"step,omitempty"`
	Steps int `json:"steps,omitempty"`
	// Stage is the wave in flight; Done and Total count its tasks.
	Stage   string  `json:"stage,omitempty"`
	Done    int     `json:"done"`
	Total   int     `json:"total"`
	Failed  int     `json:"failed,omitempty"`
	Current float64 `json:"current_score"`
	Best    float64 `json:"best_score"`
	// Spend is the spend so far: a list of [ProgressRow], one per stage ×
	// role × model; absent when nobody reported it.
	Spend json.RawMessage `json:"spend,omitempty"`
	// StageStart is when the wave began; Started when this process began
	// the run; Updated when this record was made.
	StageStart time.Time `json:"stage_start,omitzero"`
	Started    time.Time `json:"started,omitzero"`
	Updated    time.Time `json:"updated"`
	// PID is the process writing the file.
	PID int `json:"pid"`
}

// StageETA estimates the time left in the wave from its rate so far
// (false until a task has finished).
func (p Progress) StageETA(now time.Time) (time.Duration, bool) {
	if p.Total <= 0 || p.Done <= 0 || p.StageStart.IsZero() || p.Done > p.Total {
		return 0, false
	}
	el := now.Sub(p.StageStart)
	if el <= 0 {
		return 0, false
	}
	per := el / time.Duration(p.Done)
	return per * time.Duration(p.Total-p.Done), true
}

// ProgressFile keeps progress.json in a run dir up to date: Update stores
// the latest state and a writer goroutine writes it at most once per
// interval, so a busy wave costs one write every few seconds, not one per
// task.
//
// The file is rewritten in place (one pwrite, and a truncate when the
// record shrank), not as a temp file renamed over it: the rename, a
// directory update, cost more than everything else a dashboard poll does.
// A reader may so catch a record half-written; it fails to parse, and
// readers keep the last good record until the next write (see
// [ReadProgress]).
type ProgressFile struct {
	path     string
	interval time.Duration
	spend    func() any

	mu      sync.Mutex
	cur     Progress
	dirty   bool
	started time.Time
	lastErr error

	// f and size are the open file and the length last written; only the
	// writer goroutine uses them.
	f    *os.File
	size int

	done chan struct{}
	once sync.Once
	wg   sync.WaitGroup
}

// NewProgressFile starts writing dir/progress.json. interval <= 0 means
// three seconds. Close it when the run ends.
func NewProgressFile(dir string, interval time.Duration) *ProgressFile {
	if interval <= 0 {
		interval = 3 * time.Second
	}
	f := &ProgressFile{path: filepath.Join(dir, ProgressFileName), interval: interval, started: time.Now(),
		done: make(chan struct{})}
	f.wg.Add(1)
	labelled(func() { go f.loop() })
	return f
}

// SetSpend installs a function returning the spend so far as
// []ProgressRow; it is called when the file is written, not on every
// update.
func (f *ProgressFile) SetSpend(fn func() any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.spend = fn
}

// Update records the latest progress. It never blocks on the disk, and
// wakes nothing: the writer picks the latest state up on its next tick
// (Update runs once per finished task).
func (f *ProgressFile) Update(p Progress) {
	f.mu.Lock()
	if p.Stage != f.cur.Stage || p.Total != f.cur.Total || p.Done < f.cur.Done || f.cur.StageStart.IsZero() {
		p.StageStart = time.Now()
	} else {
		p.StageStart = f.cur.StageStart
	}
	f.cur, f.dirty = p, true
	f.mu.Unlock()
}

// Err is the last error writing the file (nil if the last write worked).
func (f *ProgressFile) Err() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lastErr
}

// Close writes the last state and stops the writer.
func (f *ProgressFile) Close() error {
	f.once.Do(func() { close(f.done) })
	f.wg.Wait()
	return f.Err()
}

func (f *ProgressFile) loop() {
	defer f.wg.Done()
	t := time.NewTicker(f.interval)
	defer t.Stop()
	for {
		select {
		case <-f.done:
			f.flush()
			if f.f != nil {
				if err := f.f.Close(); err != nil {
					f.mu.Lock()
					f.lastErr = fmt.Errorf("write %s: %w", f.path, err)
					f.mu.Unlock()
				}
			}
			return
		case <-t.C:
			f.flush()
		}
	}
}

func (f *ProgressFile) flush() {
	f.mu.Lock()
	if !f.dirty {
		f.mu.Unlock()
		return
	}
	p, spend := f.cur, f.spend
	f.dirty = false
	f.mu.Unlock()
	if spend != nil {
		if b, err := json.Marshal(spend()); err == nil {
			p.Spend = b
		}
	}
	p.Started, p.Updated, p.PID = f.started, time.Now(), os.Getpid()
	err := f.write(p)
	f.mu.Lock()
	f.lastErr = err
	f.mu.Unlock()
}

// write rewrites the file in place with p.
func (f *ProgressFile) write(p Progress) error {
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	data = append(data, '\n')
	if f.f == nil {
		if f.f, err = os.OpenFile(f.path, os.O_RDWR|os.O_CREATE, 0o600); err != nil {
			f.f = nil
			return fmt.Errorf("write %s: %w", f.path, err)
		}
		f.size = -1 // unknown: truncate after the first write
	}
	if _, err := f.f.WriteAt(data, 0); err != nil {
		return fmt.Errorf("write %s: %w", f.path, err)
	}
	if len(data) != f.size {
		if err := f.f.Truncate(int64(len(data))); err != nil {
			return fmt.Errorf("write %s: %w", f.path, err)
		}
		f.size = len(data)
	}
	return nil
}

// ReadProgress reads dir/progress.json; ok is false when there is none (or
// it cannot be parsed, as when it is caught mid-write: a reader never fails
// on it).
func ReadProgress(dir string) (p Progress, ok bool) {
	data, err := os.ReadFile(filepath.Join(dir, ProgressFileName))
	if err != nil {
		return Progress{}, false
	}
	if json.Unmarshal(data, &p) != nil {
		return Progress{}, false
	}
	return p, true
}

// ProgressRow is one stage × role × model of progress.json's spend:
// tokens.json's counters, zeros left out.
type ProgressRow struct {
	Stage        string       `json:"stage"`
	Role         string       `json:"role"`
	Model        string       `json:"model"`
	Tasks        int64        `json:"tasks,omitempty"`
	FailedTasks  int64        `json:"failed_tasks,omitempty"`
	Calls        int64        `json:"calls,omitempty"`
	FailedCalls  int64        `json:"failed_calls,omitempty"`
	Retries      int64        `json:"retries,omitempty"`
	RateLimited  int64        `json:"rate_limited,omitempty"`
	Input        int64        `json:"input_tokens,omitempty"`
	Output       int64        `json:"output_tokens,omitempty"`
	CacheRead    int64        `json:"cache_read_tokens,omitempty"`
	CacheWrite   int64        `json:"cache_write_tokens,omitempty"`
	InvalidReply int64        `json:"invalid_replies,omitempty"`
	Causes       usage.Causes `json:"failure_causes,omitzero"`
}

// NewProgressRow is a stage × role × model's totals as a ProgressRow.
func NewProgressRow(stage, role, model string, t usage.Totals) ProgressRow {
	return ProgressRow{Stage: stage, Role: role, Model: model, Tasks: t.Tasks, FailedTasks: t.FailedTasks, Calls: t.Calls,
		FailedCalls: t.FailedCalls, Retries: t.Retries, RateLimited: t.RateLimited, Input: t.Input, Output: t.Output,
		CacheRead: t.CacheRead, CacheWrite: t.CacheWrite, InvalidReply: t.InvalidReply, Causes: t.Causes}
}

func (r ProgressRow) tokenRow() report.TokenRow {
	return report.TokenRow{Stage: r.Stage, Role: r.Role, Model: r.Model, Totals: usage.Totals{Tasks: r.Tasks, FailedTasks: r.FailedTasks,
		Calls: r.Calls, FailedCalls: r.FailedCalls, Retries: r.Retries, RateLimited: r.RateLimited, Input: r.Input, Output: r.Output,
		CacheRead: r.CacheRead, CacheWrite: r.CacheWrite, InvalidReply: r.InvalidReply, Causes: r.Causes}}
}
