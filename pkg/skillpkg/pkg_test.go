package skillpkg

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillfleet/skillfleet/pkg/skill"
)

const entry = "---\nname: units\ndescription: Convert units; open references/units.md for factors.\n---\n# Units\n\nSee references/units.md.\n"

// writeTree writes files (path → text) below a fresh directory.
func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func reasonOf(t *testing.T, err error) Reason {
	t.Helper()
	var re *RefusalError
	if !errors.As(err, &re) {
		t.Fatalf("error %v is not a *RefusalError", err)
	}
	return re.Reason
}

func TestLoadDirectory(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"SKILL.md":            entry,
		"references/units.md": "# Factors\n\n1 mile = 1.609 km\n",
		"scripts/check.py":    "print('ok')\n",
	})
	p, err := Load(dir, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Paths(), []string{"SKILL.md", "references/units.md", "scripts/check.py"}; !cmp.Equal(got, want) {
		t.Fatalf("Paths = %v, want %v", got, want)
	}
	fm, err := p.FrontMatter()
	if err != nil {
		t.Fatal(err)
	}
	if fm.Name != "units" || !strings.HasPrefix(fm.Description, "Convert units") {
		t.Fatalf("front matter = %+v", fm)
	}
	if !p.Executable("scripts/check.py") || p.Executable("references/units.md") {
		t.Fatal("scripts/ files should be executable, references/ not")
	}
	if p.SingleFile() {
		t.Fatal("three-file package reported single-file")
	}
}

func TestLoadSingleFileHashUnchanged(t *testing.T) {
	text := "# Skill\n\nRule one.\n"
	f := filepath.Join(t.TempDir(), "seed.md")
	if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := Load(f, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if !p.SingleFile() || p.Entry() != text {
		t.Fatalf("single file loaded as %v", p.Paths())
	}
	if p.Hash() != skill.Hash(text) {
		t.Fatalf("single-file package hash %s != skill.Hash %s", p.Hash(), skill.Hash(text))
	}
}

func TestHashSeesEveryFile(t *testing.T) {
	base, err := New(map[string]string{"SKILL.md": entry, "references/a.md": "a\n"}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	variants := []map[string]string{
		{"SKILL.md": entry, "references/a.md": "b\n"},
		{"SKILL.md": entry, "references/b.md": "a\n"},
		{"SKILL.md": entry, "references/a.md": "a\n", "references/c.md": ""},
		{"SKILL.md": entry + "x", "references/a.md": "a\n"},
	}
	seen := map[string]int{base.Hash(): -1}
	for i, v := range variants {
		p, err := New(v, Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if j, dup := seen[p.Hash()]; dup {
			t.Fatalf("variant %d hashes as %d: %s", i, j, p.Hash())
		}
		seen[p.Hash()] = i
	}
	again, _ := New(map[string]string{"references/a.md": "a\n", "SKILL.md": entry}, Limits{})
	if again.Hash() != base.Hash() {
		t.Fatal("hash depends on map order")
	}
	if len(base.Hash()) != 16 {
		t.Fatalf("hash %q is not 16 hex characters", base.Hash())
	}
}

func TestLoadRefusals(t *testing.T) {
	small := Limits{MaxFiles: 3, MaxFileBytes: 100, MaxTotalBytes: 150}
	cases := []struct {
		name  string
		setup func(t *testing.T) string
		lim   Limits
		want  Reason
	}{
		{"symlink", func(t *testing.T) string {
			dir := writeTree(t, map[string]string{"SKILL.md": entry})
			if err := os.Symlink("/etc/passwd", filepath.Join(dir, "leak.md")); err != nil {
				t.Fatal(err)
			}
			return dir
		}, Limits{}, ReasonSymlink},
		{"symlinked dir", func(t *testing.T) string {
			dir := writeTree(t, map[string]string{"SKILL.md": entry})
			if err := os.Symlink(t.TempDir(), filepath.Join(dir, "references")); err != nil {
				t.Fatal(err)
			}
			return dir
		}, Limits{}, ReasonSymlink},
		{"NUL byte", func(t *testing.T) string {
			return writeTree(t, map[string]string{"SKILL.md": entry, "references/x.md": "a\x00b"})
		}, Limits{}, ReasonBinary},
		{"invalid UTF-8", func(t *testing.T) string {
			return writeTree(t, map[string]string{"SKILL.md": entry, "scripts/x.py": "\xff\xfe"})
		}, Limits{}, ReasonBinary},
		{"hidden file", func(t *testing.T) string {
			return writeTree(t, map[string]string{"SKILL.md": entry, ".env": "TOKEN=x"})
		}, Limits{}, ReasonBadPath},
		{"no SKILL.md", func(t *testing.T) string {
			return writeTree(t, map[string]string{"README.md": "x"})
		}, Limits{}, ReasonNoEntry},
		{"bad front matter", func(t *testing.T) string {
			return writeTree(t, map[string]string{"SKILL.md": "---\nname: [x\n---\n"})
		}, Limits{}, ReasonFrontMatter},
		{"unclosed front matter", func(t *testing.T) string {
			return writeTree(t, map[string]string{"SKILL.md": "---\nname: x\n"})
		}, Limits{}, ReasonFrontMatter},
		{"file too large", func(t *testing.T) string {
			return writeTree(t, map[string]string{"SKILL.md": "x", "references/a.md": strings.Repeat("a", 101)})
		}, small, ReasonFileTooLarge},
		{"too many files", func(t *testing.T) string {
			return writeTree(t, map[string]string{"SKILL.md": "x", "a.md": "a", "b.md": "b", "c.md": "c"})
		}, small, ReasonTooManyFiles},
		{"total too large", func(t *testing.T) string {
			return writeTree(t, map[string]string{"SKILL.md": strings.Repeat("s", 80), "a.md": strings.Repeat("a", 80)})
		}, small, ReasonTotalTooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(c.setup(t), c.lim)
			if err == nil {
				t.Fatal("loaded; want a refusal")
			}
			if got := reasonOf(t, err); got != c.want {
				t.Fatalf("reason %s, want %s (%v)", got, c.want, err)
			}
		})
	}
}

func TestCheckPath(t *testing.T) {
	cases := map[string]Reason{
		"SKILL.md":              "",
		"references/units.md":   "",
		"scripts/check.py":      "",
		"../x.md":               ReasonPathEscape,
		"references/../../x.md": ReasonPathEscape,
		`references\..\..\x`:    ReasonPathEscape,
		"/etc/passwd":           ReasonAbsolutePath,
		`C:\x`:                  ReasonAbsolutePath,
		`\\server\x`:            ReasonAbsolutePath,
		"":                      ReasonBadPath,
		"./SKILL.md":            ReasonBadPath,
		"references//a.md":      ReasonBadPath,
		"references/":           ReasonBadPath,
		".git/config":           ReasonBadPath,
		"a\nb.md":               ReasonBadPath,
		`a\b.md`:                ReasonBadPath,
	}
	for p, want := range cases {
		err := CheckPath(p)
		if want == "" {
			if err != nil {
				t.Errorf("CheckPath(%q) = %v, want nil", p, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("CheckPath(%q) = nil, want %s", p, want)
			continue
		}
		if got := reasonOf(t, err); got != want {
			t.Errorf("CheckPath(%q) reason %s, want %s", p, got, want)
		}
	}
}

func TestWriteRoundTrip(t *testing.T) {
	p, err := New(map[string]string{
		"SKILL.md":            entry,
		"references/units.md": "factors\n",
		"scripts/check.sh":    "#!/bin/sh\necho ok\n",
	}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "best_skill")
	if err := Write(p, out); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(filepath.Join(out, "scripts", "check.sh"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o755 {
		t.Fatalf("script mode %v, want 0755", st.Mode().Perm())
	}
	q, err := Load(out, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if q.Hash() != p.Hash() {
		t.Fatalf("round trip changed the hash: %s → %s", p.Hash(), q.Hash())
	}
	ents, _ := os.ReadDir(filepath.Dir(out))
	if len(ents) != 1 {
		t.Fatalf("temporary directory left behind: %v", ents)
	}
	if err := Write(p, out); err == nil {
		t.Fatal("Write over a non-empty directory succeeded")
	}
	link := filepath.Join(t.TempDir(), "link")
	if err := os.Symlink(t.TempDir(), link); err != nil {
		t.Fatal(err)
	}
	if err := Write(p, link); err == nil || reasonOf(t, err) != ReasonSymlink {
		t.Fatalf("Write through a symlink: %v, want a symlink refusal", err)
	}
}

// TestShippedSeedPackage: the seed package under configs/packages loads
// and names itself.
func TestShippedSeedPackage(t *testing.T) {
	p, err := Load(filepath.Join("..", "..", "configs", "packages", "records_seed"), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	fm, err := p.FrontMatter()
	if err != nil || fm.Name != "archived-records" || fm.Description == "" {
		t.Fatalf("front matter %+v, %v", fm, err)
	}
	if _, ok := p.File("references/rules.md"); !ok {
		t.Fatalf("files %v", p.Paths())
	}
}
