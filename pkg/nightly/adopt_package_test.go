package nightly

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

type pkgBundle struct {
	project, live, root string
	old                 map[string]string // the live package's files
	proposed            *skillpkg.Package
}

const pkgSkill = "---\nname: papers\ndescription: Paper lookups.\n---\n\nCitation formats live in references/.\n\n"

// setupPackage makes a project with a live skill package (SKILL.md and
// references/doi.md, plus n filler references) and a proposal that
// changes SKILL.md, appends to doi.md and adds references/arxiv.md.
func setupPackage(t *testing.T, n int) *pkgBundle {
	t.Helper()
	tmp := t.TempDir()
	b := &pkgBundle{project: filepath.Join(tmp, "proj"), root: filepath.Join(tmp, "proj", ".skillfleet-sleep", "staging")}
	b.live = filepath.Join(b.project, "skills", "papers")
	b.old = map[string]string{"SKILL.md": pkgSkill + "- old habit\n", "references/doi.md": "# DOIs\n\n- doi:10.x/y\n"}
	for i := range n {
		b.old["references/filler-"+string(rune('a'+i))+".md"] = strings.Repeat("filler\n", 100)
	}
	writeTree(t, b.live, b.old)
	files := map[string]string{}
	for k, v := range b.old {
		files[k] = v
	}
	files["SKILL.md"] = pkgSkill + "- old habit\n- new habit\n"
	files["references/doi.md"] += "- no URL\n"
	files["references/arxiv.md"] = "# arXiv\n\n- arXiv:YYMM.NNNNN\n"
	p, err := skillpkg.New(files, skillpkg.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	b.proposed = p
	return b
}

func stagePkg(t *testing.T, b *pkgBundle) string {
	t.Helper()
	pins, existed, err := TreePins(b.live)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := Stage(StageInput{Root: b.root, Night: 1, Started: time.Date(2026, 11, 24, 3, 17, 0, 0, time.UTC), Accepted: true, Action: "accept",
		ReportJSON: map[string]any{"ok": true}, ReportMD: "# night 1\n",
		Proposals: []Proposal{{Name: "skill", Package: true, LivePath: b.live, LiveExisted: existed, LiveFiles: pins, Text: skillpkg.Encode(b.proposed)}}})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

func (b *pkgBundle) proposedPins() map[string]string {
	out := map[string]string{}
	for _, name := range b.proposed.Paths() {
		text, _ := b.proposed.File(name)
		out[name] = SHA256Hex([]byte(text))
	}
	return out
}

func pinsOf(files map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range files {
		out[k] = SHA256Hex([]byte(v))
	}
	return out
}

// liveState says which whole tree the live directory is: "old", "new",
// "absent", or what differs from both.
func (b *pkgBundle) liveState(t *testing.T) string {
	t.Helper()
	pins, existed, err := TreePins(b.live)
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case !existed:
		return "absent"
	case pinDiff(pinsOf(b.old), pins) == "":
		return "old"
	case pinDiff(b.proposedPins(), pins) == "":
		return "new"
	}
	return "a mix: against old " + pinDiff(pinsOf(b.old), pins) + ", against new " + pinDiff(b.proposedPins(), pins)
}

func TestAdoptPackageAndUndo(t *testing.T) {
	b := setupPackage(t, 0)
	dir := stagePkg(t, b)
	m, err := ReadManifest(dir)
	if err != nil || m.Schema != ManifestSchemaPackage || len(m.Proposals) != 1 {
		t.Fatalf("manifest %+v, %v", m, err)
	}
	e := m.Proposals[0]
	if e.Kind != KindPackage || len(e.LiveFiles) != 2 || len(e.ProposedFiles) != 3 || len(e.MustNotExist) != 1 || e.MustNotExist[0] != "references/arxiv.md" {
		t.Fatalf("package entry %+v", e)
	}
	if staged, _, _ := TreePins(filepath.Join(dir, ProposedPackageDir)); pinDiff(b.proposedPins(), staged) != "" {
		t.Fatalf("staged tree %v", staged)
	}
	if err := os.Chmod(filepath.Join(b.live, "references", "doi.md"), 0o600); err != nil {
		t.Fatal(err)
	}
	o := AdoptOptions{StagingDir: dir, AllowedRoots: []string{b.live}}
	rec, err := Adopt(o)
	if err != nil {
		t.Fatal(err)
	}
	if s := b.liveState(t); s != "new" {
		t.Fatalf("live after adopt: %s", s)
	}
	if len(rec.Files) != 1 || !rec.Files[0].Package || rec.Files[0].Backup != filepath.Join(dir, "backup", "skill") {
		t.Fatalf("receipt %+v", rec)
	}
	if bk, _, _ := TreePins(rec.Files[0].Backup); pinDiff(pinsOf(b.old), bk) != "" {
		t.Fatalf("backup tree %v", bk)
	}
	for _, side := range []string{nextSibling(b.live), oldSibling(b.live)} {
		if _, err := os.Lstat(side); err == nil {
			t.Fatalf("%s left beside the live package", side)
		}
	}
	if _, err := Adopt(o); err == nil || !strings.Contains(err.Error(), "already adopted") {
		t.Fatalf("second Adopt = %v, want already adopted", err)
	}
	if _, err := Undo(AdoptOptions{StagingDir: dir}); err != nil {
		t.Fatal(err)
	}
	if s := b.liveState(t); s != "old" {
		t.Fatalf("live after undo: %s", s)
	}
	if fi, err := os.Stat(filepath.Join(b.live, "references", "doi.md")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("undo did not keep the file's mode: %v, %v", fi.Mode(), err)
	}
	rs, _ := Receipts(b.root)
	if len(rs) != 1 || rs[0].UndoneAt == nil {
		t.Fatalf("receipts %+v", rs)
	}
	// Adopt again after the undo, then edit the adopted package: undo
	// refuses to throw the edit away.
	if _, err := Adopt(o); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(b.live, "references", "arxiv.md"), []byte("mine now\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Undo(AdoptOptions{StagingDir: dir}); !errors.Is(err, ErrLiveChanged) || !strings.Contains(err.Error(), "references/arxiv.md changed") {
		t.Fatalf("Undo after an edit = %v, want ErrLiveChanged naming the file", err)
	}
}

func TestAdoptPackageCreatesAndUndoRemovesADir(t *testing.T) {
	b := setupPackage(t, 0)
	// Neither the package nor the skills directory above it exists.
	if err := os.RemoveAll(filepath.Dir(b.live)); err != nil {
		t.Fatal(err)
	}
	b.old = nil
	dir := stagePkg(t, b)
	if _, err := Adopt(AdoptOptions{StagingDir: dir, AllowedRoots: []string{b.project}}); err != nil {
		t.Fatal(err)
	}
	if s := b.liveState(t); s != "new" {
		t.Fatalf("live after adopt: %s", s)
	}
	if _, err := Undo(AdoptOptions{StagingDir: dir}); err != nil {
		t.Fatal(err)
	}
	if s := b.liveState(t); s != "absent" {
		t.Fatalf("live after undo: %s", s)
	}
}

func TestAdoptPackageRefuses(t *testing.T) {
	for _, c := range []struct {
		name  string
		after func(t *testing.T, b *pkgBundle, dir string)
		roots func(b *pkgBundle) []string
		want  error
		says  string
	}{
		{name: "a live file changed", want: ErrLiveChanged, says: "references/doi.md changed",
			after: func(t *testing.T, b *pkgBundle, _ string) {
				writeTree(t, b.live, map[string]string{"references/doi.md": "edited\n"})
			}},
		{name: "a file the proposal adds exists", want: ErrLiveChanged, says: "references/arxiv.md was added",
			after: func(t *testing.T, b *pkgBundle, _ string) {
				writeTree(t, b.live, map[string]string{"references/arxiv.md": "mine\n"})
			}},
		{name: "another file was added", want: ErrLiveChanged, says: "notes.txt was added",
			after: func(t *testing.T, b *pkgBundle, _ string) { writeTree(t, b.live, map[string]string{"notes.txt": "x"}) }},
		{name: "a live file was removed", want: ErrLiveChanged, says: "references/doi.md was removed",
			after: func(t *testing.T, b *pkgBundle, _ string) {
				if err := os.Remove(filepath.Join(b.live, "references", "doi.md")); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "a symlink in the live package", want: ErrSymlink,
			after: func(t *testing.T, b *pkgBundle, _ string) {
				if err := os.Symlink("/etc/passwd", filepath.Join(b.live, "references", "p.md")); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "the live dir is a symlink", want: ErrSymlink,
			after: func(t *testing.T, b *pkgBundle, _ string) {
				moved := b.live + "-real"
				if err := os.Rename(b.live, moved); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(moved, b.live); err != nil {
					t.Fatal(err)
				}
			}},
		{name: "a staged file was changed", want: ErrTampered,
			after: func(t *testing.T, _ *pkgBundle, dir string) {
				writeTree(t, filepath.Join(dir, ProposedPackageDir), map[string]string{"references/arxiv.md": "evil\n"})
			}},
		{name: "a staged file was added", want: ErrTampered,
			after: func(t *testing.T, _ *pkgBundle, dir string) {
				writeTree(t, filepath.Join(dir, ProposedPackageDir), map[string]string{"scripts/run.sh": "rm -rf ~\n"})
			}},
		{name: "outside the allowed roots", want: ErrOutsideRoot,
			roots: func(b *pkgBundle) []string { return []string{filepath.Join(b.project, "elsewhere")} }},
		{name: "a root inside the package does not cover it", want: ErrOutsideRoot,
			roots: func(b *pkgBundle) []string { return []string{filepath.Join(b.live, "references")} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := setupPackage(t, 0)
			dir := stagePkg(t, b)
			if c.after != nil {
				c.after(t, b, dir)
			}
			before, _, _ := TreePins(b.live)
			roots := []string{b.live}
			if c.roots != nil {
				roots = c.roots(b)
			}
			_, err := Adopt(AdoptOptions{StagingDir: dir, AllowedRoots: roots})
			if !errors.Is(err, c.want) || !strings.Contains(fmtErr(err), c.says) {
				t.Fatalf("Adopt = %v, want %v saying %q", err, c.want, c.says)
			}
			if after, _, _ := TreePins(b.live); pinDiff(before, after) != "" {
				t.Fatalf("a refused adopt changed the live package: %s", pinDiff(before, after))
			}
			if PendingTransaction(b.root) {
				t.Fatal("a refused adopt left a transaction")
			}
		})
	}
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestAdoptPackageKill9 kills an adopt of a skill package at each step and
// checks that the live directory is then the old package or the new one,
// whole, and that the next adopt rolls back and adopts, and undo restores
// the old tree.
func TestAdoptPackageKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	for _, c := range []struct{ where, want string }{
		{"pkg-mid-backup", "old"}, {"pkg-mid-build", "old"}, {"pkg-before-swap", "old"}, {"pkg-after-swap", "new"},
	} {
		t.Run(c.where, func(t *testing.T) {
			b := setupPackage(t, 6)
			dir := stagePkg(t, b)
			killChildAt(t, dir, c.where, b.live)
			if s := b.liveState(t); s != c.want {
				t.Fatalf("live package after kill -9 at %s: %s, want %s", c.where, s, c.want)
			}
			if !PendingTransaction(b.root) && c.where != "pkg-mid-backup" {
				t.Fatal("no pending transaction after the kill")
			}
			if _, err := Adopt(AdoptOptions{StagingDir: dir, AllowedRoots: []string{b.live}}); err != nil {
				t.Fatalf("Adopt after the kill: %v", err)
			}
			if s := b.liveState(t); s != "new" || PendingTransaction(b.root) {
				t.Fatalf("after recovery and adopt: %s, pending %t", s, PendingTransaction(b.root))
			}
			if _, err := Undo(AdoptOptions{StagingDir: dir}); err != nil {
				t.Fatal(err)
			}
			if s := b.liveState(t); s != "old" {
				t.Fatalf("after undo: %s", s)
			}
			if _, err := os.Lstat(nextSibling(b.live)); err == nil {
				t.Fatal("a built tree was left beside the live package")
			}
		})
	}
}

// killChildAt runs TestAdoptChild adopting dir, waits until it pauses at
// where, and kills it with SIGKILL.
func killChildAt(t *testing.T, dir, where, root string) {
	t.Helper()
	mark := filepath.Join(t.TempDir(), "paused")
	cmd := exec.Command(os.Args[0], "-test.run=^TestAdoptChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), "SLEEP_ADOPT_CHILD_DIR="+dir, "SLEEP_ADOPT_CHILD_PAUSE="+where,
		"SLEEP_ADOPT_CHILD_MARK="+mark, "SLEEP_ADOPT_CHILD_ROOT="+root)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		if _, err := os.Stat(mark); err == nil {
			break
		}
		if time.Now().After(deadline) {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			t.Fatal("child never reached the pause point")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}
