package sim

import (
	"context"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/nightly"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

func sleepPackageText(t *testing.T, extra map[string]string) string {
	t.Helper()
	_, files, ok := nightly.PersonaPackage(nightly.PersonaResearcherPackage)
	if !ok {
		t.Fatal("no persona package")
	}
	for k, v := range extra {
		files[k] = v
	}
	p, err := skillpkg.New(files, skillpkg.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return skillpkg.Encode(p)
}

func sleepAttemptReply(t *testing.T, m llm.Model, skill string) string {
	t.Helper()
	task := nightly.Task{ID: "t", Intent: `What is the arXiv id of the paper "Attention Is All You Need"?`, Judge: nightly.Judge{Kind: nightly.JudgeExact, Reference: "arXiv:1706.03762"}}
	resp, err := m.Chat(context.Background(), &llm.Request{Model: "sim", Messages: nightly.AttemptMessages(task, skill, "")})
	if err != nil {
		t.Fatal(err)
	}
	return resp.Content
}

// TestSleepPackageAgentTakesTheFormatFromReferences: under a package
// whose SKILL.md points to references/, the sim's agent takes the arXiv
// format from a reference file only, and says so when it is missing.
func TestSleepPackageAgentTakesTheFormatFromReferences(t *testing.T) {
	m := NewSleepAware(New(Options{}))
	ruleInEntry := sleepPackageText(t, nil)
	ruleInEntry = strings.Replace(ruleInEntry, nightly.LearnedEnd, "- "+nightly.HabitArxivID+"\n"+nightly.LearnedEnd, 1)
	for _, c := range []struct {
		name, skill string
		id, hint    bool
	}{
		{"no arXiv reference", sleepPackageText(t, nil), false, true},
		{"the rule in SKILL.md, not in references/", ruleInEntry, false, true},
		{"the rule in references/arxiv.md", sleepPackageText(t, map[string]string{"references/arxiv.md": "- " + nightly.HabitArxivID + "\n"}), true, false},
		{"a plain SKILL.md with the rule", "# Skill\n\n- " + nightly.HabitArxivID + "\n", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := sleepAttemptReply(t, m, c.skill)
			if strings.Contains(got, "arXiv:1706.03762") != c.id || strings.Contains(got, hintNoArxivReference) != c.hint {
				t.Fatalf("reply %q: want arXiv form %t, hint %t", got, c.id, c.hint)
			}
			if skillpkg.IsBundle(c.skill) && !strings.Contains(got, "references/doi.md.") {
				t.Fatalf("reply %q does not name the references it opened", got)
			}
		})
	}
}

// TestSleepPackageReflectorWritesTheReference: seeing the agent's hint,
// the reflector creates references/arxiv.md, or appends once it exists;
// without a package it proposes the learned line, as before.
func TestSleepPackageReflectorWritesTheReference(t *testing.T) {
	fail := nightly.Failure{TaskID: "t", Wanted: "the answer arXiv:1706.03762; contains <answer>",
		Got: "I looked the paper up.\n" + hintNoArxivReference + "\nThe paper is https://arxiv.org/abs/1706.03762v1."}
	in := nightly.ReflectInput{Document: "skill", Failures: []nightly.Failure{fail}, Budget: 4, Package: &nightly.PackageView{Files: []nightly.PackageFile{{Path: "references/doi.md"}}}}
	edits := sleepReflect(in)
	var ref *nightly.Edit
	for i, e := range edits {
		if e.File != "" {
			ref = &edits[i]
		}
		if e.File == "" && e.Content == nightly.HabitArxivID {
			t.Fatalf("the arXiv rule went to the learned block: %+v", edits)
		}
	}
	if ref == nil || ref.File != arxivReference || ref.Op != nightly.FileOpCreate || !strings.Contains(ref.Content, nightly.HabitArxivID) {
		t.Fatalf("edits %+v: want create_file of %s", edits, arxivReference)
	}
	in.Package.Files = append(in.Package.Files, nightly.PackageFile{Path: arxivReference, Text: "# arXiv identifiers\n"})
	if edits := sleepReflect(in); edits[1].Op != nightly.FileOpAppend || edits[1].File != arxivReference {
		t.Fatalf("edits %+v: want append to %s", edits, arxivReference)
	}
	in.Package = nil
	fail.Got = "I looked the paper up.\nThe paper is https://arxiv.org/abs/1706.03762v1."
	in.Failures = []nightly.Failure{fail}
	for _, e := range sleepReflect(in) {
		if e.File != "" {
			t.Fatalf("a single-file reflection proposed a file edit: %+v", e)
		}
	}
}
