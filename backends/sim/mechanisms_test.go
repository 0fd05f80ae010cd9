package sim

import (
	"slices"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// The tests below pin the behaviours that make the training loop's
// mechanisms matter (doc.go, "What makes the mechanisms matter").

func TestTargetHarmSpill(t *testing.T) {
	t.Parallel()
	const seed = 3
	w, _ := simbench.Generate(simbench.PresetDemo, seed)
	ref, _ := simbench.ReferenceSkill(simbench.PresetDemo, seed)
	var off simbench.Pitfall // a pitfall the world does not use
	for _, p := range simbench.Catalogue() {
		if !slices.Contains(w.Active, p.ID) {
			off = p
			break
		}
	}
	skill := ref + "- " + off.Harmful + "\n"
	m := New(Options{Epsilon: -1})
	wrong := 0
	for _, it := range w.Test {
		spoiled := simbench.SpillDraw(it.Question, off.ID) < 0.6
		want := it.Answer
		if spoiled {
			want = off.Wrong(it.Answer)
			wrong++
		}
		if got := answer(t, m, skill, it.Question, 0); got != want {
			t.Errorf("%s (spoiled %v): answer %q, want %q", it.ID, spoiled, got, want)
		}
	}
	if rate := float64(wrong) / float64(len(w.Test)); rate < 0.45 || rate > 0.75 {
		t.Errorf("a harmful rule spoiled %.2f of the questions it does not concern, want about 0.6", rate)
	}
	if got := score(t, New(Options{Epsilon: -1, HarmSpill: -1}), w.Test, skill); got != 1 {
		t.Errorf("without spill-over: score %.3f, want 1", got)
	}
}

func TestHarmfulLineDiagnosis(t *testing.T) {
	t.Parallel()
	km, hex := mustLookup("units_km"), mustLookup("hex")
	skill := "# Skill\n- " + km.Rule + "\n- " + hex.Rule + "\n- " + hex.Harmful + "\n"
	trajs := []prompts.Trajectory{failedItem("hex", "4821"), failedItem("hex", "5821")}
	blind := New(Options{Epsilon: -1, HarmfulRate: -1, ReproposeRate: -1, DiagnoseRate: -1})
	in := prompts.AnalystInput{Mode: prompts.ModePatch, Skill: skill, Budget: 4, BatchSize: 2, Trajectories: trajs}

	// On its own, the analyst takes the harmful line for the rule.
	out := analyse(t, blind, in)
	if len(out.Patch.Edits) != 0 || len(out.FailureSummary) != 1 || !strings.Contains(out.FailureSummary[0].Description, "already has a line") {
		t.Errorf("undiagnosed: reply %+v, want no edit and the failures put down to the agent", out)
	}
	deletes := func(out prompts.AnalystReply) bool {
		return len(out.Patch.Edits) == 1 && out.Patch.Edits[0].Op == "delete" && out.Patch.Edits[0].Target == "- "+hex.Harmful && out.Patch.Edits[0].SupportCount == 2
	}
	// The meta skill names it: the analyst deletes it.
	named := in
	named.MetaSkill = neverPrefix + `"` + hex.Harmful + `" (it broke hex tasks).`
	if out := analyse(t, blind, named); !deletes(out) {
		t.Errorf("named by the meta skill: edits %+v, want the harmful line deleted with support 2", out.Patch.Edits)
	}
	// The step buffer lists it among rejected edits: the same.
	rejected := in
	rejected.StepBuffer = []prompts.BufferEntry{{Step: 1, Action: "reject", RejectedEdits: []prompts.RejectedEdit{
		{Op: "append", Content: "- " + hex.Harmful}, {Op: "append", Content: "- " + km.Rule},
	}}}
	if out := analyse(t, blind, rejected); !deletes(out) {
		t.Errorf("rejected in the step buffer: edits %+v, want the harmful line deleted with support 2", out.Patch.Edits)
	}
}

func TestLure(t *testing.T) {
	t.Parallel()
	lure, ok := simbench.Lure("format")
	if !ok || !lure.Sweeping {
		t.Fatalf("format has no lure")
	}
	isLure := func(e prompts.Item) bool { return e.Content == "- "+lure.Harmful }
	m := New(Options{Epsilon: -1, ReproposeRate: -1}) // q = 0.2: the lure tempts always
	two := []prompts.Trajectory{failedItem("currency_symbol", "4821"), failedItem("currency_symbol", "5821"), failedItem("percent_sign", "1234")}
	in := prompts.AnalystInput{Mode: prompts.ModePatch, Skill: testSkill, Budget: 4, BatchSize: 3, Trajectories: two}

	// Two kinds of formatting slips: one sweeping rule, with the support
	// of all three failures.
	edits := analyse(t, m, in).Patch.Edits
	if len(edits) != 1 || !isLure(edits[0]) || edits[0].SupportCount != 3 {
		t.Errorf("two format slips: edits %+v, want only the lure with support 3", edits)
	}
	// One kind: no lure.
	one := in
	one.Trajectories, one.BatchSize = two[:2], 2
	if edits := analyse(t, m, one).Patch.Edits; slices.ContainsFunc(edits, isLure) {
		t.Errorf("one format slip: edits %+v hold the lure", edits)
	}
	// Rejected in the step buffer: not proposed again (r = 0); with r = 1
	// proposed again, but with the least support.
	rejected := in
	rejected.StepBuffer = []prompts.BufferEntry{{Step: 1, Action: "reject", RejectedEdits: []prompts.RejectedEdit{{Op: "append", Content: "- " + lure.Harmful}}}}
	if edits := analyse(t, m, rejected).Patch.Edits; slices.ContainsFunc(edits, isLure) || len(edits) == 0 {
		t.Errorf("lure rejected, r=0: edits %+v, want other edits and no lure", edits)
	}
	again := New(Options{Epsilon: -1, ReproposeRate: 1})
	if edits := analyse(t, again, rejected).Patch.Edits; len(edits) != 1 || !isLure(edits[0]) || edits[0].SupportCount != 1 {
		t.Errorf("lure rejected, r=1: edits %+v, want the lure again with support 1", edits)
	}
	// Named by the meta skill: not proposed.
	named := in
	named.MetaSkill = neverPrefix + `"` + lure.Harmful + `" (it broke thousands_sep tasks).`
	if edits := analyse(t, m, named).Patch.Edits; slices.ContainsFunc(edits, isLure) {
		t.Errorf("lure named by the meta skill: edits %+v hold it", edits)
	}
	// No mistakes (q <= 0): no lure either.
	if edits := analyse(t, quiet(), in).Patch.Edits; slices.ContainsFunc(edits, isLure) || len(edits) != 2 {
		t.Errorf("q=0: edits %+v, want the two fixes", edits)
	}
}

func TestSpeculation(t *testing.T) {
	t.Parallel()
	m := New(Options{Epsilon: -1, ReproposeRate: -1})
	in := prompts.AnalystInput{Mode: prompts.ModePatch, Skill: testSkill, BatchSize: 1, Trajectories: []prompts.Trajectory{failedItem("units_km", "4821")}}
	// The default budget (4) leaves too little room to pad: floor(3q) = 0.
	for _, budget := range []int{1, 4} {
		in.Budget = budget
		if edits := analyse(t, m, in).Patch.Edits; len(edits) != 1 {
			t.Errorf("budget %d: %d edits %+v, want 1 (no padding)", budget, len(edits), edits)
		}
	}
	in.Budget = 50
	edits := analyse(t, m, in).Patch.Edits
	if len(edits) < 2 || len(edits) > 1+maxSpeculative {
		t.Fatalf("budget 50: %d edits %+v, want the fix padded with 1-%d guesses", len(edits), edits, maxSpeculative)
	}
	for _, e := range edits[1:] {
		plat := slices.Contains(simbench.Platitudes(), strings.TrimPrefix(e.Content, "- "))
		if e.SupportCount != 1 || (!plat && len(simbench.Harmful(e.Content)) != 1) {
			t.Errorf("budget 50: padding %+v, want a platitude or a harmful rule with support 1", e)
		}
	}
}

func TestSlowUpdateKeepsNeededGuidance(t *testing.T) {
	t.Parallel()
	km, hex, neg := mustLookup("units_km"), mustLookup("hex"), mustLookup("negative_sign")
	g := "4821"
	w := neg.Wrong(g)
	in := prompts.EpochInput{
		PrevSkill: "# Skill\n", Skill: "# Skill\n- " + hex.Rule + "\n",
		Previous: "- " + km.Rule + "\n- " + hex.Rule,
		Pairs: []prompts.Pair{{ID: "a", Task: "q", Category: "persistent_fail",
			Curr: prompts.Outcome{PredictedAnswer: w, FailReason: "wrong_answer: predicted '" + w + "' but expected '" + g + "'"}}},
	}
	var su prompts.SlowUpdateReply
	ask(t, quiet(), prompts.SlowUpdate, "", in, &su)
	// The new rule, then the earlier line the skill states nowhere else;
	// the hex line goes, the skill already has it.
	if want := "- " + neg.Rule + "\n- " + km.Rule; su.SlowUpdateContent != want {
		t.Errorf("slow_update_content = %q, want %q", su.SlowUpdateContent, want)
	}
}

func TestCompressionsDropFiller(t *testing.T) {
	t.Parallel()
	km := mustLookup("units_km")
	filler := "- " + simbench.Platitudes()[2]
	skill := "# Skill\n- " + km.Rule + "\n" + filler + "\n- Read the whole question.\n"
	c := compressions(skill)
	if len(c) == 0 || c[0].edit.Op != "delete" || c[0].edit.Target != filler {
		t.Fatalf("compressions = %+v, want the wordy platitude deleted first", c)
	}
	for _, p := range c {
		if p.edit.Target == "- Read the whole question." || p.edit.Target == "- "+km.Rule {
			t.Errorf("compression %+v drops a short line or a rule", p.edit)
		}
	}
}
