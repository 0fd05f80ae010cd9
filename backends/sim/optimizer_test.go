package sim

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

const testSkill = "# Skill\n\nAnswer from the record.\n\n## Things to watch\n- Be careful with distances.\n- Heights can be confusing.\n"

func analyse(t *testing.T, m *Model, in prompts.AnalystInput) prompts.AnalystReply {
	t.Helper()
	var out prompts.AnalystReply
	ask(t, m, prompts.AnalystFailure, in.Mode, in, &out)
	return out
}

func TestAnalystFailure(t *testing.T) {
	t.Parallel()
	km, hex, neg := mustLookup("units_km"), mustLookup("hex"), mustLookup("negative_sign")
	trajs := []prompts.Trajectory{failedItem("hex", "4821"), failedItem("units_km", "1234"), failedItem("units_km", "5678"), failedItem("negative_sign", "9123")}
	out := analyse(t, quiet(), prompts.AnalystInput{Mode: prompts.ModePatch, Skill: testSkill, Budget: 5, BatchSize: 4, Trajectories: trajs})

	if string(out.BatchSize) != "4" {
		t.Errorf("batch_size = %s, want 4", out.BatchSize)
	}
	var types []string
	for _, f := range out.FailureSummary {
		types = append(types, f.FailureType+"="+string(rune('0'+f.Count)))
	}
	if want := []string{"units_km=2", "hex=1", "negative_sign=1"}; !slices.Equal(types, want) {
		t.Errorf("failure_summary = %v, want %v (by count, then first seen)", types, want)
	}
	edits := out.Patch.Edits
	if len(edits) != 3 {
		t.Fatalf("edits = %+v, want 3", edits)
	}
	// units_km and negative_sign have vague lines: replaced. hex has none:
	// inserted after the heading or appended.
	if e := edits[0]; e.Op != "replace" || e.Target != km.Vague || !simbench.Covered(e.Content, "units_km") || e.SupportCount != 2 {
		t.Errorf("edit 0 = %+v, want a replace of %q with a units_km rule, support 2", e, km.Vague)
	}
	if e := edits[1]; (e.Op != "append" && !(e.Op == "insert_after" && e.Target == "## Things to watch")) || !simbench.Covered(e.Content, "hex") {
		t.Errorf("edit 1 = %+v, want a hex rule appended or inserted after the heading", e)
	}
	if e := edits[2]; e.Op != "replace" || e.Target != neg.Vague || !simbench.Covered(e.Content, "negative_sign") {
		t.Errorf("edit 2 = %+v, want a replace of %q", e, neg.Vague)
	}
	_ = hex

	// The budget caps the edits.
	out = analyse(t, quiet(), prompts.AnalystInput{Mode: prompts.ModePatch, Skill: testSkill, Budget: 1, BatchSize: 4, Trajectories: trajs})
	if len(out.Patch.Edits) != 1 || out.Patch.Edits[0].Target != km.Vague {
		t.Errorf("budget 1: edits = %+v, want only the units_km fix", out.Patch.Edits)
	}
}

func TestAnalystFailureSkipsCoveredAndDeletesHarmful(t *testing.T) {
	t.Parallel()
	km, hex := mustLookup("units_km"), mustLookup("hex")
	skill := "# Skill\n- " + km.Rule + "\n- " + hex.Rule + "\n- " + hex.Harmful + "\n"
	trajs := []prompts.Trajectory{failedItem("units_km", "1234"), failedItem("hex", "4821"), failedItem("hex", "5821")}
	out := analyse(t, quiet(), prompts.AnalystInput{Mode: prompts.ModePatch, Skill: skill, Budget: 4, BatchSize: 3, Trajectories: trajs, SkillAware: true})
	want := []prompts.Item{{Op: "delete", Target: "- " + hex.Harmful, SupportCount: 2, Label: "SKILL_DEFECT"}}
	if diff := cmp.Diff(want, out.Patch.Edits); diff != "" {
		t.Errorf("edits (-want +got):\n%s", diff)
	}
	var notes []string
	if err := json.Unmarshal(out.AppendixNotes, &notes); err != nil || len(notes) != 1 || !strings.Contains(notes[0], km.Rule) {
		t.Errorf("appendix_notes = %s, want one reminder of the covered units_km rule", out.AppendixNotes)
	}
}

func TestAnalystFailureUnrecognised(t *testing.T) {
	t.Parallel()
	tr := failedItem("hex", "4821")
	tr.Answer = simbench.Typo("4821")
	out := analyse(t, quiet(), prompts.AnalystInput{Mode: prompts.ModePatch, Skill: testSkill, Budget: 3, BatchSize: 1, Trajectories: []prompts.Trajectory{tr}})
	if len(out.Patch.Edits) != 0 || len(out.FailureSummary) != 1 || out.FailureSummary[0].FailureType != "unrecognised_answer" {
		t.Errorf("reply = %+v, want no edits and one unrecognised_answer group", out)
	}
}

func TestAnalystRejectedEdits(t *testing.T) {
	t.Parallel()
	trajs := []prompts.Trajectory{failedItem("hex", "4821")}
	in := prompts.AnalystInput{Mode: prompts.ModePatch, Skill: "# Skill\n", Budget: 2, BatchSize: 1, Trajectories: trajs}
	first := analyse(t, quiet(), in).Patch.Edits
	if len(first) != 1 {
		t.Fatalf("edits = %+v, want 1", first)
	}
	reject := func(texts ...string) []prompts.BufferEntry {
		var rej []prompts.RejectedEdit
		for _, text := range texts {
			rej = append(rej, prompts.RejectedEdit{Op: "append", Content: "- " + text})
		}
		return []prompts.BufferEntry{{Step: 1, Action: "reject", NTotal: 5, NFail: 1, RejectedEdits: rej}}
	}
	if first[0].Op != "append" {
		t.Fatalf("edit = %+v, want an append (the skill has no heading or vague line)", first[0])
	}
	in.StepBuffer = reject(strings.TrimPrefix(first[0].Content, "- "))
	again := analyse(t, quiet(), in).Patch.Edits
	if len(again) != 1 || cmp.Equal(again[0], first[0]) || !simbench.Covered(again[0].Content, "hex") {
		t.Errorf("after rejection: edits = %+v, want another wording of the hex rule than %+v", again, first[0])
	}
	// Every wording rejected: nothing with r = 0, a rejected one with r = 1.
	in.StepBuffer = reject(mustLookup("hex").Texts()...)
	if got := analyse(t, quiet(), in).Patch.Edits; len(got) != 0 {
		t.Errorf("r=0, all rejected: edits = %+v, want none", got)
	}
	always := New(Options{Epsilon: -1, HarmfulRate: -1, ReproposeRate: 1})
	if got := analyse(t, always, in).Patch.Edits; len(got) != 1 || !simbench.Covered(got[0].Content, "hex") {
		t.Errorf("r=1, all rejected: edits = %+v, want a rejected hex rule again", got)
	}
}

func TestAnalystMistakes(t *testing.T) {
	t.Parallel()
	// With q = 1 every proposal is harmful or irrelevant, and the meta
	// skill keeps a named harmful rule out.
	m := New(Options{Epsilon: -1, HarmfulRate: 1, ReproposeRate: -1})
	var trajs []prompts.Trajectory
	for _, p := range simbench.Catalogue() {
		trajs = append(trajs, failedItem(p.ID, "4821"))
	}
	in := prompts.AnalystInput{Mode: prompts.ModePatch, Skill: "# Skill\n", Budget: 30, BatchSize: len(trajs), Trajectories: trajs}
	edits := analyse(t, m, in).Patch.Edits
	harmful, irrelevant, lures := 0, 0, 0
	for _, e := range edits {
		switch ids := simbench.Harmful(e.Content); {
		case len(ids) == 1:
			harmful++
			// A category's lure stands in for the fixes of all the
			// category's failures and sums their support; any other
			// mistake has support 1.
			if p := mustLookup(ids[0]); p.Sweeping {
				lures++
				if want := countCategory(p.Category); e.SupportCount != want {
					t.Errorf("lure %+v has support %d, want %d (one per %s failure)", e, e.SupportCount, want, p.Category)
				}
				continue
			}
		case slices.Contains(simbench.Platitudes(), strings.TrimPrefix(e.Content, "- ")):
			irrelevant++
		default:
			t.Errorf("q=1: edit %+v is a real fix", e)
		}
		if e.SupportCount != 1 {
			t.Errorf("mistaken edit %+v has support %d, want 1", e, e.SupportCount)
		}
	}
	if harmful == 0 || irrelevant == 0 || lures != 2 {
		t.Errorf("q=1: %d harmful (%d lures) and %d irrelevant edits, want both kinds and the two lures", harmful, lures, irrelevant)
	}
	var meta []string
	for _, p := range simbench.Catalogue() {
		meta = append(meta, `- Never propose: "`+p.Harmful+`"`)
	}
	in.MetaSkill = strings.Join(meta, "\n")
	for _, e := range analyse(t, m, in).Patch.Edits {
		if len(simbench.Harmful(e.Content)) > 0 {
			t.Errorf("edit %+v proposes a harmful rule the meta skill names", e)
		}
	}
}

// countCategory is how many catalogue pitfalls belong to a category.
func countCategory(c string) int {
	n := 0
	for _, p := range simbench.Catalogue() {
		if p.Category == c {
			n++
		}
	}
	return n
}

func TestAnalystModes(t *testing.T) {
	t.Parallel()
	trajs := []prompts.Trajectory{failedItem("units_km", "1234"), failedItem("hex", "4821")}
	patch := analyse(t, quiet(), prompts.AnalystInput{Mode: prompts.ModePatch, Skill: testSkill, Budget: 3, BatchSize: 2, Trajectories: trajs}).Patch.Edits

	rw := analyse(t, quiet(), prompts.AnalystInput{Mode: prompts.ModeRewrite, Skill: testSkill, Budget: 3, BatchSize: 2, Trajectories: trajs}).Patch
	if len(rw.ReviseSuggestions) != 2 || len(rw.Edits) != 0 {
		t.Fatalf("rewrite mode: patch = %+v, want 2 revise_suggestions", rw)
	}
	for _, s := range rw.ReviseSuggestions {
		if s.Type == "" || s.Title == "" || s.Instruction == "" || s.Motivation == "" || s.PriorityHint == "" {
			t.Errorf("suggestion %+v lacks a field", s)
		}
	}
	var edits []prompts.Item
	for _, s := range rw.ReviseSuggestions {
		e, ok := suggestionEdit(s)
		if !ok {
			t.Fatalf("suggestion %+v does not read back as an edit", s)
		}
		edits = append(edits, e)
	}
	var re prompts.RewriteReply
	ask(t, quiet(), prompts.Rewrite, "", prompts.RewriteInput{Skill: testSkill, Suggestions: rw.ReviseSuggestions}, &re)
	if want := applyEdits(testSkill, edits); re.NewSkill != want || len(re.ChangeSummary) != 2 {
		t.Errorf("rewrite new_skill =\n%s\nwant (the suggestions applied)\n%s", re.NewSkill, want)
	}
	full := analyse(t, quiet(), prompts.AnalystInput{Mode: prompts.ModeFullRewrite, Skill: testSkill, BatchSize: 2, Trajectories: trajs}).Patch
	if len(full.SkillCandidates) != 1 || len(full.SkillCandidates[0].ChangeSummary) != 2 {
		t.Fatalf("full rewrite: candidates = %+v, want one with two changes", full.SkillCandidates)
	}
	for name, skill := range map[string]string{"patch": applyEdits(testSkill, patch), "rewrite": re.NewSkill, "full rewrite": full.SkillCandidates[0].NewSkill} {
		if !simbench.Covered(skill, "units_km") || !simbench.Covered(skill, "hex") || strings.Contains(skill, "Be careful with distances.") {
			t.Errorf("%s: new skill does not hold both rules with the vague line replaced:\n%s", name, skill)
		}
	}
}

func TestAnalystSuccess(t *testing.T) {
	t.Parallel()
	km := mustLookup("units_km")
	long := "Never restate a distance in miles; the record's kilometres are the answer."
	skill := "# Skill\n- " + long + "\n- " + km.Vague + "\n"
	tr := prompts.Trajectory{ID: "s1", Task: "Note " + km.Cue + ". " + simbench.RecordMarker + "1234.", Hard: 1, Soft: 1, Answer: "1234", NTurns: 1,
		Messages: []prompts.Message{{Role: "assistant", Content: "<answer>1234</answer>"}}}
	proposed := 0
	for seed := range 30 {
		in := prompts.AnalystInput{Mode: prompts.ModePatch, Skill: skill, Budget: 2, BatchSize: seed + 1, Trajectories: []prompts.Trajectory{tr}}
		var out prompts.AnalystReply
		ask(t, quiet(), prompts.AnalystSuccess, prompts.ModePatch, in, &out)
		if len(out.SuccessPatterns) != 1 || !strings.Contains(out.SuccessPatterns[0], km.Rule) {
			t.Fatalf("success_patterns = %v, want the units_km rule", out.SuccessPatterns)
		}
		for _, e := range out.Patch.Edits {
			proposed++
			after := applyEdits(skill, []prompts.Item{e})
			if !simbench.Covered(after, "units_km") || len(after) >= len(skill) {
				t.Errorf("success edit %+v does not shorten the skill while keeping the rule:\n%s", e, after)
			}
		}
	}
	if proposed == 0 || proposed == 30 {
		t.Errorf("%d of 30 success analyses proposed an edit, want some but not all", proposed)
	}
}

func TestMerge(t *testing.T) {
	t.Parallel()
	km, hex := mustLookup("units_km"), mustLookup("hex")
	p1 := []prompts.Item{
		{Op: "append", Content: "- " + km.Rule, SupportCount: 2},
		{Op: "append", Content: "- " + simbench.Platitudes()[0], SupportCount: 1},
	}
	p2 := []prompts.Item{
		{Op: "append", Content: "- " + hex.Rule, SupportCount: 1},
		{Op: "replace", Target: km.Vague, Content: km.Paraphrases[0], SupportCount: 3},
	}
	p3 := []prompts.Item{{Op: "append", Content: "- " + hex.Paraphrases[1]}}
	var out prompts.MergeReply
	ask(t, quiet(), prompts.MergeFailure, prompts.ModePatch, prompts.MergeInput{Skill: testSkill, Level: 1, Patches: [][]prompts.Item{p1, p2, p3}}, &out)
	want := []prompts.Item{
		{Op: "replace", Target: km.Vague, Content: km.Paraphrases[0], SupportCount: 5, SourceType: "failure"},
		{Op: "append", Content: "- " + hex.Rule, SupportCount: 2, SourceType: "failure"},
		{Op: "append", Content: "- " + simbench.Platitudes()[0], SupportCount: 1, SourceType: "failure"},
	}
	if diff := cmp.Diff(want, out.Edits); diff != "" || out.Reasoning == "" {
		t.Errorf("merged edits (-want +got):\n%s", diff)
	}

	var final prompts.MergeReply
	succ := []prompts.Item{{Op: "delete", Target: "- " + hex.Harmful, SupportCount: 1, SourceType: "success"}, {Op: "append", Content: "- " + km.Rule, SourceType: "success"}}
	ask(t, quiet(), prompts.MergeFinal, prompts.ModePatch, prompts.MergeFinalInput{Skill: testSkill, Failure: out.Edits, Success: succ}, &final)
	if len(final.Edits) != 4 || final.Edits[0].SupportCount != 6 || final.Edits[3].Op != "delete" {
		t.Errorf("merge_final edits = %+v, want 4 with the units_km rule first (support 6)", final.Edits)
	}

	// Rewrite mode merges suggestions the same way.
	s := func(it prompts.Item) prompts.Item { return suggestion(proposal{edit: it, pitfall: "x"}) }
	var rw prompts.MergeReply
	ask(t, quiet(), prompts.MergeSuccess, prompts.ModeRewrite, prompts.MergeInput{Skill: testSkill, Level: 1,
		Patches: [][]prompts.Item{{s(p1[0])}, {s(p2[1]), s(p3[0])}}}, &rw)
	if len(rw.ReviseSuggestions) != 2 || rw.ReviseSuggestions[0].SupportCount != 5 || rw.ReviseSuggestions[0].Type != "clarify" || rw.ReviseSuggestions[0].SourceType != "success" {
		t.Errorf("rewrite merge = %+v, want the units_km suggestions fused (support 5) and the hex one", rw.ReviseSuggestions)
	}

	// Full-rewrite candidates fold into one.
	c1 := applyEdits(testSkill, []prompts.Item{p2[1]})
	c2 := applyEdits(testSkill, []prompts.Item{p1[0], p2[0]})
	var fr prompts.MergeReply
	ask(t, quiet(), prompts.MergeFailure, prompts.ModeFullRewrite, prompts.MergeInput{Skill: testSkill, Level: 1,
		Patches: [][]prompts.Item{{{Title: "a", NewSkill: c1, ChangeSummary: []string{"x"}}}, {{Title: "b", NewSkill: c2, ChangeSummary: []string{"y"}}}}}, &fr)
	if len(fr.SkillCandidates) != 1 {
		t.Fatalf("full-rewrite merge = %+v, want one candidate", fr.SkillCandidates)
	}
	got := fr.SkillCandidates[0]
	if !simbench.Covered(got.NewSkill, "units_km") || !simbench.Covered(got.NewSkill, "hex") || strings.Contains(got.NewSkill, km.Vague) ||
		strings.Count(strings.ToLower(got.NewSkill), "kilomet") != 1 || got.SupportCount != 2 {
		t.Errorf("folded candidate = %+v, want both rules once, the vague line gone, support 2", got)
	}
}

func TestRankAndLearningRate(t *testing.T) {
	t.Parallel()
	km, hex := mustLookup("units_km"), mustLookup("hex")
	items := []prompts.Item{
		{Op: "append", Content: "- " + simbench.Platitudes()[1], SupportCount: 1},
		{Op: "append", Content: "- " + km.Rule, SupportCount: 4},
		{Op: "append", Content: "- " + hex.Harmful, SupportCount: 1},
		{Op: "append", Content: "- " + hex.Rule, SupportCount: 2},
	}
	var rk prompts.RankReply
	ask(t, quiet(), prompts.Ranking, prompts.ModePatch, prompts.RankInput{Skill: testSkill, Budget: 3, Items: items}, &rk)
	var got []int
	for _, raw := range rk.SelectedIndices {
		var i int
		if err := json.Unmarshal(raw, &i); err != nil {
			t.Fatalf("selected index %s is not an integer", raw)
		}
		got = append(got, i)
	}
	if want := []int{1, 3, 0}; !slices.Equal(got, want) {
		t.Errorf("selected_indices = %v, want %v", got, want)
	}
	ask(t, quiet(), prompts.Ranking, prompts.ModePatch, prompts.RankInput{Skill: testSkill, Budget: 0, Items: items}, &rk)
	if len(rk.SelectedIndices) != 0 {
		t.Errorf("budget 0: selected %s", rk.SelectedIndices)
	}

	var texts []string
	for _, it := range items {
		texts = append(texts, it.Content)
	}
	var lr prompts.LRReply
	ask(t, quiet(), prompts.LRController, "", prompts.LRInput{Skill: testSkill, N: 4, Items: texts}, &lr)
	if string(lr.LearningRate) != "2" || len(lr.RiskNotes) != 1 {
		t.Errorf("learning_rate = %s, risks %v; want 2 (units_km, hex) and one risk", lr.LearningRate, lr.RiskNotes)
	}
	ask(t, quiet(), prompts.LRController, "", prompts.LRInput{Skill: testSkill, Items: []string{"add_rule: Add a rule on units_km", "clarify: Sharpen the guidance on hex", "add_rule: Add a rule on hex"}}, &lr)
	if string(lr.LearningRate) != "2" {
		t.Errorf("learning_rate from suggestion titles = %s, want 2", lr.LearningRate)
	}
	ask(t, quiet(), prompts.LRController, "", prompts.LRInput{Skill: testSkill, Items: []string{"nothing known"}}, &lr)
	if string(lr.LearningRate) != "1" {
		t.Errorf("learning_rate = %s, want 1 at least", lr.LearningRate)
	}
}

func TestEpochPrompts(t *testing.T) {
	t.Parallel()
	km, hex := mustLookup("units_km"), mustLookup("hex")
	pair := func(id, cat, g string) prompts.Pair {
		p, _ := simbench.Lookup(id)
		w := p.Wrong(g)
		return prompts.Pair{ID: id + g, Task: "q", Category: cat,
			Prev: prompts.Outcome{Hard: 1, Soft: 1, PredictedAnswer: g},
			Curr: prompts.Outcome{PredictedAnswer: w, FailReason: "wrong_answer: predicted '" + w + "' but expected '" + g + "'"}}
	}
	skill := "# Skill\n- " + hex.Rule + "\n- " + hex.Harmful + "\n"
	in := prompts.EpochInput{PrevSkill: "# Skill\n", Skill: skill, Counts: map[string]int{"regressed": 3},
		Pairs: []prompts.Pair{pair("hex", "regressed", "4821"), pair("units_km", "persistent_fail", "1234"), pair("hex", "regressed", "5821"),
			{ID: "ok", Task: "q", Category: "stable_success", Prev: prompts.Outcome{Hard: 1}, Curr: prompts.Outcome{Hard: 1}}}}

	var su prompts.SlowUpdateReply
	ask(t, quiet(), prompts.SlowUpdate, "", in, &su)
	if want := "- " + hex.Rule + "\n- " + km.Rule; su.SlowUpdateContent != want {
		t.Errorf("slow_update_content = %q, want %q", su.SlowUpdateContent, want)
	}

	var ms prompts.MetaSkillReply
	ask(t, quiet(), prompts.MetaSkill, "", in, &ms)
	if !strings.Contains(ms.MetaSkillContent, hex.Harmful) || strings.Contains(ms.MetaSkillContent, km.Harmful) {
		t.Errorf("meta_skill_content = %q, want it to name the hex harmful rule only", ms.MetaSkillContent)
	}
	in.Previous, in.Skill = ms.MetaSkillContent, "# Skill\n"
	ask(t, quiet(), prompts.MetaSkill, "", in, &ms)
	if !strings.Contains(ms.MetaSkillContent, hex.Harmful) {
		t.Errorf("meta skill forgot an earlier harmful rule: %q", ms.MetaSkillContent)
	}

	in.Pairs = in.Pairs[3:]
	in.Previous = "- keep going"
	ask(t, quiet(), prompts.SlowUpdate, "", in, &su)
	if su.SlowUpdateContent != "- keep going" {
		t.Errorf("no evidence: slow_update_content = %q, want the previous guidance", su.SlowUpdateContent)
	}

	var cn prompts.ConsolidateReply
	ask(t, quiet(), prompts.Consolidate, "", prompts.ConsolidateInput{Notes: []string{"Check units. Always.", "check units.", " ", strings.Repeat("x", 300)}}, &cn)
	if len(cn.Notes) != 2 || cn.Notes[0] != "Check units." || len([]rune(cn.Notes[1])) != maxNote {
		t.Errorf("notes = %q", cn.Notes)
	}
}

func TestOptimizerIsDeterministic(t *testing.T) {
	t.Parallel()
	m := New(Options{})
	var trajs []prompts.Trajectory
	for _, p := range simbench.Catalogue()[:10] {
		trajs = append(trajs, failedItem(p.ID, "4821"))
	}
	in := prompts.AnalystInput{Mode: prompts.ModePatch, Skill: testSkill, Budget: 10, BatchSize: 10, Trajectories: trajs}
	a := ask(t, m, prompts.AnalystFailure, prompts.ModePatch, in, &prompts.AnalystReply{})
	b := ask(t, New(Options{}), prompts.AnalystFailure, prompts.ModePatch, in, &prompts.AnalystReply{})
	if diff := cmp.Diff(a, b); diff != "" {
		t.Errorf("same payload, different replies (-first +second):\n%s", diff)
	}
	other := ask(t, New(Options{Seed: 99}), prompts.AnalystFailure, prompts.ModePatch, in, &prompts.AnalystReply{})
	if other.Content == a.Content {
		t.Log("a different salt gave the same reply (possible, but unlikely)")
	}
}

func TestApplyEdits(t *testing.T) {
	t.Parallel()
	skill := "# S\n- a\n- b\n\n<!-- SLOW_UPDATE_START -->\n- a\n<!-- SLOW_UPDATE_END -->\n"
	got := applyEdits(skill, []prompts.Item{
		{Op: "append", Content: "- c"},
		{Op: "insert_after", Target: "# S", Content: "- first"},
		{Op: "replace", Target: "- a", Content: "- A"},
		{Op: "delete", Target: "b"},
		{Op: "replace", Target: "missing", Content: "x"},
		{Op: "insert_after", Target: "missing", Content: "- d"},
	})
	want := "# S\n- first\n- A\n- c\n- d\n\n<!-- SLOW_UPDATE_START -->\n- a\n<!-- SLOW_UPDATE_END -->\n"
	if got != want {
		t.Errorf("applyEdits =\n%q\nwant\n%q", got, want)
	}
}
