package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/internal/testfs"
)

// TestFullDiskStopsTheCommand runs `skillfleet train` on the demo with its
// run dir (which also holds the result journal and the embedded NATS
// store) on tmpfs file systems of several sizes, so that the disk fills at
// different points: before the run starts, during it through the free-space
// watch, and in the result journal mid-wave. Each time the command must
// exit 1 within the timeout with one line naming the run dir and the lack
// of space; with the file system grown, the same command resumes and ends
// exactly like the golden demo run.
func TestFullDiskStopsTheCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the demo four times")
	}
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	t.Parallel()
	root := repoRoot(t)
	golden, err := os.ReadFile(filepath.Join(root, "coordinator", "testdata", "golden", "demo.best_skill.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, size := range []string{"256k", "2m"} {
		t.Run(size, func(t *testing.T) {
			mnt := testfs.Tmpfs(t, size)
			dir := filepath.Join(mnt, "run")
			run := func() (string, error) {
				ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, binary, "train", "--config", "configs/demo.yaml", "--out", dir)
				cmd.Dir = root
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				err := cmd.Run()
				if ctx.Err() != nil {
					t.Fatalf("train on a full disk did not end within 3 minutes:\n%s", tailLines(stderr.String(), 20))
				}
				return stderr.String(), err
			}
			stderr, err := run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("train on a %s disk: %v, want exit 1\n%s", size, err, tailLines(stderr, 20))
			}
			last := lastLine(stderr)
			if !strings.Contains(last, dir) || !strings.Contains(last, "no space left") {
				t.Errorf("last line %q: want it to name %s and no space left", last, dir)
			}
			testfs.Resize(t, mnt, "64m")
			if stderr, err := run(); err != nil {
				t.Fatalf("resume once space is back: %v\n%s", err, tailLines(stderr, 20))
			}
			got, err := os.ReadFile(filepath.Join(dir, "best_skill.md"))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, golden) {
				t.Errorf("resumed best_skill.md differs from the golden demo run")
			}
		})
	}
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return lines[len(lines)-1]
}
