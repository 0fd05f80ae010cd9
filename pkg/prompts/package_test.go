package prompts_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillfleet/skillfleet/pkg/prompts"
	"github.com/skillfleet/skillfleet/pkg/skill"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

func testBundle(t testing.TB) string {
	t.Helper()
	p, err := skillpkg.New(map[string]string{
		"SKILL.md":            "---\nname: units\ndescription: Unit rules.\n---\n# Units\n\nOpen references/units.md.\n",
		"references/units.md": "# Units\n\n- 1 mile = 1.609 km\n",
	}, skillpkg.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return skillpkg.Encode(p)
}

// A package payload gets the package rules in patch-mode system prompts
// and the package view in the user message; a single-file payload gets
// neither (its prompts are those of before packages).
func TestPackagePrompts(t *testing.T) {
	t.Parallel()
	s := prompts.New(nil)
	bundle := testBundle(t)
	plain := "# Units\n\nOpen references/units.md.\n"
	for _, tc := range []struct {
		name, mode, skill string
		wantRules         bool
		wantView          bool
	}{
		{prompts.AnalystFailure, prompts.ModePatch, bundle, true, true},
		{prompts.MergeFinal, prompts.ModePatch, bundle, true, true},
		{prompts.Ranking, prompts.ModePatch, bundle, true, true},
		{prompts.AnalystFailure, prompts.ModeRewrite, bundle, false, true},
		{prompts.AnalystFailure, prompts.ModePatch, plain, false, false},
		{prompts.Ranking, prompts.ModePatch, plain, false, false},
	} {
		var payload any
		switch tc.name {
		case prompts.AnalystFailure:
			payload = prompts.AnalystInput{Skill: tc.skill, Budget: 4, BatchSize: 1}
		case prompts.MergeFinal:
			payload = prompts.MergeFinalInput{Skill: tc.skill}
		case prompts.Ranking:
			payload = prompts.RankInput{Skill: tc.skill, Budget: 2}
		}
		system, user, err := s.Render(tc.name, tc.mode, payload, prompts.RenderOptions{})
		if err != nil {
			t.Fatalf("%s/%s: %v", tc.name, tc.mode, err)
		}
		rules := strings.Index(system, "## The skill is a package of files")
		if got := rules >= 0; got != tc.wantRules {
			t.Errorf("%s/%s package=%v: package rules in system prompt = %v, want %v", tc.name, tc.mode, prompts.IsPackage(tc.skill), got, tc.wantRules)
		}
		if rules >= 0 {
			if reply := strings.LastIndex(system, "## Reply format"); reply >= 0 && reply < rules {
				t.Errorf("%s: package rules come after the reply format", tc.name)
			}
			if !strings.Contains(system, "`create_file`") || !strings.Contains(system, "`remove_file`") {
				t.Errorf("%s: package rules lack the file operations", tc.name)
			}
		}
		view := strings.Contains(user, "## The skill package\n\nSkill package \"units\": 2 files")
		if view != tc.wantView {
			t.Errorf("%s/%s: package view in user message = %v, want %v:\n%s", tc.name, tc.mode, view, tc.wantView, user)
		}
		if tc.wantView && !strings.Contains(user, "=== FILE references/units.md (3 lines) ===") {
			t.Errorf("%s: the view does not show references/units.md:\n%s", tc.name, user)
		}
		// The payload still carries the bundle verbatim: edits apply to it.
		_, raw, err := prompts.ExtractPayload(user)
		if err != nil {
			t.Fatal(err)
		}
		var back struct{ Skill string }
		if err := json.Unmarshal(raw, &back); err != nil || back.Skill != tc.skill {
			t.Errorf("%s: payload skill does not round-trip (err %v)", tc.name, err)
		}
	}
}

// An edit naming a file keeps it through JSON; one without a file has no
// "file" key, so single-file payloads and replies are unchanged.
func TestItemFileJSON(t *testing.T) {
	t.Parallel()
	var it prompts.Item
	if err := json.Unmarshal([]byte(`{"file":"references/units.md","op":"create_file","content":"x"}`), &it); err != nil {
		t.Fatal(err)
	}
	if it.File != "references/units.md" || it.Op != "create_file" {
		t.Errorf("decoded %+v", it)
	}
	b, _ := json.Marshal(prompts.Item{Op: "append", Content: "x"})
	if strings.Contains(string(b), "file") {
		t.Errorf("an edit of SKILL.md marshals a file key: %s", b)
	}
}

func TestRejectedEditShowsFile(t *testing.T) {
	t.Parallel()
	got := prompts.RenderStepBuffer([]prompts.BufferEntry{{Step: 2, Action: "rejected", NTotal: 4, NFail: 1,
		RejectedEdits: []prompts.RejectedEdit{
			{File: "references/units.md", Op: "append", Content: "- 1 mile = 1.609 km"},
			{File: "SKILL.md", Op: "append", Content: "- plain"},
			{Op: "append", Content: "- plain too"},
		}}})
	for _, want := range []string{
		`1. [append] file="references/units.md" → "- 1 mile = 1.609 km"`,
		`2. [append] → "- plain"`,
		`3. [append] → "- plain too"`,
	} {
		if !strings.Contains(got, want+"\n") {
			t.Errorf("step buffer lacks %q:\n%s", want, got)
		}
	}
}

// The description block reaches a patch-mode analyst of a run that trains
// the description, and a merge or ranking whose items hold a
// set_description; other prompts (single-file runs among them) are
// unchanged.
func TestDescriptionPrompts(t *testing.T) {
	t.Parallel()
	s := prompts.New(nil)
	plain := "---\nname: units\ndescription: Unit rules.\n---\n# Units\n"
	setDesc := prompts.Item{Op: prompts.OpSetDescription, Content: "Unit rules. Read it before you start."}
	for _, tc := range []struct {
		label, name, mode string
		payload           any
		want              bool
	}{
		{"analyst, trained", prompts.AnalystFailure, prompts.ModePatch, prompts.AnalystInput{Skill: plain, Budget: 2, BatchSize: 1, TrainDescription: true}, true},
		{"analyst, package, trained", prompts.AnalystSuccess, prompts.ModePatch, prompts.AnalystInput{Skill: testBundle(t), Budget: 2, BatchSize: 1, TrainDescription: true}, true},
		{"analyst, not trained", prompts.AnalystFailure, prompts.ModePatch, prompts.AnalystInput{Skill: plain, Budget: 2, BatchSize: 1}, false},
		{"analyst, rewrite mode", prompts.AnalystFailure, prompts.ModeRewrite, prompts.AnalystInput{Skill: plain, Budget: 2, BatchSize: 1, TrainDescription: true}, false},
		{"merge with set_description", prompts.MergeFailure, prompts.ModePatch, prompts.MergeInput{Skill: plain, Patches: [][]prompts.Item{{{Op: "append", Content: "x"}}, {setDesc}}}, true},
		{"merge without", prompts.MergeFailure, prompts.ModePatch, prompts.MergeInput{Skill: plain, Patches: [][]prompts.Item{{{Op: "append", Content: "x"}}}}, false},
		{"final merge with", prompts.MergeFinal, prompts.ModePatch, prompts.MergeFinalInput{Skill: plain, Success: []prompts.Item{setDesc}}, true},
		{"ranking with", prompts.Ranking, prompts.ModePatch, prompts.RankInput{Skill: plain, Budget: 1, Items: []prompts.Item{setDesc}}, true},
	} {
		system, _, err := s.Render(tc.name, tc.mode, tc.payload, prompts.RenderOptions{})
		if err != nil {
			t.Fatalf("%s: %v", tc.label, err)
		}
		at := strings.Index(system, "## The skill's description")
		if got := at >= 0; got != tc.want {
			t.Errorf("%s: description block present = %v, want %v", tc.label, got, tc.want)
		}
		if at >= 0 && (!strings.Contains(system, "`set_description`") || strings.Index(system, "## Reply format") < at) {
			t.Errorf("%s: the block must name set_description and come before the reply format", tc.label)
		}
	}
}

func TestEdits(t *testing.T) {
	t.Parallel()
	items := []prompts.Item{{Op: "replace", Target: "a", Content: "b", SupportCount: 3}, {Op: "append", Content: "c"}}
	want := []skill.Edit{{Op: "replace", Target: "a", Content: "b"}, {Op: "append", Content: "c"}}
	if diff := cmp.Diff(want, prompts.Edits(items)); diff != "" {
		t.Errorf("Edits mismatch (-want +got):\n%s", diff)
	}
}
