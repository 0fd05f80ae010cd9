package skillpkg

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillfleet/skillfleet/pkg/skill"
)

func TestBundleSingleFileIsItsText(t *testing.T) {
	text := "# Skill\n\n- rule\n"
	if got := Encode(FromText(text)); got != text {
		t.Fatalf("Encode(single) = %q", got)
	}
	p, err := Decode(text)
	if err != nil || !p.SingleFile() || p.Entry() != text {
		t.Fatalf("Decode(plain) = %v, %v", p, err)
	}
}

func TestBundleRoundTrip(t *testing.T) {
	p, err := New(map[string]string{
		"SKILL.md":            entry,
		"references/units.md": "<!-- SKILLPKG FILE 3 - x -->\ntricky\n",
		"references/empty.md": "",
		"scripts/convert.py":  "print(1)", // no final newline
	}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	b := Encode(p)
	if !IsBundle(b) || !strings.HasSuffix(b, entry) {
		t.Fatalf("bundle does not end with SKILL.md:\n%s", b)
	}
	q, err := Decode(b)
	if err != nil {
		t.Fatal(err)
	}
	if q.Hash() != p.Hash() || !cmp.Equal(q.Paths(), p.Paths()) {
		t.Fatalf("round trip: %v → %v", p.Paths(), q.Paths())
	}
	// Text appended to the end of a bundle lands in SKILL.md.
	r, err := Decode(b + "\n- appended\n")
	if err != nil || !strings.HasSuffix(r.Entry(), "- appended\n") {
		t.Fatalf("append after bundle: %v", err)
	}
}

func TestBundleMalformed(t *testing.T) {
	good := Encode(mustNew(t, map[string]string{"SKILL.md": "s\n", "references/a.md": "abc"}))
	cases := map[string]string{
		"wrong length": strings.Replace(good, "FILE 3 ", "FILE 5 ", 1),
		"bad count":    strings.Replace(good, "files=2", "files=3", 1),
		"escape":       strings.Replace(good, "references/a.md", "../a.md", 1),
		"no entry":     strings.Replace(good, bundleEntry, "", 1),
		"bad flag":     strings.Replace(good, "3 - ", "3 ? ", 1),
		"binary":       strings.Replace(good, "abc", "a\x00c", 1),
	}
	for name, text := range cases {
		if _, err := Decode(text); err == nil {
			t.Errorf("%s: decoded", name)
		}
	}
}

func mustNew(t *testing.T, files map[string]string) *Package {
	t.Helper()
	p, err := New(files, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestApplyTextSingleFile: plain SKILL.md text with SKILL.md edits is
// skill.Apply exactly, bounds not applied (today's behaviour).
func TestApplyTextSingleFile(t *testing.T) {
	text := strings.Repeat("x", 70<<10) + "\n- a\n" // over DefaultLimits.MaxFileBytes
	edits := []Edit{{Op: "replace", Target: "- a", Content: "- b"}, {Op: "update", Target: "- b", Content: "- c"}}
	opts := ApplyOptions{Text: skill.ApplyOptions{NormalizeOps: true}}
	got, rows, err := ApplyText(text, edits, opts)
	if err != nil {
		t.Fatal(err)
	}
	want, wantRep := skill.Apply(text, []skill.Edit{{Op: "replace", Target: "- a", Content: "- b"}, {Op: "update", Target: "- b", Content: "- c"}}, opts.Text)
	if got != want || !cmp.Equal(SkillReports(rows), wantRep) {
		t.Fatalf("ApplyText differs from skill.Apply: %v", cmp.Diff(wantRep, SkillReports(rows)))
	}
}

func TestApplyTextBundle(t *testing.T) {
	text := Encode(mustNew(t, map[string]string{"SKILL.md": entry, "references/units.md": "# F\n"}))
	out, rows, err := ApplyText(text, []Edit{
		{File: "references/units.md", Op: "append", Content: "1 mi = 1.609 km"},
		{Op: "append", Content: "- open the reference"},
		{File: "../x", Op: "create_file", Content: "x"},
	}, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := Summarize(rows)
	if s.Applied != 2 || s.Reasons[ReasonPathEscape] != 1 {
		t.Fatalf("summary %+v", s)
	}
	p, err := Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	if u, _ := p.File("references/units.md"); u != "# F\n\n1 mi = 1.609 km\n" {
		t.Fatalf("units.md %q", u)
	}
	if !strings.HasSuffix(p.Entry(), "- open the reference\n") {
		t.Fatalf("SKILL.md %q", p.Entry())
	}
	// A plain text that gains a file becomes a bundle.
	out, _, err = ApplyText("# S\n", []Edit{{File: "references/a.md", Op: "create_file", Content: "a\n"}}, ApplyOptions{})
	if err != nil || !IsBundle(out) {
		t.Fatalf("plain + create_file: %q, %v", out, err)
	}
}

func TestReadInitAndWriteBest(t *testing.T) {
	dir := writeTree(t, map[string]string{"SKILL.md": entry, "references/units.md": "f\n"})
	text, err := ReadInit(dir, Limits{})
	if err != nil || !IsBundle(text) {
		t.Fatalf("ReadInit(dir): %v", err)
	}
	plain := filepath.Join(t.TempDir(), "seed.md")
	if err := os.WriteFile(plain, []byte("seed\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ReadInit(plain, Limits{}); err != nil || got != "seed\r\n" {
		t.Fatalf("ReadInit(file) = %q, %v", got, err)
	}
	run := t.TempDir()
	if wrote, err := WriteBest(run, "plain"); wrote || err != nil {
		t.Fatalf("WriteBest(plain) = %v, %v", wrote, err)
	}
	for _, extra := range []string{"", "- learned\n"} {
		wrote, err := WriteBest(run, text+extra)
		if !wrote || err != nil {
			t.Fatalf("WriteBest(bundle) = %v, %v", wrote, err)
		}
		p, err := Load(filepath.Join(run, BestDir), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if Encode(p) != text+extra {
			t.Fatalf("best_skill/ does not hold the bundle (extra %q)", extra)
		}
	}
	ents, _ := os.ReadDir(run)
	if len(ents) != 1 {
		t.Fatalf("run dir holds %d entries, want only best_skill/", len(ents))
	}
}

// TestBundleSurvivesProtectedRegions: the trainer's protected-region
// operations act on the whole text; on a bundle they land in SKILL.md
// (last) and leave the other files' blocks intact.
func TestBundleSurvivesProtectedRegions(t *testing.T) {
	p := mustNew(t, map[string]string{"SKILL.md": entry, "references/units.md": "# F\n"})
	b := Encode(p)
	b = skill.InjectSlowPlaceholder(b)
	b = skill.ReplaceSlowBlock(b, "- epoch lesson")
	b = skill.InjectAppendix(b)
	b = skill.FlushAppendix(b, []string{"note one"})
	cand, _, err := ApplyText(b, []Edit{{File: "references/units.md", Op: "append", Content: "1 mi = 1.609 km"}}, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	restored, _ := skill.RestoreProtected(cand, b)
	q, err := Decode(restored)
	if err != nil {
		t.Fatalf("bundle broken by protected-region operations: %v\n%s", err, restored)
	}
	if u, _ := q.File("references/units.md"); u != "# F\n\n1 mi = 1.609 km\n" {
		t.Fatalf("units.md = %q", u)
	}
	for _, want := range []string{skill.SlowStart, "- epoch lesson", skill.AppendixStart, "note one"} {
		if !strings.Contains(q.Entry(), want) {
			t.Errorf("SKILL.md lacks %q", want)
		}
	}
}

func TestOnEntryKeepsOtherFiles(t *testing.T) {
	t.Parallel()
	p, err := New(map[string]string{"SKILL.md": "# S\n", "references/a.md": "a\n\n\n\nb\n"}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	bundle := Encode(p)
	f := func(s string) string { return strings.ReplaceAll(s+"\n\n\n\nx\n", "\n\n\n", "\n") }
	out, err := OnEntry(bundle, f)
	if err != nil {
		t.Fatal(err)
	}
	q, err := Decode(out)
	if err != nil {
		t.Fatal(err)
	}
	if ref, _ := q.File("references/a.md"); ref != "a\n\n\n\nb\n" {
		t.Errorf("reference changed: %q", ref)
	}
	if q.Entry() != f("# S\n") {
		t.Errorf("entry = %q", q.Entry())
	}
	plain, err := OnEntry("# S\n", func(s string) string { return s + "y\n" })
	if err != nil || plain != "# S\ny\n" {
		t.Errorf("plain = %q, %v", plain, err)
	}
	if e, err := EntryText(out); err != nil || e != q.Entry() {
		t.Errorf("EntryText = %q, %v", e, err)
	}
	if _, err := OnEntry(bundle[:len(bundle)/2], func(s string) string { return s }); err == nil {
		t.Error("a torn bundle was accepted")
	}
}
