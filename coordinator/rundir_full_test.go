package coordinator_test

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/internal/fleettest"
	"github.com/skillfleet/skillfleet/internal/testfs"
)

// TestFullDiskStopsCleanlyAndResumes trains the demo into a run dir on a
// 96 KiB tmpfs: the run must end with an error naming the run dir and "no
// space left" (not a panic). With the tmpfs grown, the same command in the
// same dir resumes and ends exactly like the golden demo run. The hub's
// journal is kept elsewhere (it stalls on a full disk: not handled here).
func TestFullDiskStopsCleanlyAndResumes(t *testing.T) {
	if testing.Short() {
		t.Skip("trains the demo")
	}
	if os.Geteuid() != 0 {
		t.Skip("mounting a tmpfs needs root")
	}
	t.Parallel()
	mnt := testfs.Tmpfs(t, "96k")
	// The hub's task journal (package dispatch) stays on a roomy disk:
	// this test is about the trainer's files.
	r := &fleettest.Runner{NATS: fleettest.NATS(t), HubDir: t.TempDir()}
	dir := filepath.Join(mnt, "run")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := r.Run(t, dir, fleettest.Demo, nil)
	if err == nil {
		t.Fatal("a run on a 96 KiB disk succeeded")
	}
	if msg := err.Error(); !strings.Contains(msg, "run dir "+dir) || !strings.Contains(msg, "no space left") || strings.Contains(msg, "\n") {
		t.Errorf("error = %q, want one line naming the run dir and no space left", msg)
	}
	testfs.Resize(t, mnt, "64m")
	if _, err := r.Run(t, dir, fleettest.Demo, nil); err != nil {
		t.Fatalf("resume once space is back: %v", err)
	}
	for _, file := range []string{"events.jsonl", "best_skill.md"} {
		got, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(filepath.Join("testdata", "golden", "demo."+file))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("resumed %s differs from the golden demo run: %s", file, firstDiff(got, want))
		}
	}
}
