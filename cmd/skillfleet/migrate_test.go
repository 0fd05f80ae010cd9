package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/rundir"
)

// TestMigrateCommand migrates a run dir without a format stamp, then finds
// nothing to do, and refuses a run dir of a newer format in one line.
func TestMigrateCommand(t *testing.T) {
	legacy := t.TempDir()
	if err := os.WriteFile(filepath.Join(legacy, rundir.EventsFile), []byte(`{"type":"baseline","current_score":0,"best_score":0}`+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := run([]string{"migrate", legacy}, &stdout, &stderr); code != exitOK {
		t.Fatalf("migrate legacy: exit %d, stderr %q", code, stderr.String())
	}
	if want := "migrated run-dir format 0 -> " + rundir.FormatVersion; !strings.Contains(stdout.String(), want) {
		t.Errorf("migrate legacy printed %q, want %q", stdout.String(), want)
	}
	stdout.Reset()
	if code := run([]string{"migrate", legacy}, &stdout, &stderr); code != exitOK || !strings.Contains(stdout.String(), "nothing to do") {
		t.Errorf("migrate again: exit %d, %q; want nothing to do", code, stdout.String())
	}

	newer := t.TempDir()
	if err := os.WriteFile(filepath.Join(newer, rundir.FormatFile), []byte(`{"run_dir_format":"2.0"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout.Reset()
	stderr.Reset()
	if code := run([]string{"migrate", newer}, &stdout, &stderr); code != exitError {
		t.Errorf("migrate newer: exit %d, want %d", code, exitError)
	}
	msg := strings.TrimSpace(stderr.String())
	if strings.Contains(msg, "\n") || !strings.Contains(msg, "2.0") || !strings.Contains(msg, rundir.FormatVersion) {
		t.Errorf("migrate newer said %q, want one line naming 2.0 and %s", msg, rundir.FormatVersion)
	}
}

// TestMigrateGoesOnPastABadDir: of three dirs the middle one is of a newer
// format; the first and the last are still migrated, the bad one is named,
// and the exit code says not everything was done.
func TestMigrateGoesOnPastABadDir(t *testing.T) {
	var dirs []string
	for i := range 3 {
		d := t.TempDir()
		if i == 1 {
			if err := os.WriteFile(filepath.Join(d, rundir.FormatFile), []byte(`{"run_dir_format":"2.0"}`), 0o644); err != nil {
				t.Fatal(err)
			}
		} else if err := os.WriteFile(filepath.Join(d, rundir.EventsFile), []byte(`{"type":"baseline","current_score":0,"best_score":0}`+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, d)
	}
	var stdout, stderr bytes.Buffer
	if code := run(append([]string{"migrate"}, dirs...), &stdout, &stderr); code != exitError {
		t.Errorf("migrate: exit %d, want %d", code, exitError)
	}
	for _, i := range []int{0, 2} {
		if want := dirs[i] + ": migrated run-dir format 0 -> "; !strings.Contains(stdout.String(), want) {
			t.Errorf("dir %d not migrated; stdout %q", i, stdout.String())
		}
	}
	if !strings.Contains(stderr.String(), dirs[1]) || !strings.Contains(stderr.String(), "1 of 3 run dirs not migrated") {
		t.Errorf("stderr %q: want the bad dir named and 1 of 3 not migrated", stderr.String())
	}
}
