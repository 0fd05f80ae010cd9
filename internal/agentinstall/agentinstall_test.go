package agentinstall

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillfleet/skillfleet/internal/testfs"
)

// fakeSkillfleet writes a stand-in skillfleet that prints its arguments
// one a line, and its working directory.
func fakeSkillfleet(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "skillfleet")
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho \"cwd=$PWD\"\nfor a in \"$@\"; do echo \"arg=$a\"; done\ncat >/dev/null\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

// userHome is a home with files of the user's own that an install must
// not touch.
func userHome(t *testing.T) string {
	t.Helper()
	home := t.TempDir()
	for p, s := range map[string]string{
		".claude/settings.json":                `{"theme":"dark"}`,
		".claude/skills/mine/SKILL.md":         "---\nname: mine\ndescription: the user's own\n---\n",
		".codex/config.toml":                   "model = \"gpt-5.5\"\n",
		"projects/app/main.go":                 "package main\n",
		".copilot/mcp-config.json":             "{\n  \"mcpServers\": {\n    \"mine\": {\"command\": \"mine-mcp\"}\n  }\n}\n",
		".config/opencode/opencode.json":       `{"theme":"tokyonight"}`,
		".cursor/plugins/local/mine/README.md": "the user's own plugin\n",
	} {
		if err := os.MkdirAll(filepath.Join(home, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

func TestInstallUninstallRoundTrip(t *testing.T) {
	home := userHome(t)
	before := testfs.Tree(t, home)
	bin := fakeSkillfleet(t)
	state := filepath.Join(t.TempDir(), "state dir")
	nightArgs := []string{"--backend", "openai_compatible", "--model", "it's a model", "--base-url", "http://127.0.0.1:1/v1 $(touch /tmp/x)"}
	for _, agent := range Agents() {
		o := Options{Agent: agent, Home: home, Skillfleet: bin, StateDir: state, NightArgs: nightArgs, SessionEndHook: agent == ClaudeCode, Version: "1.2.3"}
		res, err := Install(o)
		if err != nil {
			t.Fatalf("%s: %v", agent, err)
		}
		if !res.Changed {
			t.Fatalf("%s: first install changed nothing", agent)
		}
		want := map[string][]string{
			ClaudeCode: {".claude-plugin/plugin.json", "README.md", "bin/skillfleet-sleep", "commands/skillfleet-sleep-handoff.md", "commands/skillfleet-sleep.md", "hooks/hooks.json", "skills/skillfleet-sleep/SKILL.md"},
			Codex:      {"SKILL.md", "scripts/skillfleet-sleep"},
			Cursor:     {".cursor-plugin/plugin.json", "README.md", "commands/skillfleet-sleep.md", "scripts/skillfleet-sleep", "skills/skillfleet-sleep/SKILL.md"},
			Copilot:    {"SKILL.md", "scripts/skillfleet-sleep"},
			Pi:         {"SKILL.md", "scripts/skillfleet-sleep"},
			Opencode:   {"SKILL.md", "scripts/skillfleet-sleep"},
		}[agent]
		if !slices.Equal(res.Files, want) {
			t.Fatalf("%s: installed %v, want %v", agent, res.Files, want)
		}
		// A skill's name is its directory's (opencode and pi skip one
		// whose name differs).
		for _, f := range res.Files {
			if filepath.Base(f) == "SKILL.md" {
				if b := readFile(t, filepath.Join(res.Dir, f)); !bytes.HasPrefix(b, []byte("---\nname: "+filepath.Base(filepath.Dir(filepath.Join(res.Dir, f)))+"\n")) {
					t.Errorf("%s: %s does not start with its directory's name:\n%s", agent, f, b)
				}
			}
		}
		// Every text file the agent reads names the script by its absolute path.
		for _, f := range res.Files {
			b, err := os.ReadFile(filepath.Join(res.Dir, f))
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasSuffix(f, ".md") && !strings.HasPrefix(f, "README") && !bytes.Contains(b, []byte(res.Script)) {
				t.Errorf("%s: %s does not name the script %s:\n%s", agent, f, res.Script, b)
			}
			if i := bytes.Index(b, []byte("{{")); i >= 0 {
				t.Errorf("%s: %s holds an unrendered template action: %q", agent, f, b[i:min(len(b), i+40)])
			}
			// What the agent reads offers every subcommand the script has
			// for a user in a session, and says adopt is the user's call.
			if strings.HasSuffix(f, ".md") && !strings.HasPrefix(f, "README") && !strings.HasSuffix(f, "-handoff.md") {
				for _, want := range []string{"`dry-run`", "`harvest`", "`adopt`", "adopt --undo", "`schedule [HH:MM]`", "`unschedule`", "only when the user"} {
					if !bytes.Contains(b, []byte(want)) {
						t.Errorf("%s: %s does not mention %s", agent, f, want)
					}
				}
			}
			if f == "SKILL.md" || strings.HasSuffix(f, "/SKILL.md") {
				if hand := bytes.Contains(b, []byte("/skillfleet-sleep:skillfleet-sleep-handoff")); hand != (agent == ClaudeCode) {
					t.Errorf("%s: %s names the handoff command: %v, want it in Claude Code's only", agent, f, hand)
				}
			}
		}
		if agent == ClaudeCode {
			var hooks struct {
				Hooks map[string][]struct {
					Hooks []struct{ Type, Command string }
				}
			}
			if err := json.Unmarshal(readFile(t, filepath.Join(res.Dir, "hooks/hooks.json")), &hooks); err != nil {
				t.Fatal(err)
			}
			if h := hooks.Hooks["SessionEnd"]; len(h) != 1 || h[0].Hooks[0].Command != res.Script+" record" {
				t.Errorf("hooks.json: %+v", hooks)
			}
			var pj map[string]any
			if err := json.Unmarshal(readFile(t, filepath.Join(res.Dir, ".claude-plugin/plugin.json")), &pj); err != nil || pj["name"] != Name || pj["version"] != "1.2.3" {
				t.Errorf("plugin.json %v, %v", pj, err)
			}
		}

		// The script hands the fixed flags over verbatim, in the project
		// it is run in.
		proj := filepath.Join(home, "projects", "app")
		cmd := exec.Command(res.Script, "run")
		cmd.Dir = proj
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s: script run: %v\n%s", agent, err, out)
		}
		wantRun := "cwd=" + proj + "\narg=sleep\narg=run\narg=--state-dir\narg=" + state + "\n"
		for _, a := range nightArgs {
			wantRun += "arg=" + a + "\n"
		}
		wantRun += "arg=--project\narg=" + proj + "\n"
		if !strings.HasPrefix(string(out), wantRun) || !strings.Contains(string(out), "arg=status\n") {
			t.Errorf("%s: script run printed\n%s\nwant it to start\n%s", agent, out, wantRun)
		}
		if _, err := os.Stat("/tmp/x"); err == nil && agent == Codex {
			t.Errorf("a night argument was run as a shell command")
		}
		cmd = exec.Command(res.Script, "bogus")
		if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "usage: skillfleet-sleep") {
			t.Errorf("%s: script bogus: %v %s", agent, err, out)
		}

		// Installing again changes nothing; with other flags it replaces
		// the install whole (the hook goes).
		mid := testfs.Tree(t, home)
		res, err = Install(o)
		if err != nil || res.Changed {
			t.Fatalf("%s: second install: changed %v, %v", agent, res != nil && res.Changed, err)
		}
		if diff := cmp.Diff(mid, testfs.Tree(t, home)); diff != "" {
			t.Fatalf("%s: the second install changed the home:\n%s", agent, diff)
		}
		o2 := o
		o2.SessionEndHook = false
		o2.NightArgs = []string{"--backend", "sim"}
		if res, err = Install(o2); err != nil || !res.Changed {
			t.Fatalf("%s: install with other flags: %v", agent, err)
		}
		if _, err := os.Stat(filepath.Join(res.Dir, "hooks")); agent == ClaudeCode && err == nil {
			t.Errorf("the hook stayed after an install without it")
		}
		if !bytes.Contains(readFile(t, res.Script), []byte(" --backend sim \"$@\"\n")) {
			t.Errorf("%s: the script kept the old flags:\n%s", agent, readFile(t, res.Script))
		}
	}

	// Uninstall both: the home is as it was; again, nothing to do.
	for _, agent := range Agents() {
		res, err := Uninstall(agent, home)
		if err != nil || !res.Changed {
			t.Fatalf("%s: uninstall: %v %+v", agent, err, res)
		}
		if res, err = Uninstall(agent, home); err != nil || res.Changed {
			t.Fatalf("%s: second uninstall: %v %+v", agent, err, res)
		}
	}
	if diff := cmp.Diff(before, testfs.Tree(t, home)); diff != "" {
		t.Fatalf("the home after uninstall differs from before install (-before +after):\n%s", diff)
	}
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestInstallRefusesWhatItDidNotWrite: a directory of the plugin's name
// that skillfleet did not install is neither replaced nor removed, and an
// install holding a file the user added is not removed.
func TestInstallRefusesWhatItDidNotWrite(t *testing.T) {
	home := t.TempDir()
	bin := fakeSkillfleet(t)
	dir, _ := Dir(ClaudeCode, home)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	o := Options{Agent: ClaudeCode, Home: home, Skillfleet: bin, StateDir: home}
	if _, err := Install(o); err == nil || !strings.Contains(err.Error(), "not installed by skillfleet") {
		t.Fatalf("install over a foreign directory: %v", err)
	}
	if _, err := Uninstall(ClaudeCode, home); err == nil || !strings.Contains(err.Error(), "not installed by skillfleet") {
		t.Fatalf("uninstall of a foreign directory: %v", err)
	}
	if string(readFile(t, filepath.Join(dir, "notes.md"))) != "mine" {
		t.Fatal("the foreign file changed")
	}

	// An install the user added a file to.
	home = t.TempDir()
	o.Home = home
	res, err := Install(o)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(res.Dir, "commands", "mine.md"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Uninstall(ClaudeCode, home); err == nil || !strings.Contains(err.Error(), "commands/mine.md") {
		t.Fatalf("uninstall with a user file: %v", err)
	}
	if _, err := os.Stat(filepath.Join(res.Dir, "commands", "mine.md")); err != nil {
		t.Fatal(err)
	}

	// Bad options.
	for _, bad := range []Options{
		{Agent: "vscode", Home: home, Skillfleet: bin, StateDir: home},
		{Agent: Codex, Home: home, Skillfleet: "skillfleet", StateDir: home},
		{Agent: Codex, Home: home, Skillfleet: bin, StateDir: home, SessionEndHook: true},
		{Agent: Codex, Home: filepath.Join(home, "with space"), Skillfleet: bin, StateDir: home},
		{Agent: Codex, Home: home, Skillfleet: bin, StateDir: home, NightArgs: []string{"a\nb"}},
	} {
		if err := os.MkdirAll(bad.Home, 0o755); err != nil {
			t.Fatal(err)
		}
		if _, err := Install(bad); err == nil {
			t.Errorf("install %+v: no error", bad)
		} else {
			t.Logf("%s", fmt.Sprint(err))
		}
	}
}

// TestCopilotMCPRegistration: `sleep install copilot` registers the MCP
// server in the Copilot CLI's config, keeping the user's own servers; the
// entry runs the installed script's mcp mode with the install's flags;
// uninstall puts the file back byte for byte (or removes it when the
// install created it), or, when the user changed it since, removes only
// the entry.
func TestCopilotMCPRegistration(t *testing.T) {
	bin := fakeSkillfleet(t)
	cfgPath := func(home string) string { return filepath.Join(home, ".copilot", "mcp-config.json") }
	type server struct {
		Type, Command string
		Args, Tools   []string
	}
	servers := func(t *testing.T, home string) map[string]server {
		t.Helper()
		var c struct{ McpServers map[string]server }
		if err := json.Unmarshal(readFile(t, cfgPath(home)), &c); err != nil {
			t.Fatal(err)
		}
		return c.McpServers
	}

	// A home without ~/.copilot: the install creates the config and the
	// uninstall leaves nothing behind.
	home := t.TempDir()
	before := testfs.Tree(t, home)
	o := Options{Agent: Copilot, Home: home, Skillfleet: bin, StateDir: filepath.Join(home, "st"),
		NightArgs: []string{"--backend", "it's sim"}, TargetArgs: []string{"--target-backend", "copilot_exec"}}
	res, err := Install(o)
	if err != nil {
		t.Fatal(err)
	}
	got := servers(t, home)[Name]
	if got.Command != res.Script || !slices.Equal(got.Args, []string{"mcp"}) || got.Type != "local" {
		t.Fatalf("registered %+v, want the script %s in mcp mode", got, res.Script)
	}
	if st, _ := os.Stat(cfgPath(home)); st.Mode().Perm() != 0o600 {
		t.Errorf("a config the install created has mode %v, want 0600", st.Mode().Perm())
	}
	out, err := exec.Command(got.Command, got.Args...).CombinedOutput()
	if err != nil {
		t.Fatalf("the registered command: %v\n%s", err, out)
	}
	want := "arg=mcp\narg=--state-dir\narg=" + o.StateDir + "\narg=--arg=--backend\narg=--arg=it's sim\narg=--run-arg=--target-backend\narg=--run-arg=copilot_exec\n"
	if !strings.HasSuffix(string(out), want) {
		t.Errorf("the registered command ran\n%s\nwant it to end\n%s", out, want)
	}
	if _, err := Uninstall(Copilot, home); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, testfs.Tree(t, home)); diff != "" {
		t.Fatalf("after uninstall (-before +after):\n%s", diff)
	}

	// A config of the user's, changed by the user after the install:
	// only the entry goes.
	home = userHome(t)
	o.Home = home
	if _, err := Install(o); err != nil {
		t.Fatal(err)
	}
	var c map[string]map[string]any
	if err := json.Unmarshal(readFile(t, cfgPath(home)), &c); err != nil {
		t.Fatal(err)
	}
	c["mcpServers"]["added-later"] = map[string]any{"command": "later-mcp"}
	b, _ := json.Marshal(c)
	if err := os.WriteFile(cfgPath(home), b, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Uninstall(Copilot, home); err != nil {
		t.Fatal(err)
	}
	left := servers(t, home)
	if _, ok := left[Name]; ok || left["mine"].Command != "mine-mcp" || left["added-later"].Command != "later-mcp" {
		t.Fatalf("after uninstall the servers are %+v, want the user's two only", left)
	}

	// A server of that name that skillfleet did not add is refused, and
	// nothing is installed.
	home = t.TempDir()
	o.Home = home
	if err := os.MkdirAll(filepath.Dir(cfgPath(home)), 0o755); err != nil {
		t.Fatal(err)
	}
	foreign := `{"mcpServers":{"` + Name + `":{"command":"someone-else"}}}`
	if err := os.WriteFile(cfgPath(home), []byte(foreign), 0o644); err != nil {
		t.Fatal(err)
	}
	before = testfs.Tree(t, home)
	if _, err := Install(o); err == nil || !strings.Contains(err.Error(), "did not add") {
		t.Fatalf("install over a foreign server entry: %v", err)
	}
	if diff := cmp.Diff(before, testfs.Tree(t, home)); diff != "" {
		t.Fatalf("a refused install changed the home (-before +after):\n%s", diff)
	}
	// A config that is not JSON is refused, named.
	if err := os.WriteFile(cfgPath(home), []byte("{oops"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Install(o); err == nil || !strings.Contains(err.Error(), "mcp-config.json is not a JSON object") {
		t.Fatalf("install with a broken config: %v", err)
	}
}

// TestScriptSubcommands: the installed script's subcommands reach
// skillfleet sleep with the install's flags first and the user's options
// after them (so that the user's win), on the project in the working
// directory; harvest without --output writes into the state dir; handoff
// runs `sleep run|dry-run --backend handoff` and hands back skillfleet's
// exit code (3: prompts pending) and output unchanged.
func TestScriptSubcommands(t *testing.T) {
	stub := filepath.Join(t.TempDir(), "skillfleet")
	// A stand-in skillfleet: its arguments one a line; with STUB_EXIT set,
	// the handoff backend's last line and that exit code.
	if err := os.WriteFile(stub, []byte(`#!/bin/sh
for a in "$@"; do echo "arg=$a"; done
if [ -n "$STUB_EXIT" ]; then
	echo "handoff: 2 prompts pending: $STUB_DIR/pending.json"
	exit "$STUB_EXIT"
fi
`), 0o755); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	state := filepath.Join(t.TempDir(), "state")
	res, err := Install(Options{Agent: ClaudeCode, Home: home, Skillfleet: stub, StateDir: state,
		NightArgs: []string{"--backend", "sim", "--persona", "researcher"}, TargetArgs: []string{"--target-backend", "codex_exec"}})
	if err != nil {
		t.Fatal(err)
	}
	proj := t.TempDir()
	run := func(env []string, args ...string) (string, int) {
		t.Helper()
		cmd := exec.Command(res.Script, args...)
		cmd.Dir, cmd.Env = proj, append(os.Environ(), env...)
		out, err := cmd.Output()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Fatalf("%v: %v", args, err)
		}
		return string(out), cmd.ProcessState.ExitCode()
	}
	argLines := func(args ...string) string {
		var b strings.Builder
		for _, a := range args {
			b.WriteString("arg=" + a + "\n")
		}
		return b.String()
	}
	night := []string{"--state-dir", state, "--backend", "sim", "--persona", "researcher"}
	target := []string{"--target-backend", "codex_exec"}
	for _, tc := range []struct {
		args []string
		want []string // the stand-in's arguments
	}{
		{[]string{"dry-run", "--preferences", "British spelling; no emoji", "--max-tokens", "9"},
			slices.Concat([]string{"sleep", "dry-run"}, night, target, []string{"--project", proj, "--preferences", "British spelling; no emoji", "--max-tokens", "9"})},
		{[]string{"adopt"}, slices.Concat([]string{"sleep", "adopt"}, night, []string{"--project", proj})},
		{[]string{"adopt", "--undo"}, slices.Concat([]string{"sleep", "adopt"}, night, []string{"--project", proj, "--undo"})},
		{[]string{"harvest", "--output", "mine.json"}, slices.Concat([]string{"sleep", "harvest"}, night, []string{"--project", proj, "--output", "mine.json"})},
		{[]string{"status", "--json"}, slices.Concat([]string{"sleep", "status"}, night, []string{"--project", proj, "--json"})},
		{[]string{"schedule", "04:05", "--scheduler", "systemd"}, slices.Concat([]string{"sleep", "schedule"}, night, target, []string{"--project", proj, "--at", "04:05", "--scheduler", "systemd"})},
		{[]string{"schedule", "--at", "01:02"}, slices.Concat([]string{"sleep", "schedule"}, night, target, []string{"--project", proj, "--at", "03:17", "--at", "01:02"})},
		{[]string{"unschedule"}, slices.Concat([]string{"sleep", "unschedule"}, night, []string{"--project", proj})},
		// The user's --backend comes after the install's: it wins.
		{[]string{"run", "--backend", "anthropic"}, slices.Concat([]string{"sleep", "run"}, night, target, []string{"--project", proj, "--backend", "anthropic"})},
	} {
		out, code := run(nil, tc.args...)
		if code != 0 || !strings.HasPrefix(out, argLines(tc.want...)) {
			t.Errorf("%v: exit %d, printed\n%s\nwant it to start\n%s", tc.args, code, out, argLines(tc.want...))
		}
	}

	// harvest without --output: a new file in the state dir, which it
	// creates private.
	out, code := run(nil, "harvest")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if code != 0 || len(lines) < 2 || lines[len(lines)-2] != "arg=--output" ||
		!regexp.MustCompile(`^arg=`+regexp.QuoteMeta(state)+`/harvest/tasks-\d{8}T\d{6}Z\.json$`).MatchString(lines[len(lines)-1]) {
		t.Errorf("harvest: exit %d, printed\n%s", code, out)
	}
	if st, err := os.Stat(filepath.Join(state, "harvest")); err != nil || st.Mode().Perm() != 0o700 {
		t.Errorf("the harvest dir: %v, %v", st, err)
	}

	// handoff: skillfleet's exit code (3 and others) and its output as
	// they are, nothing printed after the pending line.
	dir := t.TempDir()
	for _, tc := range []struct {
		args []string
		mode string
		rest []string
	}{
		{nil, "run", nil},
		{[]string{"dry-run", "--preferences", "terse"}, "dry-run", []string{"--preferences", "terse"}},
		{[]string{"--max-tokens", "5"}, "run", []string{"--max-tokens", "5"}},
	} {
		for _, exit := range []string{"3", "0", "1"} {
			out, code := run([]string{"STUB_EXIT=" + exit, "STUB_DIR=" + dir}, append([]string{"handoff"}, tc.args...)...)
			want := argLines(slices.Concat([]string{"sleep", tc.mode}, night, target, []string{"--backend", "handoff", "--project", proj}, tc.rest)...) +
				"handoff: 2 prompts pending: " + dir + "/pending.json\n"
			if fmt.Sprint(code) != exit || out != want {
				t.Errorf("handoff %v with skillfleet exiting %s: exit %d, printed\n%s\nwant\n%s", tc.args, exit, code, out, want)
			}
		}
	}
}
