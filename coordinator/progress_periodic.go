package coordinator

import (
	"fmt"
	"sync"
	"time"
)

// Periodic makes a progress that does not draw in place (output that is
// not a terminal: nohup, CI, a pipe) print a line every interval while a
// wave of tasks runs: the stage's tasks done of its total, the time left
// at the wave's rate so far and the tokens spent; while no task of the
// wave has finished, that it waits for workers. It returns the function
// that stops it.
func (p *Progress) Periodic(interval time.Duration) (stop func()) {
	if p.tty || interval <= 0 {
		return func() {}
	}
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				p.periodicLine(now)
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done) }) }
}

func (p *Progress) periodicLine(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.total == 0 || p.done >= p.total {
		return
	}
	elapsed := now.Sub(p.waveStart)
	head := p.head
	if head != "" {
		head += " · "
	}
	fail := ""
	if p.failed > 0 {
		fail = fmt.Sprintf(" (%d failed)", p.failed)
	}
	if p.done == 0 {
		p.println(fmt.Sprintf("  %s%s 0/%d · waiting for workers: no task finished in %s%s", head, p.stage, p.total, elapsed.Round(time.Second), p.tokenText()))
		return
	}
	left := time.Duration(float64(elapsed) / float64(p.done) * float64(p.total-p.done))
	p.println(fmt.Sprintf("  %s%s %d/%d%s · %s elapsed, about %s left%s", head, p.stage, p.done, p.total, fail,
		elapsed.Round(time.Second), left.Round(time.Second), p.tokenText()))
}
