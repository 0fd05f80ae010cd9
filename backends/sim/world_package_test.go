package sim

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

const pkgEntry = "---\nname: records\ndescription: Answer questions about archived records.\n---\n# Records\n\n## Rules\n- Put only your final answer inside the answer tags.\n\nRules for each record type live in references/.\n"

func bundleOf(t *testing.T, files map[string]string) string {
	t.Helper()
	p, err := skillpkg.New(files, skillpkg.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return skillpkg.Encode(p)
}

// soleItem returns a demo item (seed 7) whose only pitfall is id.
func soleItem(t *testing.T, id string) simbench.Item {
	t.Helper()
	w, err := simbench.Generate("demo", 7)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range slices.Concat(w.Train, w.Val, w.Test) {
		if len(it.Pitfalls) == 1 && it.Pitfalls[0] == id {
			return it
		}
	}
	t.Fatalf("no demo item with only pitfall %s", id)
	return simbench.Item{}
}

// In the package world a record-type rule counts only in a reference the
// agent opened, a reading rule only in a script, an answer-format rule in
// SKILL.md; a miss says where the agent looked. A single-file skill is
// the sim benchmark's target as before.
func TestPackageWorldRulesLiveInTheirFiles(t *testing.T) {
	t.Parallel()
	m := quiet()
	units, _ := simbench.Lookup("units_km")
	swapped, _ := simbench.Lookup("swapped_digits")
	sep, _ := simbench.Lookup("thousands_sep")
	noPointer := strings.Replace(pkgEntry, "Rules for each record type live in references/.\n", "", 1)
	for _, tc := range []struct {
		name     string
		skill    string
		pitfall  string
		right    bool
		wantText string
	}{
		{"units rule in SKILL.md", bundleOf(t, map[string]string{"SKILL.md": pkgEntry + "- " + units.Rule + "\n", "references/none.md": "# None\n"}), "units_km", false, hintReference + units.Cue + hintReferenceEnd},
		{"units rule in a reference", bundleOf(t, map[string]string{"SKILL.md": pkgEntry, "references/units.md": "- " + units.Rule + "\n"}), "units_km", true, "opened references/units.md."},
		{"reference SKILL.md does not point to", bundleOf(t, map[string]string{"SKILL.md": noPointer, "references/units.md": "- " + units.Rule + "\n"}), "units_km", false, hintNoPointer},
		{"reading rule in a reference", bundleOf(t, map[string]string{"SKILL.md": pkgEntry, "references/reading.md": "- " + swapped.Rule + "\n"}), "swapped_digits", false, hintScript + swapped.Cue + hintScriptEnd},
		{"reading rule in a script", bundleOf(t, map[string]string{"SKILL.md": pkgEntry, scriptFile: scriptHeader + "\n" + scriptFunc(swapped, swapped.Rule)}), "swapped_digits", true, "ran " + scriptFile + " on the code"},
		{"format rule in SKILL.md", bundleOf(t, map[string]string{"SKILL.md": pkgEntry + "- " + sep.Rule + "\n", "references/x.md": "# x\n"}), "thousands_sep", true, "I read SKILL.md"},
		{"single file, units rule", pkgEntry + "- " + units.Rule + "\n", "units_km", true, ""},
	} {
		it := soleItem(t, tc.pitfall)
		ep := rollout(t, m, it, tc.skill)
		if got := ep.Hard >= 1; got != tc.right {
			t.Errorf("%s: right = %v, want %v (answer %q)", tc.name, got, tc.right, ep.Answer)
		}
		reply := ""
		for _, msg := range ep.Messages {
			if msg.Role == "assistant" {
				reply = msg.Text()
			}
		}
		if tc.wantText != "" && !strings.Contains(reply, tc.wantText) {
			t.Errorf("%s: reply %q lacks %q", tc.name, reply, tc.wantText)
		}
		if !skillpkg.IsBundle(tc.skill) && strings.Contains(reply, "I read SKILL.md") {
			t.Errorf("%s: a single-file skill went to the package world", tc.name)
		}
	}
}

// A failure analyst on a package puts each missing rule where the
// trajectories say the agent looked: a reference file, the helper script
// (which passes its syntax check), or SKILL.md; the edits apply and the
// agent then answers right. Two analysts' creations of one file fold
// into one in a merge.
func TestPackageAnalystRoutesEditsToFiles(t *testing.T) {
	t.Parallel()
	m := quiet()
	bundle := bundleOf(t, map[string]string{"SKILL.md": pkgEntry, "references/README.md": "# References\n"})
	var trs []prompts.Trajectory
	items := []simbench.Item{soleItem(t, "units_km"), soleItem(t, "swapped_digits"), soleItem(t, "thousands_sep")}
	for i, it := range items {
		ep := rollout(t, m, it, bundle)
		if ep.Hard >= 1 {
			t.Fatalf("%s is right under the empty package", it.ID)
		}
		trs = append(trs, trajectory(it.ID+string(rune('a'+i)), ep))
	}
	var rep prompts.AnalystReply
	ask(t, m, prompts.AnalystFailure, prompts.ModePatch, prompts.AnalystInput{Skill: bundle, Budget: 4, BatchSize: len(trs), Trajectories: trs}, &rep)
	files := map[string]prompts.Item{}
	for _, e := range rep.Patch.Edits {
		files[e.File] = e
	}
	if e := files["references/units.md"]; e.Op != skillpkg.OpCreateFile || !strings.Contains(e.Content, "kilomet") {
		t.Errorf("no create_file of references/units.md with the units rule: %+v", rep.Patch.Edits)
	}
	if e := files[scriptFile]; e.Op != skillpkg.OpCreateFile || !strings.Contains(e.Content, "def keep_swapped_digits") {
		t.Errorf("no create_file of %s with the reading rule: %+v", scriptFile, rep.Patch.Edits)
	}
	if e, ok := files[""]; !ok || !strings.Contains(e.Content+e.Target, "separator") {
		t.Errorf("no SKILL.md edit with the format rule: %+v", rep.Patch.Edits)
	}
	edits := make([]skillpkg.Edit, len(rep.Patch.Edits))
	for i, e := range rep.Patch.Edits {
		edits[i] = skillpkg.Edit{File: e.File, Op: e.Op, Target: e.Target, Content: e.Content}
	}
	next, rows, err := skillpkg.ApplyText(bundle, edits, skillpkg.ApplyOptions{Check: skillpkg.CheckSyntax})
	if err != nil {
		t.Fatal(err)
	}
	if s := skillpkg.Summarize(rows); s.Applied != len(edits) || len(s.Files) < 3 {
		t.Fatalf("edits did not all apply across three files: %+v %+v", s, rows)
	}
	for _, it := range items {
		if ep := rollout(t, m, it, next); ep.Hard < 1 {
			t.Errorf("%s still wrong after the edits: %q", it.ID, ep.Answer)
		}
	}

	// The same file created by two analysts: one create_file with both rules.
	rounding, _ := simbench.Lookup("rounding_tens")
	units, _ := simbench.Lookup("units_km")
	a := prompts.Item{File: "references/units.md", Op: skillpkg.OpCreateFile, Content: referenceHeader("units") + "\n- " + units.Rule + "\n", SupportCount: 2}
	b := prompts.Item{File: "references/units.md", Op: skillpkg.OpCreateFile, Content: referenceHeader("units") + "\n- " + rounding.Rule + "\n", SupportCount: 1}
	var mr prompts.MergeReply
	ask(t, m, prompts.MergeFailure, prompts.ModePatch, prompts.MergeInput{Skill: bundle, Level: 1, Patches: [][]prompts.Item{{a}, {b}}}, &mr)
	if len(mr.Edits) != 1 || mr.Edits[0].SupportCount != 3 ||
		mr.Edits[0].Content != referenceHeader("units")+"\n- "+units.Rule+"\n\n- "+rounding.Rule+"\n" {
		t.Errorf("creations of one file not folded: %+v", mr.Edits)
	}
}

// The step buffer's rejected edits of a package file are recognised by
// file: the analyst does not propose the rejected creation again.
func TestPackageRejectedEditNotReproposed(t *testing.T) {
	t.Parallel()
	m := quiet()
	bundle := bundleOf(t, map[string]string{"SKILL.md": pkgEntry, "references/README.md": "# References\n"})
	it := soleItem(t, "units_km")
	tr := trajectory(it.ID, rollout(t, m, it, bundle))
	var first prompts.AnalystReply
	in := prompts.AnalystInput{Skill: bundle, Budget: 4, BatchSize: 1, Trajectories: []prompts.Trajectory{tr}}
	ask(t, m, prompts.AnalystFailure, prompts.ModePatch, in, &first)
	if len(first.Patch.Edits) == 0 || first.Patch.Edits[0].File != "references/units.md" {
		t.Fatalf("first reply: %+v", first.Patch.Edits)
	}
	var rejected []prompts.RejectedEdit
	for _, e := range first.Patch.Edits {
		rejected = append(rejected, prompts.RejectedEdit{File: e.File, Op: e.Op, Target: e.Target, Content: e.Content})
	}
	in.StepBuffer = []prompts.BufferEntry{{Step: 1, Action: "rejected", NTotal: 1, NFail: 1, RejectedEdits: rejected}}
	var again prompts.AnalystReply
	ask(t, m, prompts.AnalystFailure, prompts.ModePatch, in, &again)
	for _, e := range again.Patch.Edits {
		for _, r := range rejected {
			if e.File == r.File && e.Op == r.Op && e.Content == r.Content {
				t.Errorf("rejected edit proposed again: %+v", e)
			}
		}
	}
}

// countingModel passes calls through and keeps each request's tools and
// tool results, to see the read tool's round trips.
type countingModel struct {
	llm.Model
	mu    sync.Mutex
	calls []*llm.Request
}

func (c *countingModel) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	c.mu.Lock()
	c.calls = append(c.calls, req)
	c.mu.Unlock()
	return c.Model.Chat(ctx, req)
}

// A target given the read_skill_file tool (skillpkg.WithReadTool) sees
// SKILL.md and the file list, calls the tool for the files the package
// world's agent opens, and answers exactly as it does with the package
// inlined; the reply is led by the note naming the files opened, which
// the sim benchmark's trajectory keeps. A plain skill goes through
// unchanged, in one call without tools.
func TestReadToolTargetOpensFiles(t *testing.T) {
	t.Parallel()
	units, _ := simbench.Lookup("units_km")
	swapped, _ := simbench.Lookup("swapped_digits")
	noPointer := strings.Replace(pkgEntry, "Rules for each record type live in references/.\n", "", 1)
	for _, tc := range []struct {
		name, pitfall string
		files         map[string]string
		opened        string
	}{
		{"units rule in a reference", "units_km", map[string]string{"SKILL.md": pkgEntry, "references/units.md": "- " + units.Rule + "\n", "notes/misc.md": "x\n"},
			"SKILL.md, references/units.md"},
		{"units rule in SKILL.md", "units_km", map[string]string{"SKILL.md": pkgEntry + "- " + units.Rule + "\n", "references/none.md": "# None\n"},
			"SKILL.md, references/none.md"},
		{"reference not pointed to", "units_km", map[string]string{"SKILL.md": noPointer, "references/units.md": "- " + units.Rule + "\n"},
			"SKILL.md"},
		{"reading rule in a script", "swapped_digits", map[string]string{"SKILL.md": pkgEntry, scriptFile: scriptHeader + "\n" + scriptFunc(swapped, swapped.Rule), "references/a.md": "a\n"},
			"SKILL.md, references/a.md, " + scriptFile},
	} {
		it := soleItem(t, tc.pitfall)
		bundle := bundleOf(t, tc.files)
		inline := rollout(t, quiet(), it, bundle)
		cm := &countingModel{Model: quiet()}
		viaTool := rollout(t, skillpkg.WithReadTool(cm), it, bundle)
		reply := lastReply(viaTool)
		note, rest, _ := strings.Cut(reply, "\n\n")
		if note != skillpkg.OpenedNote+" "+tc.opened+"]" {
			t.Errorf("%s: note %q, want the files %s", tc.name, note, tc.opened)
		}
		if want := lastReply(inline); rest != want || viaTool.Hard != inline.Hard {
			t.Errorf("%s: via the tool %q (hard %v), inline %q (hard %v): want the same answer", tc.name, rest, viaTool.Hard, want, inline.Hard)
		}
		wantCalls := 2
		if tc.opened == "SKILL.md" {
			wantCalls = 1
		}
		if len(cm.calls) != wantCalls || len(cm.calls[0].Tools) != 1 || cm.calls[0].Tools[0].Name != skillpkg.ReadFileTool {
			t.Errorf("%s: %d model calls (first with tools %v), want %d offering %s", tc.name, len(cm.calls), cm.calls[0].Tools, wantCalls, skillpkg.ReadFileTool)
		}
		if sys := cm.calls[0].Messages[0].Content; skillpkg.IsBundle(sys) || strings.Contains(sys, "SKILLPKG") || !strings.Contains(sys, skillpkg.ToolListHeader) {
			t.Errorf("%s: the target saw the bundle, or no file list:\n%s", tc.name, sys)
		}
	}

	// A plain skill: one call, no tools, no note.
	cm := &countingModel{Model: quiet()}
	ep := rollout(t, skillpkg.WithReadTool(cm), soleItem(t, "units_km"), pkgEntry)
	if len(cm.calls) != 1 || len(cm.calls[0].Tools) != 0 || strings.Contains(lastReply(ep), skillpkg.OpenedNote) {
		t.Errorf("a plain skill: %d calls, tools %v, reply %q", len(cm.calls), cm.calls[0].Tools, lastReply(ep))
	}
}

// lastReply is the episode's last assistant message.
func lastReply(ep *bench.Episode) string {
	reply := ""
	for _, msg := range ep.Messages {
		if msg.Role == llm.RoleAssistant {
			reply = msg.Text()
		}
	}
	return reply
}

// A failure analyst of a run that trains the description proposes
// set_description, asking the skill to be read before starting, when
// failed trajectories show an agent that never loaded the package; not
// when the description is not trained, when the agent loaded it (a
// package-world reply, or the backend's note of opened files), or when
// the description already asks.
func TestDescriptionEditWhenPackageNotLoaded(t *testing.T) {
	t.Parallel()
	entry := strings.Replace(pkgEntry, "description: Answer questions about archived records.", "description: Archived records.", 1)
	bundle := bundleOf(t, map[string]string{"SKILL.md": entry, "references/a.md": "a\n"})
	fail := func(reply string) prompts.Trajectory {
		return prompts.Trajectory{Hard: 0, Messages: []prompts.Message{{Role: "user", Content: "q"}, {Role: "assistant", Content: reply}}}
	}
	plain := fail("<answer>4821 mi</answer>")
	for _, tc := range []struct {
		name  string
		in    prompts.AnalystInput
		want  string
		count int
	}{
		{"not loaded", prompts.AnalystInput{Skill: bundle, Mode: prompts.ModePatch, TrainDescription: true, Trajectories: []prompts.Trajectory{plain, plain, {Hard: 1}}},
			"Archived records. Read it before you start.", 2},
		{"not trained", prompts.AnalystInput{Skill: bundle, Mode: prompts.ModePatch, Trajectories: []prompts.Trajectory{plain}}, "", 0},
		{"loaded inline", prompts.AnalystInput{Skill: bundle, Mode: prompts.ModePatch, TrainDescription: true,
			Trajectories: []prompts.Trajectory{fail("I read SKILL.md. <answer>1</answer>")}}, "", 0},
		{"loaded by a CLI", prompts.AnalystInput{Skill: bundle, Mode: prompts.ModePatch, TrainDescription: true,
			Trajectories: []prompts.Trajectory{fail(skillpkg.OpenedNote + " SKILL.md]\n\n<answer>1</answer>")}}, "", 0},
		{"already asks", prompts.AnalystInput{Skill: strings.Replace(bundle, "Archived records.", "Archived records. Read it before you start.", 1), Mode: prompts.ModePatch, TrainDescription: true,
			Trajectories: []prompts.Trajectory{plain}}, "", 0},
		{"single file", prompts.AnalystInput{Skill: entry, Mode: prompts.ModePatch, TrainDescription: true, Trajectories: []prompts.Trajectory{plain}}, "", 0},
	} {
		it, ok := descriptionEdit(&tc.in)
		if ok != (tc.want != "") || it.Content != tc.want || it.SupportCount != tc.count || (ok && it.Op != skillpkg.OpSetDescription) {
			t.Errorf("%s: descriptionEdit = %+v, %v; want %q with support %d", tc.name, it, ok, tc.want, tc.count)
		}
	}
}
