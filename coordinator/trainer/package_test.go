package trainer

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/prompts"
	"github.com/skillfleet/skillfleet/pkg/skill"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// fileRunDir keeps what the trainer writes, for tests of one phase.
type fileRunDir struct {
	RunDir // methods the phase under test does not call panic
	files  map[string]string
}

func (f *fileRunDir) WriteFile(rel, text string) error { f.files[rel] = text; return nil }
func (f *fileRunDir) WriteJSON(rel string, v any) error {
	b, err := json.Marshal(v)
	f.files[rel] = string(b)
	return err
}

func testPackage(t *testing.T) string {
	t.Helper()
	p, err := skillpkg.New(map[string]string{
		"SKILL.md":            "---\nname: units\ndescription: Units.\n---\n# Units\n\n- Open references/units.md.\n",
		"references/units.md": "# Units\n\n- 1 mile = 1.609 km\n",
	}, skillpkg.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return skillpkg.Encode(p)
}

// Hostile edits through the trainer's update phase: each is refused with
// its reason, counted in the step record and listed with its file in
// edit_apply_report.json; the good edits in the same step still apply,
// and the candidate holds nothing the hostile ones carried.
func TestUpdateRefusesHostileEditsWithCountedReasons(t *testing.T) {
	t.Parallel()
	rd := &fileRunDir{files: map[string]string{}}
	tr := &Trainer{s: Settings{UpdateMode: prompts.ModePatch, NormalizeOps: true}, rd: rd}
	current := testPackage(t)
	items := []prompts.Item{
		{File: "../escape.md", Op: "create_file", Content: "x"},
		{File: "/etc/passwd", Op: "append", Content: "x"},
		{File: "references/blob.bin", Op: "create_file", Content: "a\x00b"},
		{File: "references/huge.md", Op: "create_file", Content: strings.Repeat("y", 65<<10)},
		{File: "scripts/check.py", Op: "create_file", Content: "def f(:\n"},
		{File: "SKILL.md", Op: "remove_file"},
		{File: "references/units.md", Op: "append", Content: "- 1 km = 1000 m"},
		{Op: "append", Content: "- Report kilometres."},
	}
	var rec StepRecord
	cand, ok, err := tr.update(t.Context(), 3, current, items, &rec)
	if err != nil || !ok {
		t.Fatalf("update: ok %v, err %v", ok, err)
	}
	want := map[string]int{
		"refused_path_escape": 1, "refused_absolute_path": 1, "refused_binary": 1, "refused_file_too_large": 1,
		"refused_script_syntax": 1, "refused_entry_file": 1, "applied_append": 2,
	}
	if len(rec.EditApply) != len(want) {
		t.Errorf("step record counts %v, want %v", rec.EditApply, want)
	}
	for k, n := range want {
		if rec.EditApply[k] != n {
			t.Errorf("step record: %s = %d, want %d (all: %v)", k, rec.EditApply[k], n, rec.EditApply)
		}
	}
	var rows []skillpkg.Report
	if err := json.Unmarshal([]byte(rd.files[StepFile(3, "edit_apply_report.json")]), &rows); err != nil {
		t.Fatal(err)
	}
	if len(rows) != len(items) || rows[0].File != "../escape.md" || rows[0].Reason != skillpkg.ReasonPathEscape || rows[4].Detail == "" {
		t.Errorf("edit_apply_report.json rows: %+v", rows)
	}
	p, err := skillpkg.Decode(cand)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Paths(); strings.Join(got, ",") != "SKILL.md,references/units.md" {
		t.Errorf("candidate files %v", got)
	}
	if ref, _ := p.File("references/units.md"); !strings.Contains(ref, "1 km = 1000 m") || !strings.Contains(p.Entry(), "Report kilometres") {
		t.Errorf("the good edits did not apply:\n%s", cand)
	}
}

// A single-file skill takes today's path: edit_apply_report.json has the
// single-file rows (no file or refusal keys) and the text is skill.Apply's.
func TestUpdateSingleFileUnchanged(t *testing.T) {
	t.Parallel()
	rd := &fileRunDir{files: map[string]string{}}
	tr := &Trainer{s: Settings{UpdateMode: prompts.ModePatch, NormalizeOps: true}, rd: rd}
	current := "# Units\n\n- Be careful with distances.\n"
	items := []prompts.Item{{Op: "replace", Target: "Be careful with distances.", Content: "Report kilometres."}, {Op: "Append", Content: "- x"}}
	var rec StepRecord
	cand, _, err := tr.update(t.Context(), 1, current, items, &rec)
	if err != nil {
		t.Fatal(err)
	}
	want, wantRows := skill.Apply(current, prompts.Edits(items), skill.ApplyOptions{NormalizeOps: true})
	if cand != want {
		t.Errorf("candidate %q, want %q", cand, want)
	}
	b, _ := json.Marshal(wantRows)
	if got := rd.files[StepFile(1, "edit_apply_report.json")]; got != string(b) {
		t.Errorf("edit_apply_report.json:\n%s\nwant:\n%s", got, b)
	}
}

// Rewrite modes replace SKILL.md only: a new text (or a whole bundle sent
// back) becomes SKILL.md, the references stay.
func TestRewriteKeepsPackageFiles(t *testing.T) {
	t.Parallel()
	current := testPackage(t)
	for _, newSkill := range []string{"# Units v2\n", strings.Replace(current, "# Units\n\n- Open", "# Units v2\n\n- Open", 1)} {
		cand, ok := rewritten(newSkill, current)
		if !ok {
			t.Fatalf("rewritten refused %q", newSkill)
		}
		p, err := skillpkg.Decode(cand)
		if err != nil {
			t.Fatal(err)
		}
		if ref, _ := p.File("references/units.md"); ref != "# Units\n\n- 1 mile = 1.609 km\n" || !strings.Contains(p.Entry(), "# Units v2") {
			t.Errorf("rewrite of %q gave:\n%s", newSkill, cand)
		}
	}
	if _, ok := rewritten(current[:len(current)/2], current); ok {
		t.Error("a torn bundle from a rewrite was taken")
	}
}

// train_description: a set_description item replaces the front matter's
// description through the update phase when the run trains it, and is a
// counted refusal (description_off) when it does not; the other edits of
// the step apply either way.
func TestUpdateTrainsDescriptionOnlyWhenOn(t *testing.T) {
	t.Parallel()
	items := []prompts.Item{
		{Op: "set_description", Content: "Units. Read it before you start."},
		{Op: "append", Content: "- Report kilometres."},
	}
	for _, on := range []bool{false, true} {
		rd := &fileRunDir{files: map[string]string{}}
		tr := &Trainer{s: Settings{UpdateMode: prompts.ModePatch, NormalizeOps: true, TrainDescription: on}, rd: rd}
		var rec StepRecord
		cand, ok, err := tr.update(t.Context(), 1, testPackage(t), items, &rec)
		if err != nil || !ok {
			t.Fatalf("train_description=%v: update ok %v, err %v", on, ok, err)
		}
		p, err := skillpkg.Decode(cand)
		if err != nil {
			t.Fatal(err)
		}
		fm, err := p.FrontMatter()
		if err != nil {
			t.Fatal(err)
		}
		wantDesc, wantKey := "Units.", "refused_description_off"
		if on {
			wantDesc, wantKey = "Units. Read it before you start.", "applied_set_description"
		}
		if fm.Description != wantDesc || rec.EditApply[wantKey] != 1 || rec.EditApply["applied_append"] != 1 || !strings.Contains(p.Entry(), "Report kilometres") {
			t.Errorf("train_description=%v: description %q, counts %v; want %q and one %s", on, fm.Description, rec.EditApply, wantDesc, wantKey)
		}
	}
}
