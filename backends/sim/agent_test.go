package sim

import (
	"errors"
	"strings"
	"testing"

	simbench "github.com/skillfleet/skillfleet/pkg/bench/sim"
)

// agentSkill returns a skill stating the rule of every pitfall the
// question cues, and the gold answer of the question.
func agentSkill(t *testing.T) (skill, gold string) {
	t.Helper()
	q := question
	var b strings.Builder
	b.WriteString("# Records\n")
	for _, id := range simbench.PitfallsInQuestion(q) {
		b.WriteString("- " + mustLookup(id).Rule + "\n")
	}
	gold, ok := simbench.BaseValue(q)
	if !ok {
		t.Fatalf("no record value in %q", q)
	}
	if len(simbench.PitfallsInQuestion(q)) == 0 {
		t.Fatalf("question %q cues no pitfall: the test needs one", q)
	}
	return b.String(), gold
}

// codexSkills is a skill listing as Codex CLI 0.169 writes it in a
// developer message (testdata/codex-request.json holds a whole capture).
const codexSkills = "<skills_instructions>\n## Skills\nA skill is a set of local instructions.\n### Skill roots\n" +
	"- `r0` = `/home/u/.codex/skills/.system`\n- `r1` = `/ws/.agents/skills`\n### Available skills\n" +
	"- imagegen: Generate or edit raster images. (file: r0/imagegen/SKILL.md)\n" +
	"- skillfleet-target: Guidance for the tasks in this workspace. Read it before you start. (file: r1/skillfleet-target/SKILL.md)\n" +
	"</skills_instructions>"

// claudeSkills is the listing Claude Code 2.1.328 sends in a system
// message (testdata/claude-request.json).
const claudeSkills = "The following skills are available for use with the Skill tool:\n\n" +
	"- skillfleet-target: Guidance for the tasks in this workspace. Read it before you start.\n" +
	"- dataviz: Use this skill whenever you are about to create ANY chart.\n"

func TestAgentFindsQuestionAndSkillListings(t *testing.T) {
	t.Parallel()
	c := &Conversation{System: []string{codexSkills}, Turns: []Turn{{Role: "user", Text: simbench.UserPrompt(question)}}}
	sk := listedSkills(c)
	if len(sk) != 2 || sk[1].name != "skillfleet-target" || sk[1].file != "/ws/.agents/skills/skillfleet-target/SKILL.md" {
		t.Fatalf("codex listing = %+v", sk)
	}
	st := readAgentState(c)
	if st.question != question {
		t.Fatalf("question = %q, want %q", st.question, question)
	}
	if got, ok := st.pickSkill(c); !ok || got.name != "skillfleet-target" {
		t.Fatalf("picked %+v %v, want skillfleet-target (imagegen does not fit)", got, ok)
	}
	c2 := &Conversation{System: []string{"env", claudeSkills}}
	if sk := listedSkills(c2); len(sk) != 2 || sk[0].name != "skillfleet-target" || sk[0].file != "" {
		t.Fatalf("claude listing = %+v", sk)
	}
}

func TestAgentWithoutReadableTaskFails(t *testing.T) {
	t.Parallel()
	c := &Conversation{Model: "m", Tools: []ToolDef{{Name: "exec_command", Params: []byte(`{"properties":{"cmd":{}}}`)}},
		Turns: []Turn{{Role: "user", Text: "Write me a poem."}}}
	_, err := quiet().Agent(t.Context(), c)
	if err == nil || !strings.Contains(err.Error(), "no sim benchmark question") {
		t.Fatalf("err = %v, want a request the sim cannot read", err)
	}
}

func asError[T error](err error, target *T) bool { return errors.As(err, target) }
