package rundir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/internal/testfs"
)

func score(v float64) *float64 { return &v }

func TestEmitResumeAndTornTail(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d, err := Open(dir, "h1")
	if err != nil {
		t.Fatal(err)
	}
	evs := []Event{
		{Type: "baseline", CurrentScore: 0.5, BestScore: 0.5},
		{Type: "step", Step: 1, Action: "accept", CandidateScore: score(0.6), CurrentScore: 0.6, BestScore: 0.6},
		{Type: "step", Step: 2, Action: "reject", CandidateScore: score(0.4), CurrentScore: 0.6, BestScore: 0.6},
	}
	for _, ev := range evs {
		if err := d.Emit(ev); err != nil {
			t.Fatal(err)
		}
	}
	if d.Resuming() || len(d.Emitted()) != 3 {
		t.Errorf("fresh dir: Resuming %v, Emitted %d", d.Resuming(), len(d.Emitted()))
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	// A crash mid-line leaves a torn tail.
	f, err := os.OpenFile(filepath.Join(dir, EventsFile), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"type":"step","ste`)
	_ = f.Close()

	d, err = Open(dir, "h1")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if !d.Resuming() || d.ExistingEvents() != 3 {
		t.Fatalf("reopened: Resuming %v, ExistingEvents %d; want true, 3", d.Resuming(), d.ExistingEvents())
	}
	for _, ev := range evs[:2] {
		if err := d.Emit(ev); err != nil {
			t.Fatalf("replay: %v", err)
		}
	}
	diverged := evs[2]
	diverged.Action = "accept"
	if err := d.Emit(diverged); err == nil || !strings.Contains(err.Error(), "line 3") {
		t.Errorf("a diverging replay = %v, want an error naming line 3", err)
	}
	if err := d.Emit(evs[2]); err != nil {
		t.Fatal(err)
	}
	if err := d.Emit(Event{Type: "final", CurrentScore: 0.6, BestScore: 0.6}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(dir, EventsFile))
	if n := strings.Count(string(data), "\n"); n != 4 || strings.Contains(string(data), `"ste`+"\n") {
		t.Errorf("events.jsonl has %d lines (torn tail kept?):\n%s", n, data)
	}
}

func TestOpenRefusesAnotherConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := WriteAtomic(filepath.Join(dir, StateFile), []byte(`{"config_hash":"old"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, "new"); !errors.Is(err, ErrConfigChanged) || !strings.Contains(err.Error(), dir) {
		t.Errorf("Open with another config = %v, want ErrConfigChanged naming the dir", err)
	}
}

func TestFenceRefusesEvents(t *testing.T) {
	t.Parallel()
	d, err := Open(t.TempDir(), "h")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	lost := errors.New("lease lost")
	d.SetFence(func() error { return lost })
	if err := d.Emit(Event{Type: "baseline"}); !errors.Is(err, lost) {
		t.Errorf("Emit behind a failing fence = %v, want it refused", err)
	}
	if len(d.Emitted()) != 0 || d.Failed() != nil {
		t.Errorf("refused event: Emitted %d, Failed %v; want 0, nil", len(d.Emitted()), d.Failed())
	}
}

// TestWriteErrorIsKept: a write that fails (here a read-only directory)
// returns an error naming the run dir and the file, and from then on the
// run dir refuses new events.
func TestWriteErrorIsKept(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	d, err := Open(dir, "h")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.WriteJSON(StepFile(1, StepRecordFile), map[string]int{"step": 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "steps", "step_0001", "record.json")); err != nil {
		t.Fatal(err)
	}
	ro := filepath.Join(dir, "ro")
	if err := os.Mkdir(ro, 0o555); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		// root writes through mode bits: make the directory a file instead.
		_ = os.Remove(ro)
		if err := os.WriteFile(ro, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	err = d.WriteFile("ro/skill.md", "text")
	if err == nil || !strings.Contains(err.Error(), "run dir "+dir) || !strings.Contains(err.Error(), "ro/skill.md") {
		t.Fatalf("WriteFile into an unwritable dir = %v, want an error naming the run dir and file", err)
	}
	if d.Failed() == nil || d.Emit(Event{Type: "baseline"}) == nil {
		t.Errorf("after a write error: Failed %v, and Emit still accepted an event", d.Failed())
	}
	if err := d.WriteJSON("x.json", func() {}); err == nil || strings.Contains(err.Error(), "run dir") {
		t.Errorf("WriteJSON(unencodable) = %v, want an encode error", err)
	}
}

// TestFullDisk fills a 64 KiB tmpfs: the atomic write fails with "no
// space left", leaves the previous file intact and no temporary behind.
func TestFullDisk(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	mnt := testfs.Tmpfs(t, "64k")
	d, err := Open(mnt, "h")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if err := d.WriteFile(BestSkillFile, "v1"); err != nil {
		t.Fatal(err)
	}
	err = d.WriteFile(BestSkillFile, strings.Repeat("x", 256<<10))
	if err == nil || !strings.Contains(err.Error(), "no space left") {
		t.Fatalf("a 256 KiB write on a 64 KiB disk = %v, want no space left", err)
	}
	if b, _ := os.ReadFile(filepath.Join(mnt, BestSkillFile)); string(b) != "v1" {
		t.Errorf("best_skill.md = %q after the failed write, want the previous v1", b)
	}
	if tmps, _ := filepath.Glob(filepath.Join(mnt, ".tmp-*")); len(tmps) != 0 {
		t.Errorf("temporary files left: %v", tmps)
	}
	if d.Emit(Event{Type: "baseline"}) == nil {
		t.Error("Emit accepted an event after the failed write")
	}
}

func TestNames(t *testing.T) {
	t.Parallel()
	if got := StepFile(7, StepRecordFile); got != "steps/step_0007/record.json" {
		t.Errorf("StepFile = %q", got)
	}
	if got := SkillFile(12); got != "skills/skill_v0012.md" {
		t.Errorf("SkillFile = %q", got)
	}
	if m, _ := filepath.Match(StepRecordGlob, StepFile(3, StepRecordFile)); !m {
		t.Errorf("StepRecordGlob %q does not match %q", StepRecordGlob, StepFile(3, StepRecordFile))
	}
}
