package report

import (
	"bytes"
	stdhtml "html"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

func writeBundle(t *testing.T, path string, files map[string]string) {
	t.Helper()
	p, err := skillpkg.New(files, skillpkg.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(skillpkg.Encode(p)), 0o644); err != nil {
		t.Fatal(err)
	}
}

// A package run's report shows, per step, the files the candidate added,
// removed and changed with the changed lines, in text and HTML; a
// single-file run (testdata/demo) has no package section.
func TestPackageDiff(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "demo"))); err != nil {
		t.Fatal(err)
	}
	entry := "---\nname: records\ndescription: Records.\n---\n# Records\n\n- Read the question.\n"
	writeBundle(t, filepath.Join(dir, "skills", "skill_v0000.md"), map[string]string{
		"SKILL.md": entry, "references/old.md": "# Old\n\n- gone soon\n"})
	writeBundle(t, filepath.Join(dir, "steps", "step_0001", "candidate_skill.md"), map[string]string{
		"SKILL.md":            strings.Replace(entry, "- Read the question.", "- Read the whole question.", 1) + "- Open references/units.md.\n",
		"references/units.md": "# Units\n\n- Report distances in kilometres.\n",
	})
	r, err := Load(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Packages) != 1 || r.Packages[0].Step != 1 {
		t.Fatalf("package steps = %+v, want step 1 only", r.Packages)
	}
	files := r.Packages[0].Files
	var got []string
	for _, f := range files {
		got = append(got, f.Summary())
	}
	want := []string{
		"~ SKILL.md (changed, +2 -1 lines)",
		"- references/old.md (removed, +0 -3 lines)",
		"+ references/units.md (added, +3 -0 lines)",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("file summaries:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if l := strings.Join(files[0].Lines, "\n"); l != "- - Read the question.\n+ - Read the whole question.\n+ - Open references/units.md." {
		t.Errorf("SKILL.md diff lines:\n%s", l)
	}
	var text bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"package changes per step", "step 1 (", "  + references/units.md (added, +3 -0 lines)", "      + - Report distances in kilometres."} {
		if !strings.Contains(text.String(), w) {
			t.Errorf("text report lacks %q:\n%s", w, text.String())
		}
	}
	var html bytes.Buffer
	if err := r.WriteHTML(&html); err != nil {
		t.Fatal(err)
	}
	page := stdhtml.UnescapeString(html.String())
	for _, w := range []string{`<section id="package">`, "references/units.md (added, +3 -0 lines)", "+ - Report distances in kilometres."} {
		if !strings.Contains(page, w) {
			t.Errorf("HTML report lacks %q", w)
		}
	}

	plain := setup(t, "demo")
	text.Reset()
	if err := plain.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if len(plain.Packages) > 0 || strings.Contains(text.String(), "package changes") {
		t.Error("a single-file run shows package changes")
	}
}
