package exec_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/backends/exec"
	"github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// claudeCapture is a real `claude -p --output-format stream-json
// --verbose` run (Claude Code 2.1.328) on a skill package installed as
// .claude/skills/records, as sim-llm drove it: the Skill tool on
// "records", a find listing the directory, then cat of
// references/units.md, references/rules.md and scripts/read_codes.py.
// sim-llm counted 55042 input and 251 output tokens for the run.
const claudeCapture = "claude-package-stream.jsonl"

// claudeStand runs a stand-in Claude Code that prints the file out, with
// the backend's claude-json parsing and the skill directory
// .claude/skills/records.
func claudeStand(t *testing.T, out string, mod func(*exec.Config)) *exec.Client {
	t.Helper()
	cfg := exec.Config{Agent: exec.AgentClaude, SkillName: "records", Command: []string{"cat", out},
		Sandbox: exec.SandboxConfig{Mode: exec.SandboxNone, Logf: func(string, ...any) {}}}
	if mod != nil {
		mod(&cfg)
	}
	return exec.New(cfg)
}

func recordsPackage(t *testing.T, extra map[string]string) *skillpkg.Package {
	t.Helper()
	files := map[string]string{
		"SKILL.md":              "---\nname: records\ndescription: Read it before you start.\n---\nRules live in references/.\n",
		"references/units.md":   "- x\n",
		"references/rules.md":   "- y\n",
		"scripts/read_codes.py": "def keep(code):\n    return code\n",
	}
	for k, v := range extra {
		files[k] = v
	}
	p, err := skillpkg.New(files, skillpkg.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestClaudeEventsNameOpenedPackageFiles: the files of an installed
// package that Claude Code opened, read from the tool_use blocks of its
// stream-json events (the real capture above), lead the reply in the
// order first opened (the Skill tool is the SKILL.md; the listing opens
// nothing); the reply and usage are the result event's, as with
// --output-format json; a plain skill's reply is left alone.
func TestClaudeEventsNameOpenedPackageFiles(t *testing.T) {
	t.Parallel()
	events, err := filepath.Abs(filepath.Join("testdata", claudeCapture))
	if err != nil {
		t.Fatal(err)
	}
	c := claudeStand(t, events, nil)
	resp, err := c.Chat(t.Context(), simRequest(skillpkg.Encode(recordsPackage(t, nil)), "q"))
	if err != nil {
		t.Fatal(err)
	}
	want := exec.OpenedFilesNote + " SKILL.md, references/units.md, references/rules.md, scripts/read_codes.py]\n\n" +
		"I read SKILL.md, opened references/rules.md, references/units.md and ran scripts/read_codes.py on the code.\n<answer>4821</answer>"
	if resp.Content != want {
		t.Fatalf("reply %q, want %q", resp.Content, want)
	}
	if resp.Usage != (llm.Usage{InputTokens: 55042, OutputTokens: 251}) || c.EstimatedCalls() != 0 {
		t.Fatalf("usage %+v (estimated calls %d), want sim-llm's 55042 in / 251 out", resp.Usage, c.EstimatedCalls())
	}
	resp, err = c.Chat(t.Context(), simRequest("# Plain skill\n", "q"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(resp.Content, exec.OpenedFilesNote) {
		t.Fatalf("a plain skill's reply %q carries the note", resp.Content)
	}
}

// TestClaudeFileToolsOpenPackageFiles: besides Bash commands, a Read of a
// package file and a Grep over one open it, relative paths included; a
// Glob (a listing), a Grep over the directory, a Read outside the package
// or of a file not in it, and the Skill tool on another skill open
// nothing.
func TestClaudeFileToolsOpenPackageFiles(t *testing.T) {
	t.Parallel()
	dir := "/work/.claude/skills/records"
	uses := []string{
		`{"name":"Skill","input":{"skill":"dataviz"}}`,
		`{"name":"Glob","input":{"pattern":"**/*.md","path":"` + dir + `"}}`,
		`{"name":"Glob","input":{"pattern":"` + dir + `/references/sign.md"}}`,
		`{"name":"Grep","input":{"pattern":"km","path":"` + dir + `"}}`,
		`{"name":"Read","input":{"file_path":"` + dir + `/references/sign.md"}}`,
		`{"name":"Read","input":{"file_path":"/work/task.md"}}`,
		`{"name":"Read","input":{"file_path":"` + dir + `/references/missing.md"}}`,
		`{"name":"Grep","input":{"pattern":"km","path":"` + dir + `/references/units.md","output_mode":"content"}}`,
		`{"name":"Bash","input":{"command":"python3 .claude/skills/records/scripts/read_codes.py 4821 && cat x.claude/skills/records/SKILL.md"}}`,
		`{"name":"Read","input":{"file_path":"` + dir + `/references/sign.md"}}`,
	}
	var b strings.Builder
	b.WriteString(`{"type":"system","subtype":"init","tools":["Bash","Glob","Grep","Read","Skill"]}` + "\n")
	for i, u := range uses {
		fmt.Fprintf(&b, `{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t%d",%s]}}`+"\n", i, strings.TrimPrefix(u, "{"))
		fmt.Fprintf(&b, `{"type":"user","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t%d","content":"ok"}]}}`+"\n", i)
	}
	b.WriteString(`{"type":"result","subtype":"success","is_error":false,"result":"done","usage":{"input_tokens":10,"output_tokens":2}}` + "\n")
	out := filepath.Join(t.TempDir(), "stream.jsonl")
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	p := recordsPackage(t, map[string]string{"references/sign.md": "- z\n"})
	resp, err := claudeStand(t, out, nil).Chat(t.Context(), simRequest(skillpkg.Encode(p), "q"))
	if err != nil {
		t.Fatal(err)
	}
	want := exec.OpenedFilesNote + " references/sign.md, references/units.md, scripts/read_codes.py]\n\ndone"
	if resp.Content != want || resp.Usage != (llm.Usage{InputTokens: 10, OutputTokens: 2}) {
		t.Fatalf("reply %q usage %+v, want %q and 10 in / 2 out", resp.Content, resp.Usage, want)
	}
}

// TestClaudeBrokenStreamIsTyped: Claude Code output that is malformed or
// truncated is a typed invalid_reply error (an *exec.OutputError naming
// the line and what was wrong), never a reply to score.
func TestClaudeBrokenStreamIsTyped(t *testing.T) {
	t.Parallel()
	captured, err := os.ReadFile(filepath.Join("testdata", claudeCapture))
	if err != nil {
		t.Fatal(err)
	}
	lines := bytes.SplitAfter(bytes.TrimSuffix(captured, []byte("\n")), []byte("\n"))
	n := len(lines)
	join := func(ls ...[]byte) []byte { return bytes.Join(ls, nil) }
	for _, tc := range []struct {
		name      string
		out       []byte
		maxOutput int
		line      int
		problem   string
	}{
		{name: "cut inside the result event", out: captured[:len(captured)-200], line: n, problem: "ends inside an event"},
		{name: "garbage line", out: join(join(lines[:2]...), []byte("Segmentation fault (core dumped)\n"), join(lines[2:]...)), line: 3, problem: "not a JSON event"},
		{name: "JSON without an event type", out: join([]byte(`{"result":"4821"}`+"\n"), join(lines...)), line: 1, problem: "without an event type"},
		{name: "no result event", out: join(lines[:n-1]...), problem: "no result event"},
		{name: "cut at max_output_bytes", out: captured, maxOutput: 4000, line: bytes.Count(captured[:4000], []byte("\n")) + 1, problem: "max_output_bytes"},
		{name: "cut at max_output_bytes between events", out: captured, maxOutput: len(join(lines[:n-1]...)), problem: "max_output_bytes"},
		{name: "empty", out: nil, problem: "no JSON event"},
		{name: "a secret in a broken line", out: join(lines[0], []byte("export KEY="+plantedKey+"\n")), line: 2, problem: "not a JSON event"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := filepath.Join(t.TempDir(), "out.jsonl")
			if err := os.WriteFile(f, tc.out, 0o644); err != nil {
				t.Fatal(err)
			}
			c := claudeStand(t, f, func(cfg *exec.Config) {
				cfg.MaxOutput = tc.maxOutput
				cfg.Env, cfg.Getenv = []string{"MY_KEY"}, env(map[string]string{"MY_KEY": plantedKey})
			})
			resp, err := c.Chat(t.Context(), simRequest(skillpkg.Encode(recordsPackage(t, nil)), "q"))
			var oe *exec.OutputError
			if resp != nil || llm.KindOf(err) != llm.KindInvalidReply || !errors.As(err, &oe) {
				t.Fatalf("reply %+v, err %v; want an invalid_reply *exec.OutputError", resp, err)
			}
			t.Logf("%v", err)
			if strings.Contains(err.Error(), plantedKey) {
				t.Fatalf("error %q carries the key", err)
			}
			if oe.Line != tc.line || !strings.Contains(oe.Problem, tc.problem) || oe.Format != exec.OutputClaudeJSON {
				t.Fatalf("error %q (line %d), want line %d and %q", err, oe.Line, tc.line, tc.problem)
			}
		})
	}
}

// TestRealClaudeOpensPackageReference runs the pinned Claude Code (in the
// sandbox, as by default) against sim-llm on a skill package installed as
// .claude/skills/records: the agent loads the skill with the Skill tool,
// lists the directory and opens references/units.md, references/rules.md
// and the helper script with shell reads (sim-llm's request log), answers
// right only because those files hold the rules, and the reply leads with
// the backend's note of the files opened, read from the stream-json
// events; the usage is still sim-llm's count.
func TestRealClaudeOpensPackageReference(t *testing.T) {
	t.Parallel()
	s, url := simFor(t, sim.ServerOptions{})
	c, _ := agentClient(t, exec.AgentClaude, url, func(cfg *exec.Config) { cfg.SkillName = "records" })
	_, q, gold := simTask(t)
	files := questionPackage(t, q)
	resp, log := askWithPackage(t, c, s, files, q, gold)
	// The files sim-llm saw the agent open, in order: the Skill tool's
	// SKILL.md, then one shell read per file (in the listing's order).
	var actions []string
	opened := []string{"SKILL.md"}
	for _, e := range log {
		actions = append(actions, e.Action)
		for _, call := range e.ToolCalls {
			if _, rest, ok := strings.Cut(call, "/.claude/skills/records/"); e.Action == "read_skill_file" && ok {
				name, _, _ := strings.Cut(rest, `"`)
				opened = append(opened, name)
			}
		}
	}
	t.Logf("actions %v; reply %q", actions, resp.Content)
	if len(log) < 3 || log[0].Action != "read_skill" || !strings.HasPrefix(log[0].ToolCalls[0], `Skill {"skill":"records"}`) || log[1].Action != "list_skill" {
		t.Fatalf("request log %+v, want the Skill tool on records, the listing, the package reads, the answer", log)
	}
	if !slices.Contains(opened, "references/units.md") || len(opened) != 4 {
		t.Fatalf("claude opened %v, want SKILL.md and the three other files, references/units.md among them (request log %+v)", opened, log)
	}
	note, _, _ := strings.Cut(resp.Content, "\n")
	if want := exec.OpenedFilesNote + " " + strings.Join(opened, ", ") + "]"; note != want {
		t.Errorf("reply's first line %q, want %q", note, want)
	}
	st := s.Stats()
	if resp.Usage.InputTokens != st.InputTokens || resp.Usage.OutputTokens != st.OutputTokens || c.EstimatedCalls() != 0 {
		t.Fatalf("usage %+v, sim-llm counted %d in / %d out (estimated calls %d)", resp.Usage, st.InputTokens, st.OutputTokens, c.EstimatedCalls())
	}
}
