package sleep

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	simmodel "github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/nightly"
	"github.com/skillfleet/skillfleet/pkg/prompts"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// personaPackage is researcher-package's seed package as a night reads it.
func personaPackage(t *testing.T) string {
	t.Helper()
	_, files, ok := nightly.PersonaPackage(nightly.PersonaResearcherPackage)
	if !ok {
		t.Fatal("no package for researcher-package")
	}
	p, err := skillpkg.New(files, skillpkg.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	text, err := nightly.EnsureSkillBlock(skillpkg.Encode(p))
	if err != nil {
		t.Fatal(err)
	}
	return text
}

func TestConsolidatePersonaPackage(t *testing.T) {
	m := simmodel.NewSleepAware(simmodel.New(simmodel.Options{}))
	tasks := personaTasks(t, m)
	rep := &LocalReplayer{Model: m, Name: "sim", Env: nightly.NewEnv(nightly.EnvConfig{})}
	skill := personaPackage(t)
	s := Settings{EvolveSkill: true, EvolveMemory: true, NoRegression: true}
	out, err := Consolidate(t.Context(), s, Deps{Replayer: rep, Optimizer: m, OptimizerName: "sim"},
		Input{Tasks: tasks, Skill: skill, Memory: nightly.ScaffoldMemory(), Package: true})
	if err != nil {
		t.Fatal(err)
	}
	if !out.Accepted || out.Final == nil || !(out.Final.Value > out.Baseline.Value) || !out.Package {
		t.Fatalf("outcome %s (%s): baseline %+v final %+v", out.Action, out.Reason, out.Baseline, out.Final)
	}
	t.Logf("baseline %.3f → fresh final %.3f; files changed %v", out.Baseline.Value, out.Final.Value, out.FilesChanged)
	refAccepted := false
	for _, tr := range out.Trials {
		t.Logf("trial %s %s %s: %v (%s)", tr.Edit.File, tr.Edit.Op, tr.Edit.Content, tr.Accepted, tr.Why)
		if tr.Edit.File == "references/arxiv.md" && tr.Accepted {
			refAccepted = true
		}
		if tr.Edit.Content == nightly.HabitHarmful && tr.Accepted {
			t.Fatal("the gate let the harmful rule in")
		}
	}
	if !refAccepted {
		t.Fatal("no accepted edit in references/arxiv.md")
	}
	if strings.Join(out.FilesChanged, ",") != "SKILL.md,references/arxiv.md" {
		t.Fatalf("files changed %v, want SKILL.md and references/arxiv.md", out.FilesChanged)
	}
	before, _ := skillpkg.Decode(skill)
	after, err := skillpkg.Decode(out.ProposedSkill)
	if err != nil {
		t.Fatal(err)
	}
	if nightly.OutsideBlock(after.Entry()) != nightly.OutsideBlock(before.Entry()) {
		t.Fatalf("SKILL.md changed outside the learned block:\n%s", after.Entry())
	}
	if a, _ := after.File("references/doi.md"); a != func() string { b, _ := before.File("references/doi.md"); return b }() {
		t.Fatal("references/doi.md changed")
	}
	if ref, _ := after.File("references/arxiv.md"); !strings.Contains(ref, nightly.HabitArxivID) {
		t.Fatalf("references/arxiv.md = %q", ref)
	}
	if lines := nightly.LearnedLines(after.Entry()); len(lines) != 1 || lines[0] != nightly.HabitWrap {
		t.Fatalf("learned lines %q: want only the wrap habit (the arXiv rule lives in references/)", lines)
	}
	if out.MemoryChanged {
		t.Fatal("the memory changed: the skill package alone fixed the failures")
	}
	// The single-file researcher's night, with the same package text
	// given as a plain file, learns the rule as a learned line: the
	// reference file is the package's doing.
	plain := personaTasks(t, m)
	outPlain, err := Consolidate(t.Context(), s, Deps{Replayer: rep, Optimizer: m, OptimizerName: "sim"},
		Input{Tasks: plain, Skill: nightly.ScaffoldSkill(), Memory: nightly.ScaffoldMemory()})
	if err != nil || outPlain.Package || len(outPlain.FilesChanged) != 0 || skillpkg.IsBundle(outPlain.ProposedSkill) {
		t.Fatalf("single-file night: %v, %+v", err, outPlain)
	}
}

// hostileReflector answers reflection prompts with edits a night must
// refuse, and passes every other request to the sim.
type hostileReflector struct{ base llm.Model }

func (h hostileReflector) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	kind, _, err := prompts.ExtractPayload(req.Messages[len(req.Messages)-1].Text())
	if err != nil || kind != nightly.KindReflect {
		return h.base.Chat(ctx, req)
	}
	edits := []nightly.Edit{
		{File: "../escape.md", Op: "create_file", Content: "x"},
		{File: "/etc/cron.d/x", Op: "create_file", Content: "x"},
		{File: "scripts/run.sh", Op: "create_file", Content: "echo hi\n"},
		{File: "references/doi.md", Op: "delete", Content: "DOI"},
		{File: "references/doi.md", Op: "create_file", Content: "clobber\n"},
		{File: "references/blob.md", Op: "create_file", Content: "a\x00b"},
		{File: "references/key.md", Op: "append", Content: "key sk-proj-PlantedKey0123456789abcdefXYZ"},
		{File: "references/huge.md", Op: "create_file", Content: strings.Repeat("x", 70<<10)},
		{File: "references/marker.md", Op: "create_file", Content: nightly.LearnedEnd},
		{File: "references/missing.md", Op: "append", Content: "- more"},
	}
	b, _ := json.Marshal(nightly.ReflectReply{Edits: edits})
	return &llm.Response{Content: string(b), Attempts: 1}, nil
}

func TestConsolidateCountsRefusedPackageEdits(t *testing.T) {
	sim := simmodel.NewSleepAware(simmodel.New(simmodel.Options{}))
	tasks := personaTasks(t, sim)
	rep := &LocalReplayer{Model: sim, Name: "sim", Env: nightly.NewEnv(nightly.EnvConfig{})}
	skill := personaPackage(t)
	out, err := Consolidate(t.Context(), Settings{EvolveSkill: true, EvolveMemory: true, EditBudget: 20},
		Deps{Replayer: rep, Optimizer: hostileReflector{sim}, OptimizerName: "sim"},
		Input{Tasks: tasks, Skill: skill, Memory: nightly.ScaffoldMemory(), Package: true})
	if err != nil {
		t.Fatal(err)
	}
	if out.Accepted || len(out.Trials) != 0 || out.ProposedSkill != skill {
		t.Fatalf("a hostile edit reached a trial or the proposal: %s, trials %+v", out.Action, out.Trials)
	}
	want := map[string]int{
		// the skill's ten edits
		"path_escape": 1, "absolute_path": 1, nightly.RefuseNotAReference: 1, nightly.RefuseFileOp: 1, "file_exists": 1,
		"binary": 1, nightly.RefuseSecret: 1, "file_too_large": 1, nightly.RefuseMarker: 1, "no_such_file": 1,
		// the memory file's ten: one file, so none is a package edit
		nightly.RefuseNotAPackage: 10,
	}
	for reason, n := range want {
		if out.RefusedByReason[reason] != n {
			t.Errorf("refused %s: %d, want %d (all: %v)", reason, out.RefusedByReason[reason], n, out.RefusedByReason)
		}
	}
	if len(out.Refused) != 20 {
		t.Fatalf("%d refusals, want 20", len(out.Refused))
	}
	for _, r := range out.Refused {
		if strings.Contains(r.Detail+r.Edit.Content, "PlantedKey") {
			t.Fatalf("a refusal holds the secret: %+v", r)
		}
		if len(r.Edit.Content) > 1000 || strings.ContainsRune(r.Edit.Content, 0) {
			t.Fatalf("a refusal shows its content unclipped or binary: %d bytes", len(r.Edit.Content))
		}
	}
}
