package coordinator_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/pkg/rundir"
)

// snapshot is every entry under dir: a file's mode and bytes, a
// directory's mode.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if d.IsDir() {
			out[rel] = fi.Mode().String()
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		out[rel] = fi.Mode().String() + " " + fi.ModTime().String() + "\n" + string(b)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestStartRefusesANewerRunDirBeforeWritingIt: Start on a run dir stamped
// with a newer run-dir major is refused with a *FormatError, and every
// file in the run dir (the lock's holder line, run_id, the events) has the
// bytes, mode and time it had before; no file or directory appeared (no
// config.yaml, splits or NATS store).
func TestStartRefusesANewerRunDirBeforeWritingIt(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	files := map[string]string{
		rundir.FormatFile:   `{"run_dir_format":"2.0"}` + "\n",
		rundir.RunIDFile:    "newer-run\n",
		rundir.EventsFile:   `{"type":"baseline","shape":"of format 2"}` + "\n",
		rundir.StateFile:    `{"version":9}`,
		"config.yaml":       "written: by a newer build\n",
		"coordinator.lock":  "pid 4242 on newer-host\n",
		"splits/train.json": "[]\n",
	}
	for name, text := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := snapshot(t, dir)
	for _, cfg := range []coordinator.Config{
		{Run: demoConfig(t), Dir: dir, Workers: 0},
		{Run: demoConfig(t), Dir: dir, Eval: &coordinator.Eval{Split: "test"}},
		{Dir: dir},
	} {
		r, err := coordinator.Start(context.Background(), cfg, coordinator.Deps{StartWorkers: simWorkers})
		if err == nil {
			r.Stop()
			_, _ = r.Wait()
			t.Fatal("Start on a run dir of format 2.0 succeeded")
		}
		var fe *rundir.FormatError
		if !errors.As(err, &fe) || fe.Found != "2.0" {
			t.Fatalf("Start = %v, want a *rundir.FormatError for format 2.0", err)
		}
		after := snapshot(t, dir)
		for name, b := range before {
			if a, ok := after[name]; !ok {
				t.Errorf("%s was removed", name)
			} else if a != b {
				t.Errorf("%s changed:\nbefore %q\nafter  %q", name, b, a)
			}
		}
		for name := range after {
			if _, ok := before[name]; !ok {
				t.Errorf("%s was written into the refused run dir", name)
			}
		}
	}
}

// TestFreshRunLogsNoMigration: a run on a new directory stamps it with
// this build's format and logs no migration (its run_id is no legacy
// marker); the same directory resumed logs none either.
func TestFreshRunLogsNoMigration(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	for round := range 2 {
		var logs bytes.Buffer
		log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		r, err := coordinator.Start(context.Background(), coordinator.Config{Dir: dir, Logger: log}, coordinator.Deps{})
		if err != nil {
			t.Fatal(err)
		}
		r.Stop()
		if _, err := r.Wait(); err != nil && !errors.Is(err, context.Canceled) {
			t.Logf("Wait: %v", err)
		}
		if strings.Contains(logs.String(), "migrated") {
			t.Errorf("round %d logged a migration:\n%s", round, logs.String())
		}
		if f, err := rundir.ReadFormat(dir); err != nil || f != rundir.FormatVersion {
			t.Errorf("round %d: format = %q, %v; want %s", round, f, err, rundir.FormatVersion)
		}
	}
}
