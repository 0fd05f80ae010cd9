package nightly

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

func testPackageText(t *testing.T) string {
	t.Helper()
	_, files, ok := PersonaPackage(PersonaResearcherPackage)
	if !ok {
		t.Fatal("no persona package")
	}
	p, err := skillpkg.New(files, skillpkg.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return skillpkg.Encode(p)
}

func TestApplyDocEditsSingleFileIsApplyEdits(t *testing.T) {
	doc := "# Mine\n\nuser text\n\n" + emptyBlock()
	edits := []Edit{{Op: "add", Content: "one"}, {Op: "ADD", Content: "two"}, {Op: "replace", Anchor: "one", Content: "uno"}, {Op: "frob"}}
	want, wantApplied, wantUnmatched, err := ApplyEdits(doc, edits)
	if err != nil {
		t.Fatal(err)
	}
	got, applied, unmatched, refused, err := ApplyDocEdits("skill", doc, edits, false, skillpkg.Limits{})
	if err != nil || got != want || len(applied) != len(wantApplied) || len(unmatched) != len(wantUnmatched) || refused != nil {
		t.Fatalf("ApplyDocEdits = %q, %v, %v, %v, %v; want ApplyEdits' %q", got, applied, unmatched, refused, err, want)
	}
	// A file edit on a single file is refused, the document untouched.
	got, _, _, refused, err = ApplyDocEdits("memory", doc, []Edit{{File: "references/a.md", Op: "create_file", Content: "x"}}, false, skillpkg.Limits{})
	if err != nil || got != doc || len(refused) != 1 || refused[0].Reason != RefuseNotAPackage || refused[0].Document != "memory" {
		t.Fatalf("file edit on a single file: %q, %+v, %v", got, refused, err)
	}
}

func TestApplyDocEditsOnAPackage(t *testing.T) {
	doc := testPackageText(t)
	edits := []Edit{
		{Op: "add", Content: HabitWrap},
		{File: "references/arxiv.md", Op: "create_file", Content: "# arXiv\n\n- " + HabitArxivID},
		{File: "references/arxiv.md", Op: "append", Content: "- no v1"},
		{File: "references/arxiv.md", Op: "Create-File", Content: "again"},
		{File: "SKILL.md", Op: "add", Content: "a learned line named by file"},
	}
	got, applied, unmatched, refused, err := ApplyDocEdits("skill", doc, edits, true, skillpkg.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(applied) != 4 || len(unmatched) != 0 || len(refused) != 1 || refused[0].Reason != string(skillpkg.ReasonFileExists) {
		t.Fatalf("applied %v, unmatched %v, refused %+v", applied, unmatched, refused)
	}
	before, _ := skillpkg.Decode(doc)
	p, err := skillpkg.Decode(got)
	if err != nil {
		t.Fatal(err)
	}
	if ref, _ := p.File("references/arxiv.md"); ref != "# arXiv\n\n- "+HabitArxivID+"\n\n- no v1\n" {
		t.Fatalf("references/arxiv.md = %q", ref)
	}
	if OutsideBlock(p.Entry()) != OutsideBlock(before.Entry()) {
		t.Fatalf("SKILL.md changed outside its block:\n%s", p.Entry())
	}
	if lines := LearnedLines(p.Entry()); len(lines) != 2 || lines[0] != HabitWrap {
		t.Fatalf("learned lines %q", lines)
	}
	if a, _ := p.File("references/doi.md"); a != func() string { b, _ := before.File("references/doi.md"); return b }() {
		t.Fatal("references/doi.md changed")
	}
	if files := PackageFiles(doc, got); strings.Join(files, ",") != "SKILL.md,references/arxiv.md" {
		t.Fatalf("PackageFiles = %v", files)
	}
	// Over the package's bounds: refused, counted, nothing changed.
	_, _, _, refused, err = ApplyDocEdits("skill", got, []Edit{{File: "references/more.md", Op: "create_file", Content: "x"}}, true, skillpkg.Limits{MaxFiles: 3})
	if err != nil || len(refused) != 1 || refused[0].Reason != string(skillpkg.ReasonTooManyFiles) {
		t.Fatalf("over the bounds: %+v, %v", refused, err)
	}
}

func TestAttemptMessagesGiveThePackage(t *testing.T) {
	files := map[string]string{
		"SKILL.md":          "---\nname: p\ndescription: d\n---\n\nFormats live in references/.\n",
		"references/key.md": "my key is sk-proj-PlantedKey0123456789abcdefXYZ\n",
	}
	p, err := skillpkg.New(files, skillpkg.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	task := Task{ID: "t", Intent: "What is the arXiv id of the paper \"Attention Is All You Need\"?", Judge: Judge{Kind: JudgeRubric, Rubric: "an id"}}
	msgs := AttemptMessages(task, skillpkg.Encode(p), "memory text")
	sys := msgs[0].Content
	i, j := strings.Index(sys, SkillOpen+"\n"), strings.LastIndex(sys, "\n"+SkillClose)
	if i < 0 || j < i || strings.Contains(sys, "PlantedKey") || !strings.Contains(sys[j:], "memory text") {
		t.Fatalf("system message:\n%s", sys)
	}
	got, err := skillpkg.Decode(sys[i+len(SkillOpen)+1 : j])
	if err != nil || got.Len() != 2 {
		t.Fatalf("the framed bundle does not decode: %v", err)
	}
	if key, _ := got.File("references/key.md"); !strings.Contains(key, "[REDACTED") {
		t.Fatalf("references/key.md in the prompt: %q", key)
	}
	// The read_skill_file tool finds the package there: the target is
	// given SKILL.md, the list of the other files and the tool.
	rec := &recordModel{}
	if _, err := skillpkg.WithReadTool(rec).Chat(t.Context(), &llm.Request{Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	if len(rec.reqs) != 1 || len(rec.reqs[0].Tools) != 1 || !strings.Contains(rec.reqs[0].Messages[0].Content, "- references/key.md (1 lines)") ||
		strings.Contains(rec.reqs[0].Messages[0].Content, "SKILLPKG") || !strings.Contains(rec.reqs[0].Messages[0].Content, "memory text") {
		t.Fatalf("the read tool did not find the package: %+v", rec.reqs)
	}
	// A plain skill is given exactly as before.
	plain := AttemptMessages(task, files["SKILL.md"], "")
	if strings.Contains(plain[0].Content, SkillOpen) || !strings.Contains(plain[0].Content, "Formats live in references/.") {
		t.Fatalf("plain skill section:\n%s", plain[0].Content)
	}
}

// recordModel keeps the requests it is sent and answers "ok".
type recordModel struct{ reqs []*llm.Request }

func (r *recordModel) Chat(_ context.Context, req *llm.Request) (*llm.Response, error) {
	r.reqs = append(r.reqs, req)
	return &llm.Response{Content: "ok", Attempts: 1}, nil
}

func TestReadPackage(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "papers")
	lp, err := ReadPackage(dir, skillpkg.Limits{})
	if err != nil || lp.Existed || lp.Pins != nil || !strings.Contains(lp.Text, "name: papers\n") || len(LearnedLines(lp.Text)) != 0 || !strings.Contains(lp.Text, LearnedStart) {
		t.Fatalf("ReadPackage(absent) = %+v, %v", lp, err)
	}
	_, files, _ := PersonaPackage(PersonaResearcherPackage)
	writeTree(t, dir, files)
	lp, err = ReadPackage(dir, skillpkg.Limits{})
	if err != nil || !lp.Existed || len(lp.Pins) != 2 || !skillpkg.IsBundle(lp.Text) {
		t.Fatalf("ReadPackage = %+v, %v", lp, err)
	}
	// A package without a learned block gets one appended to SKILL.md.
	writeTree(t, dir, map[string]string{"SKILL.md": "---\nname: papers\ndescription: d\n---\n\nmine\n"})
	lp, err = ReadPackage(dir, skillpkg.Limits{})
	if err != nil || !strings.Contains(SkillEntry(lp.Text), "mine\n\n"+LearnedStart) {
		t.Fatalf("ReadPackage without a block: %v\n%s", err, lp.Text)
	}
	// What skillpkg refuses, the night refuses, naming the file.
	writeTree(t, dir, map[string]string{".env": "X=1"})
	if _, err := ReadPackage(dir, skillpkg.Limits{}); err == nil || !strings.Contains(err.Error(), ".env") {
		t.Fatalf("ReadPackage with a hidden file = %v", err)
	}
	if err := os.Remove(filepath.Join(dir, ".env")); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPackage(dir, skillpkg.Limits{MaxFiles: 1}); err == nil || !strings.Contains(err.Error(), "too_many_files") {
		t.Fatalf("ReadPackage over its bounds = %v", err)
	}
}
