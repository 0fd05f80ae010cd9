package rundir

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestPrepareStampsANewRunDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	m, err := Prepare(dir)
	if err != nil || m != nil {
		t.Fatalf("Prepare(new dir) = %v, %v; want no migration, no error", m, err)
	}
	got, err := ReadFormat(dir)
	if err != nil || got != FormatVersion {
		t.Errorf("ReadFormat after Prepare = %q, %v; want %q", got, err, FormatVersion)
	}
	b, _ := os.ReadFile(filepath.Join(dir, FormatFile))
	if want := `{"run_dir_format":"` + FormatVersion + `"}` + "\n"; string(b) != want {
		t.Errorf("%s = %q, want %q", FormatFile, b, want)
	}
}

func TestPrepareMigratesALegacyRunDir(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, EventsFile), `{"type":"baseline","current_score":0.1,"best_score":0.1}`+"\n")
	writeFile(t, filepath.Join(dir, StateFile), `{"version":1,"config_hash":"abc"}`)
	if got, _ := ReadFormat(dir); got != legacyFormat {
		t.Fatalf("ReadFormat(no stamp, events.jsonl) = %q, want %q", got, legacyFormat)
	}
	m, err := Prepare(dir)
	if err != nil {
		t.Fatal(err)
	}
	if m == nil || m.From != legacyFormat || m.To != FormatVersion {
		t.Fatalf("Prepare(legacy) = %+v, want a migration %s -> %s", m, legacyFormat, FormatVersion)
	}
	if got, _ := ReadFormat(dir); got != FormatVersion {
		t.Errorf("ReadFormat after migration = %q, want %q", got, FormatVersion)
	}
	// The events are untouched and replay.
	d, err := Open(dir, "abc")
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if d.ExistingEvents() != 1 {
		t.Errorf("events after migration = %d, want 1", d.ExistingEvents())
	}
	if m, err := Migrate(dir); err != nil || m != nil {
		t.Errorf("Migrate(current) = %+v, %v; want nothing to do", m, err)
	}
}

func TestMigrateRefusesALegacyDirOfAnotherSchema(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, StateFile), `{"version":7}`)
	_, err := Migrate(dir)
	if err == nil || !strings.Contains(err.Error(), "schema version 7, want 1") {
		t.Fatalf("Migrate(state.json version 7) = %v, want a refusal naming the versions", err)
	}
	if _, err := os.Stat(filepath.Join(dir, FormatFile)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused migration wrote %s", FormatFile)
	}
}

func TestOpenRefusesAnotherMajorInOneLine(t *testing.T) {
	for _, tc := range []struct {
		found string
		want  []string
	}{
		{"2.0", []string{"run-dir format 2.0", "newer than this skillfleet's " + FormatVersion, "run-dir format 2.x"}},
		{"0.9", []string{"run-dir format 0.9", "cannot migrate", FormatVersion}},
	} {
		t.Run(tc.found, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, FormatFile), `{"run_dir_format":"`+tc.found+`"}`)
			writeFile(t, filepath.Join(dir, EventsFile), "not this build's events\n")
			_, err := Open(dir, "abc")
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("Open(format %s) = %v, want a *FormatError", tc.found, err)
			}
			msg := err.Error()
			if strings.Contains(msg, "\n") {
				t.Errorf("refusal is more than one line: %q", msg)
			}
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("refusal %q does not say %q", msg, w)
				}
			}
			// Nothing was read or cut: a refused run dir is left as it was.
			if b, _ := os.ReadFile(filepath.Join(dir, EventsFile)); string(b) != "not this build's events\n" {
				t.Errorf("refused run dir's events.jsonl changed to %q", b)
			}
		})
	}
}

func TestSameMajorNewerMinorResumes(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, FormatFile), `{"run_dir_format":"1.7"}`)
	if m, err := Prepare(dir); err != nil || m != nil {
		t.Errorf("Prepare(format 1.7) = %+v, %v; want it resumed as it is", m, err)
	}
	if got, _ := ReadFormat(dir); got != "1.7" {
		t.Errorf("format after Prepare = %q, want 1.7 left alone", got)
	}
}

func TestBadStampIsAnErrorNamingTheFile(t *testing.T) {
	for _, text := range []string{"{", `{"run_dir_format":"one"}`, `{}`} {
		dir := t.TempDir()
		writeFile(t, filepath.Join(dir, FormatFile), text)
		_, err := Prepare(dir)
		if err == nil || !strings.Contains(err.Error(), FormatFile) {
			t.Errorf("Prepare(%s = %q) = %v, want an error naming %s", FormatFile, text, err, FormatFile)
		}
	}
}

// TestRunIDAloneIsANewRunDir: a directory holding only run_id (and the
// lock) is one no run has written a format-dependent file to, so Prepare
// stamps it without calling that a migration.
func TestRunIDAloneIsANewRunDir(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, RunIDFile), "run-1\n")
	writeFile(t, filepath.Join(dir, "coordinator.lock"), "pid 1 on host\n")
	if got, err := ReadFormat(dir); err != nil || got != "" {
		t.Fatalf("ReadFormat(run_id only) = %q, %v; want \"\" (new)", got, err)
	}
	m, err := Prepare(dir)
	if err != nil || m != nil {
		t.Fatalf("Prepare(run_id only) = %+v, %v; want a stamp and no migration", m, err)
	}
	if got, _ := ReadFormat(dir); got != FormatVersion {
		t.Errorf("format after Prepare = %q, want %q", got, FormatVersion)
	}
}
