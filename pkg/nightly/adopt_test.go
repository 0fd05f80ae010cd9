package nightly

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

type adoptBundle struct {
	project, live, root string
	old, proposed       string
}

// stageOne stages a proposal for <project>/SKILL.md and returns the dir.
func stageOne(t *testing.T, b *adoptBundle, accepted bool) string {
	t.Helper()
	sum, _, err := FileSHA256(b.live)
	if err != nil {
		t.Fatal(err)
	}
	in := StageInput{Root: b.root, Night: 1, Started: time.Date(2026, 11, 24, 3, 17, 0, 0, time.UTC), Accepted: accepted, Action: "accept",
		ReportJSON: map[string]any{"ok": true}, ReportMD: "# night 1\n"}
	if accepted {
		in.Proposals = []Proposal{{Name: "skill", LivePath: b.live, LiveSHA256: sum, Text: b.proposed}}
	} else {
		in.Action, in.Reason = "reject", "the gate rejected the edits"
	}
	dir, err := Stage(in)
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func setupAdopt(t *testing.T, size int) *adoptBundle {
	t.Helper()
	tmp := t.TempDir()
	b := &adoptBundle{project: filepath.Join(tmp, "proj"), root: filepath.Join(tmp, "proj", ".skillfleet-sleep", "staging")}
	if err := os.MkdirAll(b.project, 0o755); err != nil {
		t.Fatal(err)
	}
	b.live = filepath.Join(b.project, "SKILL.md")
	b.old = "# old skill\n" + strings.Repeat("o", size)
	b.proposed = "# new skill\n" + strings.Repeat("n", size)
	if err := os.WriteFile(b.live, []byte(b.old), 0o644); err != nil {
		t.Fatal(err)
	}
	return b
}

func readString(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestAdoptAndUndo(t *testing.T) {
	b := setupAdopt(t, 10)
	dir := stageOne(t, b, true)
	o := AdoptOptions{StagingDir: dir, AllowedRoots: []string{b.project}}
	rec, err := Adopt(o)
	if err != nil {
		t.Fatal(err)
	}
	if got := readString(t, b.live); got != b.proposed {
		t.Fatalf("live after adopt = %q", got)
	}
	if _, err := Adopt(o); err == nil || !strings.Contains(err.Error(), "already adopted") {
		t.Fatalf("second Adopt = %v, want already adopted", err)
	}
	if len(rec.Files) != 1 || rec.Files[0].Backup == "" {
		t.Fatalf("receipt %+v", rec)
	}
	if _, err := Undo(AdoptOptions{StagingDir: dir}); err != nil {
		t.Fatal(err)
	}
	if got := readString(t, b.live); got != b.old {
		t.Fatalf("live after undo = %q", got)
	}
	if _, err := Undo(AdoptOptions{StagingDir: dir}); err == nil {
		t.Fatal("second Undo = nil error")
	}
	rs, _ := Receipts(b.root)
	if len(rs) != 1 || rs[0].UndoneAt == nil {
		t.Fatalf("receipts %+v", rs)
	}
}

func TestAdoptRefuses(t *testing.T) {
	t.Run("changed live file", func(t *testing.T) {
		b := setupAdopt(t, 10)
		dir := stageOne(t, b, true)
		if err := os.WriteFile(b.live, []byte("edited by the user"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, err := Adopt(AdoptOptions{StagingDir: dir, AllowedRoots: []string{b.project}})
		if !errors.Is(err, ErrLiveChanged) || readString(t, b.live) != "edited by the user" {
			t.Fatalf("Adopt = %v, want ErrLiveChanged and the file untouched", err)
		}
	})
	t.Run("symlinked live file", func(t *testing.T) {
		b := setupAdopt(t, 10)
		target := filepath.Join(filepath.Dir(b.project), "elsewhere.md")
		if err := os.WriteFile(target, []byte(b.old), 0o644); err != nil {
			t.Fatal(err)
		}
		os.Remove(b.live)
		if err := os.Symlink(target, b.live); err != nil {
			t.Fatal(err)
		}
		dir := stageOne(t, b, true)
		_, err := Adopt(AdoptOptions{StagingDir: dir, AllowedRoots: []string{b.project}})
		if !errors.Is(err, ErrSymlink) || readString(t, target) != b.old {
			t.Fatalf("Adopt = %v, want ErrSymlink and the target untouched", err)
		}
	})
	t.Run("path outside the allowed roots", func(t *testing.T) {
		b := setupAdopt(t, 10)
		dir := stageOne(t, b, true)
		other := t.TempDir()
		_, err := Adopt(AdoptOptions{StagingDir: dir, AllowedRoots: []string{other}})
		if !errors.Is(err, ErrOutsideRoot) {
			t.Fatalf("Adopt = %v, want ErrOutsideRoot", err)
		}
	})
	t.Run("path escape in the manifest", func(t *testing.T) {
		b := setupAdopt(t, 10)
		dir := stageOne(t, b, true)
		m := readString(t, filepath.Join(dir, "manifest.json"))
		m = strings.Replace(m, `"live_path": "`+b.live+`"`, `"live_path": "`+b.project+`/../../../etc/passwd"`, 1)
		if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(m), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := Adopt(AdoptOptions{StagingDir: dir, AllowedRoots: []string{b.project}})
		if !errors.Is(err, ErrOutsideRoot) {
			t.Fatalf("Adopt = %v, want ErrOutsideRoot", err)
		}
	})
	t.Run("tampered proposal", func(t *testing.T) {
		b := setupAdopt(t, 10)
		dir := stageOne(t, b, true)
		if err := os.WriteFile(filepath.Join(dir, "proposed_SKILL.md"), []byte("evil"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Adopt(AdoptOptions{StagingDir: dir, AllowedRoots: []string{b.project}}); !errors.Is(err, ErrTampered) {
			t.Fatalf("Adopt = %v, want ErrTampered", err)
		}
	})
	t.Run("rejected night", func(t *testing.T) {
		b := setupAdopt(t, 10)
		dir := stageOne(t, b, false)
		if _, err := Adopt(AdoptOptions{StagingDir: dir, AllowedRoots: []string{b.project}}); !errors.Is(err, ErrNotAccepted) {
			t.Fatalf("Adopt = %v, want ErrNotAccepted", err)
		}
	})
}

// TestAdoptChild is the child process of TestAdoptKill9 and
// TestAdoptPackageKill9: it adopts and pauses at the point the parent
// kills it.
func TestAdoptChild(t *testing.T) {
	dir, where := os.Getenv("SLEEP_ADOPT_CHILD_DIR"), os.Getenv("SLEEP_ADOPT_CHILD_PAUSE")
	if dir == "" {
		t.Skip("child process of TestAdoptKill9")
	}
	pause := func() {
		_ = os.WriteFile(os.Getenv("SLEEP_ADOPT_CHILD_MARK"), []byte("x"), 0o600)
		time.Sleep(time.Minute)
	}
	o := AdoptOptions{StagingDir: dir, AllowedRoots: []string{os.Getenv("SLEEP_ADOPT_CHILD_ROOT")}}
	switch where {
	case "mid-write":
		writeHook = func(path string, written int) {
			if filepath.Base(path) == "SKILL.md" && written >= 1<<20 {
				pause()
			}
		}
	case "after-write", "pkg-after-swap":
		o.afterWrite = func(int) { pause() }
	case "pkg-before-swap":
		o.beforeSwap = func(int) { pause() }
	case "pkg-mid-backup", "pkg-mid-build":
		// Pause once the second file of the backup copy (of the new tree
		// beside the live one) is written.
		in := map[string]string{"pkg-mid-backup": string(filepath.Separator) + "backup" + string(filepath.Separator), "pkg-mid-build": ".sleep-next"}[where]
		seen := map[string]bool{}
		writeHook = func(path string, _ int) {
			if strings.Contains(path, in) {
				seen[path] = true
				if len(seen) == 2 {
					pause()
				}
			}
		}
	}
	_, err := Adopt(o)
	t.Fatalf("Adopt returned (%v) instead of being killed", err)
}

func TestAdoptKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	for _, where := range []string{"mid-write", "after-write"} {
		t.Run(where, func(t *testing.T) {
			b := setupAdopt(t, 4<<20)
			dir := stageOne(t, b, true)
			killChildAt(t, dir, where, b.project)
			got := readString(t, b.live)
			want := map[string]string{"mid-write": b.old, "after-write": b.proposed}[where]
			if got != want {
				t.Fatalf("live file after kill -9 %s: %d bytes starting %q, want the %s file", where, len(got), got[:12], map[bool]string{true: "old", false: "new"}[want == b.old])
			}
			// The next adopt rolls the interrupted one back, then adopts.
			if !PendingTransaction(b.root) {
				t.Fatal("no pending transaction after the kill")
			}
			if _, err := Adopt(AdoptOptions{StagingDir: dir, AllowedRoots: []string{b.project}}); err != nil {
				t.Fatalf("Adopt after the kill: %v", err)
			}
			if readString(t, b.live) != b.proposed || PendingTransaction(b.root) {
				t.Fatal("adopt after recovery did not install the new file")
			}
		})
	}
}
