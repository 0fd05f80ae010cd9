package sim

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
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

// runShellLoop plays a CLI's tool loop: it asks the agent for a turn,
// runs each exec_command call with a real shell in dir, and feeds the
// output back (with Codex's header), until the agent answers. It returns
// the answer turn and the actions in order.
func runShellLoop(t *testing.T, m *Model, dir, system string) (*AgentReply, []string, []string) {
	t.Helper()
	c := &Conversation{Model: "sim-target", System: []string{system},
		Tools: []ToolDef{{Name: "exec_command", Params: []byte(`{"properties":{"cmd":{}}}`)}},
		Turns: []Turn{{Role: "user", Text: simbench.UserPrompt(question)}}}
	var actions, cmds []string
	for range 50 {
		r, err := m.Agent(t.Context(), c)
		if err != nil {
			t.Fatal(err)
		}
		actions = append(actions, r.Action)
		if len(r.Calls) == 0 {
			return r, actions, cmds
		}
		call := r.Calls[0]
		var args struct {
			Cmd string `json:"cmd"`
		}
		if err := json.Unmarshal([]byte(call.Args), &args); err != nil {
			t.Fatal(err)
		}
		cmds = append(cmds, args.Cmd)
		cmd := osexec.Command("sh", "-c", args.Cmd)
		cmd.Dir = dir
		out, _ := cmd.CombinedOutput()
		c.Turns = append(c.Turns, Turn{Role: "assistant", Call: &call},
			Turn{Role: "tool", CallID: call.ID, Output: "Chunk ID: 1a2b3c\nWall time: 0.01 seconds\nProcess exited with code 0\nOutput:\n" + string(out)})
	}
	t.Fatalf("no answer after 50 turns: actions %v", actions)
	return nil, nil, nil
}

// TestAgentOpensPackageFiles: a package written as a skill directory (real
// files, read by a real shell) is listed and its references and scripts
// opened when SKILL.md points to references/; the answer is right when
// the references hold the rules, and the reply names the files. A SKILL.md
// that does not point into its directory is read alone, as before.
func TestAgentOpensPackageFiles(t *testing.T) {
	t.Parallel()
	var units, reading string
	for _, id := range simbench.PitfallsInQuestion(question) {
		switch p := mustLookup(id); p.Category {
		case "units":
			units = "- " + p.Rule + "\n"
		case "reading":
			reading = fmt.Sprintf("def keep(code):\n    %q\n    return code\n", p.Rule)
		}
	}
	gold, _ := simbench.BaseValue(question)
	for _, tc := range []struct {
		name    string
		files   map[string]string
		actions string
		right   bool
		reply   string
	}{
		{"rules in references", map[string]string{
			"SKILL.md":              "---\nname: records\ndescription: d\n---\nRules live in references/.\n",
			"references/units.md":   units,
			"references/other.md":   "nothing\n",
			"scripts/read_codes.py": reading,
		}, "read_skill,list_skill,read_skill_file,read_skill_file,read_skill_file,answer", true,
			"opened references/other.md, references/units.md and ran scripts/read_codes.py"},
		{"rule missing", map[string]string{
			"SKILL.md":              "---\nname: records\ndescription: d\n---\nRules live in references/.\n",
			"references/other.md":   "nothing\n",
			"scripts/read_codes.py": reading,
		}, "read_skill,list_skill,read_skill_file,read_skill_file,answer", false,
			"I looked in references/ for the rule on the route length"},
		{"no pointer", map[string]string{
			"SKILL.md":            "---\nname: records\ndescription: d\n---\n" + units,
			"references/units.md": units,
		}, "read_skill,answer", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := t.TempDir()
			p, err := skillpkg.New(tc.files, skillpkg.Limits{})
			if err != nil {
				t.Fatal(err)
			}
			dir := filepath.Join(ws, ".agents", "skills", "skillfleet-target")
			if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := skillpkg.Write(p, dir); err != nil {
				t.Fatal(err)
			}
			listing := strings.ReplaceAll(codexSkills, "/ws/", ws+"/")
			r, actions, cmds := runShellLoop(t, quiet(), ws, listing)
			if got := strings.Join(actions, ","); got != tc.actions {
				t.Fatalf("actions %s, want %s (commands %q)", got, tc.actions, cmds)
			}
			if got := simbench.ExtractAnswer(r.Text); (got == gold) != tc.right {
				t.Fatalf("answer %q (reply %q), gold %q, want right=%v", got, r.Text, gold, tc.right)
			}
			if !strings.Contains(r.Text, tc.reply) {
				t.Fatalf("reply %q, want it to say %q", r.Text, tc.reply)
			}
		})
	}
}
