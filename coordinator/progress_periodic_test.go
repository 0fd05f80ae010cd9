package coordinator

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"
)

type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestPeriodicProgressLines: with output that is not a terminal, a wave
// with nothing finished prints that it waits for workers; once tasks
// finish, lines say how many of the wave are done and the time left; no
// line is printed between waves, nor after stop.
func TestPeriodicProgressLines(t *testing.T) {
	var buf lockedBuf
	p := NewProgress(&buf, false)
	p.SetTokens(func() int64 { return 1234 })
	p.Step(1, 3, 2, 9, 0.5, 0.6)
	stop := p.Periodic(20 * time.Millisecond)
	defer stop()
	time.Sleep(60 * time.Millisecond)
	if s := buf.String(); s != "" {
		t.Errorf("lines with no wave running: %q", s)
	}
	p.StartWave("gate", 4)
	waitFor(t, &buf, "gate 0/4 · waiting for workers")
	p.TaskDone("gate", true)
	p.TaskDone("gate", false)
	waitFor(t, &buf, "gate 2/4 (1 failed)")
	if s := buf.String(); !strings.Contains(s, "epoch 1/3 step 2/9") || !strings.Contains(s, "left") || !strings.Contains(s, "tokens=1.2k") {
		t.Errorf("progress lines lack the step, the time left or the spend:\n%s", s)
	}
	p.TaskDone("gate", true)
	p.TaskDone("gate", true)
	stop()
	n := len(buf.String())
	time.Sleep(60 * time.Millisecond)
	if len(buf.String()) != n {
		t.Errorf("lines after the wave ended and stop: %q", buf.String()[n:])
	}
	// A terminal's progress draws in place: Periodic does nothing there.
	tty := NewProgress(&buf, true)
	tty.Periodic(time.Millisecond)()
}

func waitFor(t *testing.T, buf *lockedBuf, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !strings.Contains(buf.String(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in:\n%s", want, buf.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}
