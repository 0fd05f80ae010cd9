package coordinator

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"time"
)

// Wave is one batch of tasks the trainer dispatched together and waited
// for: the unit of the run's call graph. waves.jsonl lists them so that
// scripts/bench can compute the ideal wall time for the graph.
type Wave struct {
	Stage string `json:"stage"`
	// Class is target or optimizer.
	Class string `json:"class"`
	// Tasks were dispatched; Ran finished with a result in this process
	// (results recorded before a resume count as not run).
	Tasks   int   `json:"tasks"`
	Ran     int   `json:"ran"`
	StartMS int64 `json:"start_ms"`
	EndMS   int64 `json:"end_ms"`
}

type waveLog struct {
	mu    sync.Mutex
	start time.Time
	f     *os.File
}

func openWaveLog(dir string) *waveLog {
	f, err := os.Create(filepath.Join(dir, "waves.jsonl"))
	if err != nil {
		return &waveLog{start: time.Now()}
	}
	return &waveLog{start: time.Now(), f: f}
}

func (w *waveLog) record(stage, class string, tasks, ran int, start time.Time) {
	if w == nil || w.f == nil {
		return
	}
	b, _ := json.Marshal(Wave{Stage: stage, Class: class, Tasks: tasks, Ran: ran,
		StartMS: start.Sub(w.start).Milliseconds(), EndMS: time.Since(w.start).Milliseconds()})
	w.mu.Lock()
	defer w.mu.Unlock()
	_, _ = w.f.Write(append(b, '\n'))
}
