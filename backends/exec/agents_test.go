package exec_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/http/httptest"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/backends/exec"
	"github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// agentBin returns the installed CLI (scripts/install-agents.sh puts them
// in .tools/agents). Without it the test skips, unless
// SKILLFLEET_REQUIRE_AGENTS=1, when it fails. SKILLFLEET_AGENT_TESTS=off
// skips every test that runs a real CLI: scripts/test.sh sets it for the
// race-detector pass and runs this package again without the detector,
// beside the other tests (the CLIs are not Go; the detector would only slow
// the waiting).
func agentBin(t *testing.T, name string) string {
	t.Helper()
	if os.Getenv("SKILLFLEET_AGENT_TESTS") == "off" {
		t.Skip("real agent CLI tests are off in this pass (SKILLFLEET_AGENT_TESTS=off)")
	}
	p, err := filepath.Abs(filepath.Join("..", "..", ".tools", "agents", "node_modules", ".bin", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		msg := "agent CLI " + name + " not installed at " + p + ": run scripts/install-agents.sh"
		if os.Getenv("SKILLFLEET_REQUIRE_AGENTS") == "1" {
			t.Fatal(msg + " (SKILLFLEET_REQUIRE_AGENTS=1)")
		}
		t.Skip(msg)
	}
	return p
}

const plantedKey = "sk-planted-7f3e9a1c4b2d"

// simFor starts sim-llm (a quiet sim model: no noise) requiring the
// planted key.
func simFor(t *testing.T, o sim.ServerOptions) (*sim.Server, string) {
	t.Helper()
	o.APIKey = plantedKey
	s := sim.NewServer(sim.New(sim.Options{Epsilon: -1, HarmSpill: -1, LengthBudget: -1}), o)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts.URL + "/v1"
}

func agentClient(t *testing.T, agent, baseURL string, mod func(*exec.Config)) (*exec.Client, string) {
	t.Helper()
	root := t.TempDir()
	cfg := exec.Config{
		Agent: agent, Model: "sim-target", BaseURL: baseURL, APIKeyEnv: "SKILLFLEET_TEST_AGENT_KEY",
		Env: []string{"SKILLFLEET_TEST_MARK"}, WorkRoot: root, KeepWorkDir: true, Timeout: 3 * time.Minute,
		Getenv: func(k string) string {
			switch k {
			case "SKILLFLEET_TEST_AGENT_KEY":
				return plantedKey
			case "SKILLFLEET_TEST_MARK":
				return "mark-" + strconv.Itoa(os.Getpid()) + "-" + t.Name()
			}
			return os.Getenv(k)
		},
	}
	cfg.Bin = agentBin(t, agent)
	if mod != nil {
		mod(&cfg)
	}
	c := exec.New(cfg)
	return c, root
}

func simTask(t *testing.T) (skill string, q string, gold string) {
	t.Helper()
	q = "Note the route length. It also refers to the serial code. " + simbench.RecordMarker + "4821."
	var b strings.Builder
	b.WriteString("# Records\n")
	for _, id := range simbench.PitfallsInQuestion(q) {
		p, _ := simbench.Lookup(id)
		b.WriteString("- " + p.Rule + "\n")
	}
	return b.String(), q, "4821"
}

func simRequest(skill, q string) *llm.Request {
	return &llm.Request{Model: "sim-target", Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: simbench.SystemPrompt(skill)},
		{Role: llm.RoleUser, Content: simbench.UserPrompt(q)},
	}}
}

// noKeyIn fails if the planted key is in any file under dir.
func noKeyIn(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !d.Type().IsRegular() {
			return nil
		}
		n++
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(plantedKey)) {
			t.Errorf("the planted key is in %s", p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestRealAgentsAgainstSimLLM runs the pinned Codex CLI and Claude Code
// against sim-llm: the skill is found where the backend writes it (the
// agent opens it with its own tool: one tool round trip in sim-llm's
// request log), the JSON output and its usage are parsed, the usage equals
// sim-llm's count, the answer is right only with the skill's rules, the
// planted key reaches the CLI (sim-llm requires it) but no file of the
// kept work directory, and a task too long for an argument is read from
// task.md with a shell command.
func TestRealAgentsAgainstSimLLM(t *testing.T) {
	for _, agent := range []string{exec.AgentCodex, exec.AgentClaude} {
		t.Run(agent, func(t *testing.T) {
			t.Parallel()
			s, url := simFor(t, sim.ServerOptions{})
			c, root := agentClient(t, agent, url, optOut) // unsandboxed; TestSandboxedRealAgents is the default
			v, err := c.CheckVersion(t.Context())
			if err != nil || v == "" {
				t.Fatalf("CheckVersion = %q, %v", v, err)
			}
			skill, q, gold := simTask(t)

			resp, err := c.Chat(t.Context(), simRequest(skill, q))
			if err != nil {
				t.Fatal(err)
			}
			log := s.RequestLog()
			if got := simbench.ExtractAnswer(resp.Content); got != gold {
				t.Fatalf("answer %q (reply %q), want %q; request log %+v", got, resp.Content, gold, log)
			}
			if len(log) != 2 || log[0].Action != "read_skill" || len(log[0].ToolCalls) != 1 || log[1].Action != "answer" || log[1].ToolResults != 1 {
				t.Fatalf("request log %+v, want one skill read then the answer", log)
			}
			switch agent {
			case exec.AgentCodex:
				if !strings.Contains(log[0].ToolCalls[0], filepath.Join(root)) || !strings.Contains(log[0].ToolCalls[0], c.SkillPath()) {
					t.Fatalf("codex read %q, want the SKILL.md the backend wrote under %s", log[0].ToolCalls[0], root)
				}
			case exec.AgentClaude:
				if !strings.HasPrefix(log[0].ToolCalls[0], `Skill {"skill":"skillfleet-target"}`) {
					t.Fatalf("claude called %q, want the Skill tool on skillfleet-target", log[0].ToolCalls[0])
				}
			}
			st := s.Stats()
			if resp.Usage.InputTokens != st.InputTokens || resp.Usage.OutputTokens != st.OutputTokens || c.EstimatedCalls() != 0 {
				t.Fatalf("usage %+v, sim-llm counted %d in / %d out (estimated calls %d)", resp.Usage, st.InputTokens, st.OutputTokens, c.EstimatedCalls())
			}

			// Without the rules the answer is wrong.
			resp, err = c.Chat(t.Context(), simRequest("# Records\n- Be careful.\n", q))
			if err != nil {
				t.Fatal(err)
			}
			if got := simbench.ExtractAnswer(resp.Content); got == gold {
				t.Fatalf("without the rules the answer is still %q", got)
			}

			// A long task goes through task.md, read with a shell command.
			long, _ := agentClient(t, agent, url, func(cfg *exec.Config) { optOut(cfg); cfg.TaskInlineMax = 64 })
			resp, err = long.Chat(t.Context(), simRequest(skill, q))
			if err != nil {
				t.Fatalf("task via task.md: %v; request log %+v", err, s.RequestLog()[4:])
			}
			if got := simbench.ExtractAnswer(resp.Content); got != gold {
				t.Fatalf("task via task.md: answer %q, want %q", got, gold)
			}
			log = s.RequestLog()
			var actions []string
			for _, e := range log[4:] {
				actions = append(actions, e.Action)
			}
			if strings.Join(actions, ",") != "read_skill,read_file,answer" {
				t.Fatalf("task via task.md: actions %v, want read_skill, read_file, answer", actions)
			}
			if n := noKeyIn(t, root); n < 3 {
				t.Fatalf("the kept work directories hold %d files, want the skill, task.md and the agent's own", n)
			}
		})
	}
}

// TestRealAgentTimeoutKillsProcessTree: a call whose model never answers
// (sim-llm stalls every request) times out; the CLI's whole process tree
// (the launcher and the native binary it starts) was running and none of
// it survives.
func TestRealAgentTimeoutKillsProcessTree(t *testing.T) {
	for _, agent := range []string{exec.AgentCodex, exec.AgentClaude} {
		t.Run(agent, func(t *testing.T) {
			t.Parallel()
			_, url := simFor(t, sim.ServerOptions{FaultRateStall: 1, StallFor: time.Minute})
			c, root := agentClient(t, agent, url, func(cfg *exec.Config) { optOut(cfg); cfg.Timeout = 12 * time.Second }) // TestSandboxedRealAgentTimeout: sandboxed
			skill, q, _ := simTask(t)
			var (
				mu   sync.Mutex
				seen = map[int]bool{}
			)
			ctx, cancel := context.WithCancel(t.Context())
			done := make(chan struct{})
			go func() {
				defer close(done)
				for ctx.Err() == nil {
					for _, p := range procsUnder(root) {
						mu.Lock()
						seen[p] = true
						mu.Unlock()
					}
					time.Sleep(100 * time.Millisecond)
				}
			}()
			_, err := c.Chat(t.Context(), simRequest(skill, q))
			cancel()
			<-done
			if llm.KindOf(err) != llm.KindTimeout {
				t.Fatalf("err = %v, want a timeout", err)
			}
			if len(seen) < 2 {
				t.Fatalf("saw %d processes of the agent while it ran, want the launcher and the native binary", len(seen))
			}
			time.Sleep(200 * time.Millisecond)
			if left := procsUnder(root); len(left) > 0 {
				t.Fatalf("processes %v of the agent survive the timeout (seen %v)", left, seen)
			}
		})
	}
}

// procsUnder lists live processes whose working directory is under root.
func procsUnder(root string) []int {
	ents, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cwd, err := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		if err != nil || !strings.HasPrefix(cwd, root) {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil {
			if i := bytes.LastIndexByte(b, ')'); i > 0 && len(b) > i+2 && b[i+2] == 'Z' {
				continue
			}
		}
		out = append(out, pid)
	}
	return out
}

// TestRealAgentFailuresAreTyped: a CLI whose model refuses the request
// (sim-llm answers 400 to a task it cannot read) fails; that is a typed
// error, never a reply to score, and it carries no key.
func TestRealAgentFailuresAreTyped(t *testing.T) {
	for _, agent := range []string{exec.AgentCodex, exec.AgentClaude} {
		t.Run(agent, func(t *testing.T) {
			t.Parallel()
			s, url := simFor(t, sim.ServerOptions{})
			c, _ := agentClient(t, agent, url, nil)
			resp, err := c.Chat(t.Context(), simRequest("# Records\n", "Write me a poem about the sea."))
			var le *llm.Error
			if err == nil || !errors.As(err, &le) || le.Kind != llm.KindServer {
				t.Fatalf("reply %+v, err %v: want a KindServer error", resp, err)
			}
			if strings.Contains(err.Error(), plantedKey) {
				t.Fatalf("error carries the key: %v", err)
			}
			if st := s.Stats(); st.BadRequests == 0 {
				t.Fatalf("sim-llm refused nothing: %+v", st)
			}
		})
	}
}

// TestVersionCheckRefusesUntestedMajor: a built-in agent whose --version
// shows a major version skillfleet has not been tested with is refused at
// start with a message naming the supported ones; a tested major passes;
// version_check=false lets it run.
func TestVersionCheckRefusesUntestedMajor(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		agent, out string
		ok         bool
	}{
		{exec.AgentCodex, "codex-cli 1.0.0", false},
		{exec.AgentCodex, "codex-cli 0.170.2", true},
		{exec.AgentClaude, "3.0.1 (Claude Code)", false},
		{exec.AgentClaude, "2.1.328 (Claude Code)", true},
	} {
		bin := script(t, "echo '"+tc.out+"'")
		c := exec.New(exec.Config{Agent: tc.agent, Bin: bin, Getenv: env(nil)})
		v, err := c.CheckVersion(t.Context())
		if tc.ok != (err == nil) {
			t.Fatalf("%s printing %q: version %q, err %v; want ok=%v", tc.agent, tc.out, v, err, tc.ok)
		}
		if err != nil && (!strings.Contains(err.Error(), "supported: codex 0.x (tested 0.169.0); claude 2.x (tested 2.1.328)") || !strings.Contains(err.Error(), v)) {
			t.Fatalf("message %q does not name the version and the supported ones", err)
		}
		cfg, err := exec.ConfigFromOptions("m", map[string]string{"agent": tc.agent, "bin": bin, "version_check": "false"})
		if err != nil {
			t.Fatal(err)
		}
		cfg.Getenv = env(nil)
		if _, err := exec.New(cfg).CheckVersion(t.Context()); err != nil {
			t.Fatalf("version_check=false: %v", err)
		}
	}
	bad := script(t, "echo broken >&2; exit 3")
	if _, err := exec.New(exec.Config{Agent: exec.AgentCodex, Bin: bad, Getenv: env(nil)}).CheckVersion(t.Context()); err == nil || !strings.Contains(err.Error(), "broken") {
		t.Fatalf("a failing --version: %v", err)
	}
}

// TestAgentGarbageOutputIsTyped: an agent that prints something other
// than its JSON output (here a stand-in codex and claude that pass the
// version check) is a typed invalid_reply failure, never a reply.
func TestAgentGarbageOutputIsTyped(t *testing.T) {
	t.Parallel()
	for agent, version := range map[string]string{exec.AgentCodex: "codex-cli 0.169.0", exec.AgentClaude: "2.1.328 (Claude Code)"} {
		bin := script(t, `[ "$1" = "--version" ] && { echo '`+version+`'; exit 0; }
echo 'Segmentation fault? <html>not json</html>'`)
		c := exec.New(exec.Config{Agent: agent, Bin: bin, Getenv: env(nil)})
		if _, err := c.CheckVersion(t.Context()); err != nil {
			t.Fatal(err)
		}
		resp, err := c.Chat(t.Context(), req("<skill>\nx\n</skill>", "task"))
		if llm.KindOf(err) != llm.KindInvalidReply || resp != nil {
			t.Fatalf("%s: reply %+v, err %v; want an invalid_reply error", agent, resp, err)
		}
		if !strings.Contains(err.Error(), "not json") {
			t.Fatalf("%s: error %q does not show what the agent printed", agent, err)
		}
	}
}

// TestCodexConfig: the config.toml a Codex call gets in its own CODEX_HOME
// points at the provider by the key's variable name (never the key) and
// turns off the start-up work a one-task run does not use (the shell
// snapshot, the plugin and app catalogues); without a base URL only the
// latter is written. With the user's login and no key variable, the
// provider signs with the login (requires_openai_auth).
func TestCodexConfig(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "config.toml")
	bin := script(t, `[ "$1" = "--version" ] && { echo 'codex-cli 0.169.0'; exit 0; }
cp "$CODEX_HOME/config.toml" `+out+`
echo '{"type":"item.completed","item":{"type":"agent_message","text":"ok"}}'
echo '{"type":"turn.completed"}'`)
	home := t.TempDir()
	if err := os.MkdirAll(filepath.Join(home, ".codex"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(home, ".codex", "auth.json"), []byte(`{"auth_mode":"chatgpt","OPENAI_API_KEY":null,"tokens":{"access_token":"at-1234567890"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	provider := "model = \"m1\"\nmodel_provider = \"skillfleet\"\n\n[model_providers.skillfleet]\nname = \"skillfleet\"\nbase_url = \"http://127.0.0.1:9/v1\"\nwire_api = \"responses\"\n"
	features := "[features]\nshell_snapshot = false\nplugins = false\nremote_plugin = false\napps = false\n"
	for _, tc := range []struct {
		base, keyEnv string
		// login: option user_login, whose copied login signs the calls
		// when no key is named.
		login bool
		want  string
	}{
		{"http://127.0.0.1:9/v1", "MY_KEY", false, provider + "env_key = \"MY_KEY\"\n\n" + features},
		{"http://127.0.0.1:9/v1", "MY_KEY", true, provider + "env_key = \"MY_KEY\"\n\n" + features},
		{"http://127.0.0.1:9/v1", "", true, provider + "requires_openai_auth = true\n\n" + features},
		{"http://127.0.0.1:9/v1", "", false, provider + "\n" + features},
		{"", "MY_KEY", false, features},
	} {
		c := exec.New(exec.Config{Agent: exec.AgentCodex, Bin: bin, Model: "m1", BaseURL: tc.base, APIKeyEnv: tc.keyEnv, UserLogin: tc.login,
			Getenv: env(map[string]string{"MY_KEY": "sk-secret-1234", "HOME": home}), Sandbox: exec.SandboxConfig{Mode: exec.SandboxNone}}) // copies config.toml to the host
		if resp, err := c.Chat(t.Context(), req("<skill>\nx\n</skill>", "task")); err != nil || resp.Content != "ok" {
			t.Fatalf("base %q, key %q, login %v: %+v, %v", tc.base, tc.keyEnv, tc.login, resp, err)
		}
		if got := string(readAll(t, out)); got != tc.want {
			t.Errorf("base %q, key %q, login %v: config.toml\n%s\nwant\n%s", tc.base, tc.keyEnv, tc.login, got, tc.want)
		}
	}
}

func readAll(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestPackageInstalledAsSkillDirectory: a skill package (a bundle in the
// system message, as the trainer sends one) reaches the agent as a skill
// directory: SKILL.md where the single-file skill would be, references/
// beside it, scripts executable. The agent here is a real shell that lists
// the skill directory and prints what it finds.
func TestPackageInstalledAsSkillDirectory(t *testing.T) {
	t.Parallel()
	p, err := skillpkg.New(map[string]string{
		"SKILL.md":              "---\nname: records\ndescription: Records. Read it before you start.\n---\n# Records\nRules live in references/.\n",
		"references/units.md":   "# Units\n- Report distances in km.\n",
		"scripts/read_codes.py": "def keep(code):\n    return code.strip()\n",
	}, skillpkg.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	script := `cd .agents/skills/skillfleet-target && for f in $(find . -type f | sort); do
  if [ -x "$f" ]; then x=x; else x=-; fi
  printf '%s %s %s\n' "$f" "$x" "$(cksum < "$f" | cut -d' ' -f1)"
done`
	c := exec.New(exec.Config{Command: []string{"sh", "-c", script}, WorkRoot: t.TempDir()})
	resp, err := c.Chat(t.Context(), simRequest(skillpkg.Encode(p), "What is 1?"))
	if err != nil {
		t.Fatal(err)
	}
	want := ""
	for _, name := range p.Paths() {
		text, _ := p.File(name)
		x := "-"
		if p.Executable(name) {
			x = "x"
		}
		want += "./" + name + " " + x + " " + cksum(t, text) + "\n"
	}
	if got := resp.Content + "\n"; got != want {
		t.Fatalf("the skill directory holds\n%s\nwant\n%s", got, want)
	}

	// A bundle that does not decode is an error naming it, not a SKILL.md
	// full of bundle markers.
	bad := skillpkg.Encode(p)[:60]
	if _, err := c.Chat(t.Context(), simRequest(bad, "What is 1?")); err == nil || !strings.Contains(err.Error(), "skill package") {
		t.Fatalf("a truncated bundle: err %v, want one naming the skill package", err)
	}
}

// cksum is POSIX cksum's CRC of text, computed by the real cksum.
func cksum(t *testing.T, text string) string {
	t.Helper()
	cmd := osexec.Command("cksum")
	cmd.Stdin = strings.NewReader(text)
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(out))[0]
}

// TestRealCodexOpensPackageReference runs the pinned Codex CLI against
// sim-llm on a skill package: the backend installs it as a skill
// directory, and the agent, told by SKILL.md that the rules live in
// references/, lists the directory and opens references/units.md and the
// helper script with shell reads (sim-llm's request log holds the
// commands), and answers right only because those files hold the rules.
// With the rule missing from references/, the answer is wrong and the reply
// says where the agent looked: the trajectory the optimizer learns from.
func TestRealCodexOpensPackageReference(t *testing.T) {
	t.Parallel()
	s, url := simFor(t, sim.ServerOptions{})
	c, _ := agentClient(t, exec.AgentCodex, url, nil)
	_, q, gold := simTask(t)
	files := questionPackage(t, q)
	resp, log := askWithPackage(t, c, s, files, q, gold)
	var actions []string
	opened := map[string]bool{}
	for _, e := range log {
		actions = append(actions, e.Action)
		if e.Action == "read_skill_file" {
			for _, call := range e.ToolCalls {
				if i := strings.Index(call, "/.agents/skills/skillfleet-target/"); i >= 0 {
					opened[strings.TrimRight(call[i+len("/.agents/skills/skillfleet-target/"):], `"}`)] = true
				}
			}
		}
	}
	t.Logf("actions %v; reply %q", actions, resp.Content)
	if actions[0] != "read_skill" || actions[1] != "list_skill" || actions[len(actions)-1] != "answer" {
		t.Fatalf("actions %v, want read_skill, list_skill, the package reads, answer", actions)
	}
	for _, f := range []string{"references/units.md", "references/rules.md", "scripts/read_codes.py"} {
		if !opened[f] {
			t.Errorf("codex did not open %s of the installed package; opened %v (request log %+v)", f, opened, log)
		}
	}
	if !strings.Contains(resp.Content, "opened references/rules.md, references/units.md") {
		t.Errorf("reply %q does not name the references opened", resp.Content)
	}
	// The backend's own record, from Codex's events, leads the reply.
	note, _, _ := strings.Cut(resp.Content, "\n")
	for _, f := range []string{"SKILL.md", "references/units.md", "references/rules.md", "scripts/read_codes.py"} {
		if !strings.HasPrefix(note, exec.OpenedFilesNote) || !strings.Contains(note, f) {
			t.Errorf("reply's first line %q does not record that the agent opened %s", note, f)
		}
	}

	// Without the units rule in references/ (it is in SKILL.md instead,
	// where this world's agent does not trust it) the answer is wrong, and
	// the reply says the agent looked in references/.
	delete(files, "references/units.md")
	for _, id := range simbench.PitfallsInQuestion(q) {
		if pf, _ := simbench.Lookup(id); pf.Category == "units" {
			files["SKILL.md"] += "- " + pf.Rule + "\n"
		}
	}
	p, err := skillpkg.New(files, skillpkg.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err = c.Chat(t.Context(), simRequest(skillpkg.Encode(p), q))
	if err != nil {
		t.Fatal(err)
	}
	if got := simbench.ExtractAnswer(resp.Content); got == gold || !strings.Contains(resp.Content, "I looked in references/ for the rule on the route length") {
		t.Fatalf("without references/units.md: reply %q, want a wrong answer and where the agent looked", resp.Content)
	}
}

// TestCodexEventsNameOpenedPackageFiles: the files of an installed package
// that the agent opened, read from Codex's command_execution events
// (testdata/codex-package-events.jsonl: a real `codex exec --json` run on
// a package, as sim-llm drove it), lead the reply; the listing of the
// directory opens nothing, and a plain skill's reply is left alone.
func TestCodexEventsNameOpenedPackageFiles(t *testing.T) {
	t.Parallel()
	events, err := filepath.Abs(filepath.Join("testdata", "codex-package-events.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	c := exec.New(exec.Config{Agent: exec.AgentCodex, Command: []string{"cat", events}, Output: exec.OutputCodexJSON,
		Sandbox: exec.SandboxConfig{Mode: exec.SandboxNone, Logf: func(string, ...any) {}}})
	p, err := skillpkg.New(map[string]string{
		"SKILL.md":            "---\nname: records\ndescription: Read it before you start.\n---\nRules live in references/.\n",
		"references/units.md": "- x\n",
		"references/sign.md":  "- y\n",
	}, skillpkg.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Chat(t.Context(), simRequest(skillpkg.Encode(p), "q"))
	if err != nil {
		t.Fatal(err)
	}
	want := exec.OpenedFilesNote + " SKILL.md, references/units.md]\n\nI read SKILL.md, opened references/units.md."
	if !strings.HasPrefix(resp.Content, want) || simbench.ExtractAnswer(resp.Content) != "4821 mi" {
		t.Fatalf("reply %q, want it to start %q and keep the answer", resp.Content, want)
	}
	resp, err = c.Chat(t.Context(), simRequest("# Plain skill\n", "q"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(resp.Content, exec.OpenedFilesNote) {
		t.Fatalf("a plain skill's reply %q carries the note", resp.Content)
	}
	if got := exec.OpenedFiles(p, ".agents/skills/skillfleet-target", []string{
		"find /x/.agents/skills/skillfleet-target -type f",
		"cat /x/.agents/skills/skillfleet-target/references/sign.md /x/.agents/skills/skillfleet-target/references/nope.md",
		"sed -n 1,5p '/work/.agents/skills/skillfleet-target/SKILL.md'",
	}); strings.Join(got, ",") != "references/sign.md,SKILL.md" {
		t.Fatalf("OpenedFiles = %v, want references/sign.md then SKILL.md", got)
	}
}

// questionPackage is a skill package for the sim question q: SKILL.md says
// the rules live in references/, where each of q's record-type rules is,
// and its code-reading rule is in scripts/read_codes.py.
func questionPackage(t *testing.T, q string) map[string]string {
	t.Helper()
	files := map[string]string{
		"SKILL.md":            "---\nname: records\ndescription: Answer questions about archived records. Read it before you start.\n---\n# Records\n\nRules for each record type live in references/.\n",
		"references/rules.md": "# Record rules\n",
	}
	var reading string
	for _, id := range simbench.PitfallsInQuestion(q) {
		p, _ := simbench.Lookup(id)
		switch p.Category {
		case "reading":
			reading = p.Rule
		default:
			files["references/"+p.Category+".md"] += "- " + p.Rule + "\n"
		}
	}
	if _, ok := files["references/units.md"]; !ok || reading == "" {
		t.Fatalf("question %q: want a units pitfall and a reading pitfall", q)
	}
	files["scripts/read_codes.py"] = fmt.Sprintf("def keep(code):\n    %q\n    return code.strip()\n", reading)
	return files
}

// askWithPackage asks the agent c question q with files installed as its
// skill package and fails unless it answers gold; it returns the reply and
// what the sim-llm s was asked meanwhile.
func askWithPackage(t *testing.T, c *exec.Client, s *sim.Server, files map[string]string, q, gold string) (*llm.Response, []sim.LoggedRequest) {
	t.Helper()
	p, err := skillpkg.New(files, skillpkg.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	resp, err := c.Chat(t.Context(), simRequest(skillpkg.Encode(p), q))
	if err != nil {
		t.Fatal(err)
	}
	log := s.RequestLog()
	if got := simbench.ExtractAnswer(resp.Content); got != gold {
		t.Fatalf("answer %q (reply %q), want %q; request log %+v", got, resp.Content, gold, log)
	}
	return resp, log
}
