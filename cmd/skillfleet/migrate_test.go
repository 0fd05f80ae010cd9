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
