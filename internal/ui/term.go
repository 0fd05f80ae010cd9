package ui

import (
	"bytes"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// Terminal keeps one live status line at the bottom of a terminal (step,
// stage, done/total, ETA, spend) while plain lines written through it
// (phases, decisions) scroll above it. Hook it in with
//
//	term := ui.NewTerminal(os.Stdout)
//	prog := coordinator.NewProgress(term, false) // plain lines go through term
//	prog.Listen(term.Update)
//	defer term.Close()
//
// When stdout is not a terminal, do not use it: plain lines are the output.
type Terminal struct {
	w io.Writer
	// Width is the line's width in columns (0: 120). Lines are cut to it
	// so that they never wrap.
	Width int

	mu       sync.Mutex
	cur      Progress
	text     string // a fixed line set with SetText, instead of cur
	have     bool
	spend    func() (int64, *float64)
	drawn    bool
	lastDraw time.Time
	// step timing for the ETA
	stepStart  time.Time
	stepsTimed int
	stepsTime  time.Duration
	stageStart time.Time
	now        func() time.Time
}

// NewTerminal draws on w.
func NewTerminal(w io.Writer) *Terminal {
	return &Terminal{w: w, now: time.Now}
}

// SetSpend installs a function returning the tokens (input + output) and
// dollars (nil: unpriced) spent so far.
func (t *Terminal) SetSpend(fn func() (tokens int64, usd *float64)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.spend = fn
}

// Update takes the latest progress and redraws (at most every 100ms,
// except when a wave starts or ends).
func (t *Terminal) Update(p Progress) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.now()
	if p.Step != t.cur.Step && p.Step > 0 {
		if !t.stepStart.IsZero() && p.Step == t.cur.Step+1 {
			t.stepsTimed++
			t.stepsTime += now.Sub(t.stepStart)
		}
		t.stepStart = now
	}
	force := p.Stage != t.cur.Stage || p.Total != t.cur.Total || p.Done == p.Total
	if force || p.Done < t.cur.Done {
		t.stageStart = now
	}
	p.StageStart = t.stageStart
	t.cur, t.have = p, true
	if !force && now.Sub(t.lastDraw) < 100*time.Millisecond {
		return
	}
	t.draw(now)
}

// eta is the time left in the run: the mean step time of the steps seen
// × the steps left, less the current step's elapsed time.
func (t *Terminal) eta(now time.Time) (time.Duration, bool) {
	p := t.cur
	if t.stepsTimed == 0 || p.Steps == 0 || p.Step == 0 {
		return 0, false
	}
	mean := t.stepsTime / time.Duration(t.stepsTimed)
	left := mean*time.Duration(p.Steps-p.Step+1) - now.Sub(t.stepStart)
	return max(left, 0), true
}

func (t *Terminal) draw(now time.Time) {
	if !t.have {
		return
	}
	tokens, usd := int64(-1), (*float64)(nil)
	if t.spend != nil && t.text == "" {
		tokens, usd = t.spend()
	}
	var line string
	if t.text != "" {
		line = cut(t.text, t.Width)
	} else {
		eta, ok := t.eta(now)
		line = TermLine(t.cur, now, eta, ok, tokens, usd, t.Width)
	}
	fmt.Fprint(t.w, "\r\033[K"+line)
	t.drawn, t.lastDraw = true, now
}

// SetText shows text as the status line, in place of a run's progress
// (a campaign's cells and spend), and redraws it now.
func (t *Terminal) SetText(text string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.text, t.have = text, text != "" || t.have
	t.draw(t.now())
}

// Write writes plain lines above the status line.
func (t *Terminal) Write(b []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.drawn {
		if _, err := io.WriteString(t.w, "\r\033[K"); err != nil {
			return 0, err
		}
		t.drawn = false
	}
	n, err := t.w.Write(b)
	if err == nil && bytes.HasSuffix(b, []byte("\n")) {
		t.draw(t.now())
	}
	return n, err
}

// Close ends the status line so that what follows starts on a new line.
func (t *Terminal) Close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.drawn {
		fmt.Fprint(t.w, "\r\033[K")
		t.drawn = false
	}
}

// TermLine is the status line: "step 3/40 · rollout 12/40 · ETA 14m (wave
// 20s) · cur 0.412 best 0.450 · 1.2M tok $0.84", cut to width columns.
func TermLine(p Progress, now time.Time, eta time.Duration, etaOK bool, tokens int64, usd *float64, width int) string {
	var parts []string
	if p.Steps > 0 && p.Step > 0 {
		s := fmt.Sprintf("step %d/%d", p.Step, p.Steps)
		if p.Epochs > 1 {
			s = fmt.Sprintf("epoch %d/%d ", p.Epoch, p.Epochs) + s
		}
		parts = append(parts, s)
	}
	if p.Head != "" && (p.Step == 0 || !strings.HasPrefix(p.Head, "epoch ")) {
		parts = append(parts, p.Head)
	}
	if p.Stage != "" {
		s := fmt.Sprintf("%s %d/%d", p.Stage, p.Done, p.Total)
		if p.Failed > 0 {
			s += fmt.Sprintf(" (%d failed)", p.Failed)
		}
		parts = append(parts, s)
	}
	var e []string
	if etaOK {
		e = append(e, "ETA "+shortDur(eta))
	}
	if w, ok := p.StageETA(now); ok && p.Done < p.Total {
		e = append(e, "wave "+shortDur(w))
	}
	if len(e) > 0 {
		parts = append(parts, strings.Join(e, ", "))
	}
	parts = append(parts, fmt.Sprintf("cur %.3f best %.3f", p.Current, p.Best))
	if tokens >= 0 {
		s := shortCount(tokens) + " tok"
		if usd != nil {
			s += fmt.Sprintf(" $%.2f", *usd)
		}
		parts = append(parts, s)
	}
	return cut(strings.Join(parts, " · "), width)
}

// cut shortens line to width columns (0: 120) so that it never wraps.
func cut(line string, width int) string {
	if width <= 0 {
		width = 120
	}
	if utf8.RuneCountInString(line) > width {
		r := []rune(line)
		line = string(r[:width-1]) + "…"
	}
	return line
}

func shortDur(d time.Duration) string {
	s := int(d.Round(time.Second).Seconds())
	switch {
	case s >= 3600:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	case s >= 60:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	return fmt.Sprintf("%ds", s)
}

func shortCount(n int64) string {
	switch {
	case n >= 1_000_000:
		return fmt.Sprintf("%.2fM", float64(n)/1e6)
	case n >= 1_000:
		return fmt.Sprintf("%.1fk", float64(n)/1e3)
	}
	return fmt.Sprint(n)
}
