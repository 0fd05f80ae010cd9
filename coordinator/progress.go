package coordinator

import (
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/skillfleet/skillfleet/internal/ui"
	"github.com/skillfleet/skillfleet/pkg/usage"
)

// Progress prints what a run is doing. On a terminal it keeps one status
// line updated in place; otherwise it prints a line per phase and decision.
type Progress struct {
	w      io.Writer
	tty    bool
	tokens func() int64

	mu          sync.Mutex
	head        string
	stage       string
	total, done int
	failed      int
	cur, best   float64
	lastDraw    time.Time
	lineOpen    bool
	// waveStart is when the current wave started (Periodic's rate).
	waveStart time.Time
	perStage  map[string]int
	observe   func(stage string, done int)
	// epoch, epochs, step, steps and listen serve Listen.
	epoch, epochs, step, steps int
	listen                     func(ui.Progress)
}

// Listen installs f, called with the progress after every change (the
// dashboard's progress.json, the terminal line). f runs under the progress
// lock: it must be quick and must not call back into p.
func (p *Progress) Listen(f func(ui.Progress)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.listen = f
}

func (p *Progress) notify() {
	if p.listen != nil {
		p.listen(ui.Progress{Head: p.head, Epoch: p.epoch, Epochs: p.epochs, Step: p.step, Steps: p.steps,
			Stage: p.stage, Done: p.done, Total: p.total, Failed: p.failed, Current: p.cur, Best: p.best})
	}
}

// Observe installs a function called after every finished task with the
// task's stage and how many tasks of that stage have finished in this
// process (used by crash tests to stop a run mid-phase).
func (p *Progress) Observe(f func(stage string, done int)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.observe = f
}

// NewProgress writes to w (nil = nowhere); tty enables in-place updates.
func NewProgress(w io.Writer, tty bool) *Progress {
	if w == nil {
		w = io.Discard
	}
	return &Progress{w: w, tty: tty}
}

// SetTokens installs a function reporting tokens spent so far.
func (p *Progress) SetTokens(f func() int64) { p.tokens = f }

// Step announces a new step.
func (p *Progress) Step(epoch, epochs, step, steps int, cur, best float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.head = fmt.Sprintf("epoch %d/%d step %d/%d", epoch, epochs, step, steps)
	p.cur, p.best = cur, best
	p.epoch, p.epochs, p.step, p.steps = epoch, epochs, step, steps
	p.notify()
}

// Phase announces a phase outside the steps.
func (p *Progress) Phase(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.head = name
	p.stage = ""
	if !p.tty {
		p.println(name)
	}
	p.notify()
}

// StartWave announces a wave of tasks of one stage.
func (p *Progress) StartWave(stage string, n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stage, p.total, p.done, p.failed = stage, n, 0, 0
	p.waveStart = time.Now()
	p.draw(true)
	p.notify()
}

// TaskDone counts a finished task.
func (p *Progress) TaskDone(stage string, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done++
	if !ok {
		p.failed++
	}
	p.draw(p.done == p.total)
	p.notify()
	if p.observe != nil {
		if p.perStage == nil {
			p.perStage = map[string]int{}
		}
		p.perStage[stage]++
		p.observe(stage, p.perStage[stage])
	}
}

// Decision prints a decision line.
func (p *Progress) Decision(what string, cur, best float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cur, p.best = cur, best
	p.println(fmt.Sprintf("%s  current=%.3f best=%.3f%s", what, cur, best, p.tokenText()))
	p.notify()
}

func (p *Progress) tokenText() string {
	if p.tokens == nil {
		return ""
	}
	return fmt.Sprintf(" tokens=%s", usage.FormatCount(p.tokens()))
}

func (p *Progress) draw(force bool) {
	if !p.tty {
		return
	}
	if !force && time.Since(p.lastDraw) < 100*time.Millisecond {
		return
	}
	p.lastDraw = time.Now()
	fail := ""
	if p.failed > 0 {
		fail = fmt.Sprintf(" (%d failed)", p.failed)
	}
	fmt.Fprintf(p.w, "\r\033[K%s · %s %d/%d%s · current=%.3f best=%.3f%s", p.head, p.stage, p.done, p.total, fail, p.cur, p.best, p.tokenText())
	p.lineOpen = true
}

func (p *Progress) println(s string) {
	if p.lineOpen {
		fmt.Fprint(p.w, "\r\033[K")
		p.lineOpen = false
	}
	fmt.Fprintln(p.w, s)
}
