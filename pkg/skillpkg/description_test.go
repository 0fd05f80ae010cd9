package skillpkg_test

import (
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/skill"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// TestSetDescription: set_description replaces the front matter's
// description (and only it) when the description is trained, is refused
// with a counted reason when it is not or when the new one breaks a
// bound, and works on a plain single-file skill carried as text.
func TestSetDescription(t *testing.T) {
	t.Parallel()
	entry := "---\nname: units\ndescription: >\n  Convert units,\n  folded.\nlicense: MIT\n---\n# Units\ndescription: not front matter\n"
	p, err := skillpkg.New(map[string]string{"SKILL.md": entry, "references/a.md": "a\n"}, skillpkg.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	on := skillpkg.ApplyOptions{TrainDescription: true, MaxDescription: 60}
	for _, tc := range []struct {
		name   string
		edit   skillpkg.Edit
		opts   skillpkg.ApplyOptions
		reason skillpkg.Reason
		want   string // SKILL.md after, when applied
	}{
		{"applied", skillpkg.Edit{Op: "set_description", Content: "Convert units. Read it before you start."}, on, "",
			"---\nname: units\ndescription: Convert units. Read it before you start.\nlicense: MIT\n---\n# Units\ndescription: not front matter\n"},
		{"quoted when YAML needs it", skillpkg.Edit{Op: "update-description", Content: "Units: km, mi # and more"},
			skillpkg.ApplyOptions{TrainDescription: true, Text: skill.ApplyOptions{NormalizeOps: true}}, "",
			"---\nname: units\ndescription: 'Units: km, mi # and more'\nlicense: MIT\n---\n# Units\ndescription: not front matter\n"},
		{"off by default", skillpkg.Edit{Op: "set_description", Content: "x"}, skillpkg.ApplyOptions{}, skillpkg.ReasonDescriptionOff, ""},
		{"too long", skillpkg.Edit{Op: "set_description", Content: strings.Repeat("d", 61)}, on, skillpkg.ReasonBadDescription, ""},
		{"two lines", skillpkg.Edit{Op: "set_description", Content: "a\nname: evil"}, on, skillpkg.ReasonBadDescription, ""},
		{"empty", skillpkg.Edit{Op: "set_description", Content: "  "}, on, skillpkg.ReasonBadDescription, ""},
		{"other file", skillpkg.Edit{File: "references/a.md", Op: "set_description", Content: "x"}, on, skillpkg.ReasonBadDescription, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			q, rows := skillpkg.Apply(p, []skillpkg.Edit{tc.edit}, tc.opts)
			if rows[0].Reason != tc.reason {
				t.Fatalf("row %+v, want refusal %q", rows[0], tc.reason)
			}
			if tc.reason != "" {
				if q.Entry() != entry || rows[0].Status != skillpkg.RefusedStatus(tc.reason) {
					t.Fatalf("refused edit changed SKILL.md to %q (status %s)", q.Entry(), rows[0].Status)
				}
				if s := skillpkg.Summarize(rows); s.Reasons[tc.reason] != 1 {
					t.Fatalf("summary %+v, want one %s", s, tc.reason)
				}
				return
			}
			if rows[0].Status != skillpkg.AppliedSetDescription || q.Entry() != tc.want {
				t.Fatalf("SKILL.md %q (status %s), want %q", q.Entry(), rows[0].Status, tc.want)
			}
			if other, _ := q.File("references/a.md"); other != "a\n" {
				t.Fatalf("another file changed: %q", other)
			}
		})
	}

	// A plain SKILL.md carried as text stays plain text.
	plain := "---\nname: u\ndescription: old\n---\nbody\n"
	out, rows, err := skillpkg.ApplyText(plain, []skillpkg.Edit{{Op: "set_description", Content: "new one"}}, on)
	if err != nil || out != "---\nname: u\ndescription: new one\n---\nbody\n" || !rows[0].Status.Applied() {
		t.Fatalf("ApplyText on a plain skill = %q, %+v, %v", out, rows, err)
	}
	// No front matter: nothing to hold a description.
	_, rows, _ = skillpkg.ApplyText("# body\n", []skillpkg.Edit{{Op: "set_description", Content: "x"}}, on)
	if rows[0].Reason != skillpkg.ReasonBadDescription {
		t.Fatalf("no front matter: row %+v, want bad_description", rows[0])
	}
}
