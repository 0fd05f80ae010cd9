package skillpkg

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillfleet/skillfleet/pkg/skill"
)

// TestSingleFileEditsMatchSkillApply: on a single-file package, edits with
// no File give the text and statuses of skill.Apply on the text.
func TestSingleFileEditsMatchSkillApply(t *testing.T) {
	text := "# Skill\n\n## Rules\n- one\n- two\n<!-- APPENDIX_START -->\n## Execution Notes Appendix\n- note\n<!-- APPENDIX_END -->\n"
	edits := []skill.Edit{
		{Op: "append", Content: "  - three  "},
		{Op: "insert_after", Target: "- one", Content: "- one and a half"},
		{Op: "replace", Target: "- two", Content: "- TWO"},
		{Op: "delete", Target: "- nowhere"},
		{Op: "replace", Target: "- note", Content: "x"},
		{Op: "ADD", Content: "normalised"},
		{Op: "frobnicate", Content: "x"},
		{Op: "insert_after", Target: "absent", Content: "fallback"},
	}
	for _, norm := range []bool{false, true} {
		opts := skill.ApplyOptions{NormalizeOps: norm}
		want, wantRep := skill.Apply(text, edits, opts)
		pe := make([]Edit, len(edits))
		for i, e := range edits {
			pe[i] = Edit{Op: e.Op, Target: e.Target, Content: e.Content}
		}
		p := FromText(text)
		q, rep := Apply(p, pe, ApplyOptions{Text: opts})
		if q.Entry() != want {
			t.Fatalf("normalize=%v: text differs:\n%s", norm, cmp.Diff(want, q.Entry()))
		}
		got := make([]skill.Report, len(rep))
		for i, r := range rep {
			got[i] = r.Report
			if r.File != EntryFile || r.Reason != "" {
				t.Fatalf("row %d: file %q reason %q", i, r.File, r.Reason)
			}
		}
		if d := cmp.Diff(wantRep, got); d != "" {
			t.Fatalf("normalize=%v: reports differ:\n%s", norm, d)
		}
		if p.Entry() != text {
			t.Fatal("Apply changed its input package")
		}
		if q.Hash() != skill.Hash(want) {
			t.Fatal("edited single-file package hash is not skill.Hash of its text")
		}
	}
}

func TestEditsAcrossFiles(t *testing.T) {
	p, err := New(map[string]string{"SKILL.md": entry, "references/units.md": "# Factors\n"}, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	q, rep := Apply(p, []Edit{
		{File: "references/units.md", Op: "append", Content: "1 mile = 1.609 km"},
		{File: "scripts/convert.py", Op: "create_file", Content: "print(1.609)\n"},
		{Op: "insert_after", Target: "See references/units.md.", Content: "Run scripts/convert.py to check."},
		{File: "references/old.md", Op: "remove_file"},
	}, ApplyOptions{})
	s := Summarize(rep)
	if s.Applied != 3 || s.Refused != 1 || s.Reasons[ReasonNoSuchFile] != 1 {
		t.Fatalf("summary %+v", s)
	}
	if want := []string{"references/units.md", "scripts/convert.py", "SKILL.md"}; !cmp.Equal(s.Files, want) {
		t.Fatalf("changed files %v, want %v", s.Files, want)
	}
	if got, _ := q.File("references/units.md"); got != "# Factors\n\n1 mile = 1.609 km\n" {
		t.Fatalf("units.md = %q", got)
	}
	if !q.Executable("scripts/convert.py") {
		t.Fatal("created script not executable")
	}
	if !strings.Contains(q.Entry(), "Run scripts/convert.py") {
		t.Fatal("SKILL.md edit lost")
	}
	r, rep := Apply(q, []Edit{{File: "scripts/convert.py", Op: "remove_file"}}, ApplyOptions{})
	if _, ok := r.File("scripts/convert.py"); ok || rep[0].Status != AppliedRemoveFile {
		t.Fatalf("remove_file: status %s", rep[0].Status)
	}
}

// TestEditRefusals: every hostile edit is refused with its counted reason
// and leaves the package as it was.
func TestEditRefusals(t *testing.T) {
	lim := Limits{MaxFiles: 3, MaxFileBytes: 200, MaxTotalBytes: 300}
	base, err := New(map[string]string{"SKILL.md": "# S\n", "references/a.md": "a\n"}, lim)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		edit Edit
		pre  []Edit
		want Reason
	}{
		{"dot-dot", Edit{File: "../evil.md", Op: "create_file", Content: "x"}, nil, ReasonPathEscape},
		{"nested dot-dot", Edit{File: "references/../../evil.md", Op: "append", Content: "x"}, nil, ReasonPathEscape},
		{"absolute", Edit{File: "/etc/cron.d/x", Op: "create_file", Content: "x"}, nil, ReasonAbsolutePath},
		{"hidden", Edit{File: ".bashrc", Op: "create_file", Content: "x"}, nil, ReasonBadPath},
		{"NUL content", Edit{File: "references/b.md", Op: "create_file", Content: "a\x00b"}, nil, ReasonBinary},
		{"invalid UTF-8 content", Edit{Op: "append", Content: "\xc3\x28"}, nil, ReasonBinary},
		{"file too large", Edit{File: "references/a.md", Op: "append", Content: strings.Repeat("x", 250)}, nil, ReasonFileTooLarge},
		{"create too large", Edit{File: "references/b.md", Op: "create_file", Content: strings.Repeat("x", 201)}, nil, ReasonFileTooLarge},
		{"too many files", Edit{File: "references/c.md", Op: "create_file", Content: "c"},
			[]Edit{{File: "references/b.md", Op: "create_file", Content: "b"}}, ReasonTooManyFiles},
		{"total too large", Edit{File: "references/b.md", Op: "create_file", Content: strings.Repeat("x", 150)},
			[]Edit{{File: "references/a.md", Op: "append", Content: strings.Repeat("y", 150)}}, ReasonTotalTooLarge},
		{"no such file", Edit{File: "references/zz.md", Op: "replace", Target: "a", Content: "b"}, nil, ReasonNoSuchFile},
		{"create existing", Edit{File: "references/a.md", Op: "create_file", Content: "x"}, nil, ReasonFileExists},
		{"remove entry", Edit{Op: "remove_file"}, nil, ReasonEntryFile},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before, pre := Apply(base, c.pre, ApplyOptions{Limits: lim})
			if s := Summarize(pre); s.Refused != 0 {
				t.Fatalf("setup edits refused: %+v", pre)
			}
			after, rep := Apply(before, []Edit{c.edit}, ApplyOptions{Limits: lim})
			if rep[0].Reason != c.want {
				t.Fatalf("reason %q (%s), want %s", rep[0].Reason, rep[0].Detail, c.want)
			}
			if rep[0].Status != RefusedStatus(c.want) || rep[0].Status.Applied() || rep[0].Status.Skipped() {
				t.Fatalf("status %q", rep[0].Status)
			}
			if rep[0].Detail == "" {
				t.Fatal("refusal without detail")
			}
			if after.Hash() != before.Hash() {
				t.Fatal("a refused edit changed the package")
			}
			if s := Summarize(rep); s.Refused != 1 || s.Reasons[c.want] != 1 {
				t.Fatalf("summary %+v", s)
			}
		})
	}
}

func TestFileOpNormalization(t *testing.T) {
	p := FromText("# S\n")
	q, rep := Apply(p, []Edit{{File: "references/x.md", Op: "Add-File", Content: "x"}}, ApplyOptions{Text: skill.ApplyOptions{NormalizeOps: true}})
	if rep[0].Status != AppliedCreateFile || rep[0].NormalizedFrom != "Add-File" {
		t.Fatalf("row %+v", rep[0])
	}
	if _, ok := q.File("references/x.md"); !ok {
		t.Fatal("file not created")
	}
	// Without normalisation SkillOpt's behaviour holds: an unknown op
	// on a missing file is refused, not created.
	_, rep = Apply(p, []Edit{{File: "references/x.md", Op: "Add-File", Content: "x"}}, ApplyOptions{})
	if rep[0].Reason != ReasonNoSuchFile {
		t.Fatalf("row %+v", rep[0])
	}
}
