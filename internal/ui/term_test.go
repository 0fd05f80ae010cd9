package ui

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestTermLine(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	usd := 0.8421
	p := Progress{Head: "epoch 1/4 step 3/40", Epoch: 1, Epochs: 4, Step: 3, Steps: 40, Stage: "rollout", Done: 10, Total: 40,
		Current: 0.4123, Best: 0.45, StageStart: now.Add(-10 * time.Second)}
	got := TermLine(p, now, 14*time.Minute, true, 1_234_567, &usd, 0)
	want := "epoch 1/4 step 3/40 · rollout 10/40 · ETA 14m00s, wave 30s · cur 0.412 best 0.450 · 1.23M tok $0.84"
	if got != want {
		t.Errorf("line\n got %q\nwant %q", got, want)
	}
	p2 := Progress{Head: "baseline evaluation", Stage: "baseline", Done: 3, Total: 40, Failed: 1}
	if got := TermLine(p2, now, 0, false, -1, nil, 0); got != "baseline evaluation · baseline 3/40 (1 failed) · cur 0.000 best 0.000" {
		t.Errorf("phase line %q", got)
	}
	if got := TermLine(p, now, 0, false, 5, nil, 20); len([]rune(got)) != 20 || !strings.HasSuffix(got, "…") {
		t.Errorf("cut line %q", got)
	}
}

func TestTerminalKeepsLineBelowPlainLines(t *testing.T) {
	var buf bytes.Buffer
	term := NewTerminal(&buf)
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	term.now = func() time.Time { return clock }
	term.SetSpend(func() (int64, *float64) { return 2000, nil })
	term.Update(Progress{Head: "epoch 1/1 step 1/4", Epoch: 1, Epochs: 1, Step: 1, Steps: 4, Stage: "rollout", Total: 8})
	clock = clock.Add(10 * time.Second)
	term.Update(Progress{Head: "epoch 1/1 step 2/4", Epoch: 1, Epochs: 1, Step: 2, Steps: 4, Stage: "rollout", Total: 8})
	if _, err := term.Write([]byte("step 1: accept  current=0.5 best=0.5\n")); err != nil {
		t.Fatal(err)
	}
	term.Close()
	out := buf.String()
	// The plain line is written after clearing the status line, which is
	// then drawn again; step 2 of 4 after one 10 s step: ETA 30 s.
	if !strings.Contains(out, "\r\033[Kstep 1: accept  current=0.5 best=0.5\n\r\033[Kstep 2/4") {
		t.Errorf("output %q", out)
	}
	if !strings.Contains(out, "ETA 30s") || !strings.Contains(out, "2.0k tok") {
		t.Errorf("no ETA or spend in %q", out)
	}
	if !strings.HasSuffix(out, "\r\033[K") {
		t.Errorf("Close did not clear the line: %q", out)
	}
}

// TestTerminalText: a fixed text line (a campaign's) is drawn in place,
// cut to the width, and plain lines still scroll above it.
func TestTerminalText(t *testing.T) {
	var buf bytes.Buffer
	term := NewTerminal(&buf)
	term.Width = 30
	term.SetSpend(func() (int64, *float64) { t.Error("a text line asked for the run's spend"); return 0, nil })
	term.SetText("campaign: cells 1/4 done · 2 running · 1 queued")
	if _, err := term.Write([]byte("cell c: started\n")); err != nil {
		t.Fatal(err)
	}
	term.SetText("campaign: cells 2/4 done")
	term.Close()
	want := "\r\033[Kcampaign: cells 1/4 done · 2 …" + "\r\033[Kcell c: started\n" + "\r\033[Kcampaign: cells 1/4 done · 2 …" +
		"\r\033[Kcampaign: cells 2/4 done" + "\r\033[K"
	if got := buf.String(); got != want {
		t.Errorf("output\n got %q\nwant %q", got, want)
	}
}
