package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io/fs"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	simmodel "github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/internal/agentinstall"
	"github.com/skillfleet/skillfleet/internal/testfs"
)

// agentCLI is the pinned agent CLI name installed by
// scripts/install-agents.sh (requireAgents checks it is there).
func agentCLI(t *testing.T, name string) string {
	t.Helper()
	return filepath.Join(repoRoot(t), ".tools", "agents", "node_modules", ".bin", name)
}

// copyHome copies the regular files and directories of src into dst.
func copyHome(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, info.Mode().Perm())
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatal(err)
	}
}

// agentEnv is a quiet environment for a real agent CLI under home, with
// temporary files in tmp.
func agentEnv(home, tmp string, extra ...string) []string {
	env := []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + tmp, "LANG=C.UTF-8",
		"DISABLE_AUTOUPDATER=1", "DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	return append(env, extra...)
}

// TestSleepInstallIntoAgents installs skillfleet sleep into Claude Code
// and Codex in a temporary home (twice: the second changes nothing) and
// shows that the pinned real CLIs see what it installed: Claude Code lists
// the plugin (claude plugin list --json), its /skillfleet-sleep command
// and SessionEnd hook (claude plugin details), and a session's init event
// names the plugin and the command; Codex lists the skill in the prompt it
// would send (codex debug prompt-input). The CLIs run on a copy of the
// installed home, so that the state files they write are not taken for
// the install's. The installed script, run in a project, runs a night
// (the researcher persona on the sim backend) and prints the proposal and
// the adopt command; the hook's record lands in the state dir. Uninstall
// (twice) leaves the home file for file as it was before the install.
func TestSleepInstallIntoAgents(t *testing.T) {
	requireAgents(t)
	t.Parallel()
	home := t.TempDir()
	for p, s := range map[string]string{
		".claude/settings.json":        `{"theme":"dark"}` + "\n",
		".claude/skills/mine/SKILL.md": "---\nname: mine\ndescription: the user's own skill\n---\nMine.\n",
		".codex/config.toml":           "# the user's\n",
		"work/app/README.md":           "the user's project\n",
	} {
		if err := os.MkdirAll(filepath.Join(home, filepath.Dir(p)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, p), []byte(s), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	before := testfs.Tree(t, home)
	state := t.TempDir()
	tmp := t.TempDir()
	sf := skillfleetIn(t, binary, home, tmp)
	night := []string{"--home", home, "--state-dir", state, "--persona", "researcher", "--backend", "sim"}
	out := sf(append([]string{"sleep", "install", "claude-code", "--session-end-hook"}, night...)...)
	if !strings.Contains(out, "installed the Claude Code plugin skillfleet-sleep") {
		t.Fatalf("install claude-code:\n%s", out)
	}
	if out := sf(append([]string{"sleep", "install", "claude-code", "--session-end-hook"}, night...)...); !strings.Contains(out, "already installed, unchanged") {
		t.Fatalf("second install claude-code:\n%s", out)
	}
	sf(append([]string{"sleep", "install", "codex"}, night...)...)
	if out := sf(append([]string{"sleep", "install", "codex"}, night...)...); !strings.Contains(out, "already installed, unchanged") {
		t.Fatalf("second install codex:\n%s", out)
	}
	claudeDir, _ := agentinstall.Dir(agentinstall.ClaudeCode, home)
	codexDir, _ := agentinstall.Dir(agentinstall.Codex, home)
	script := filepath.Join(claudeDir, "bin", agentinstall.Name)

	// The real CLIs, on a copy of the installed home.
	cliHome := t.TempDir()
	copyHome(t, home, cliHome)
	claude := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(agentCLI(t, "claude"), args...)
		cmd.Env = agentEnv(cliHome, tmp)
		cmd.Dir = cliHome
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("claude %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	var listed []struct {
		ID          string `json:"id"`
		Scope       string `json:"scope"`
		Enabled     bool   `json:"enabled"`
		InstallPath string `json:"installPath"`
	}
	out = claude("plugin", "list", "--json")
	if err := json.Unmarshal([]byte(out[strings.Index(out, "["):]), &listed); err != nil {
		t.Fatalf("claude plugin list --json: %v\n%s", err, out)
	}
	pluginID := agentinstall.Name + "@skills-dir"
	found := false
	for _, p := range listed {
		if p.ID == pluginID {
			found = true
			if !p.Enabled || p.Scope != "user" || p.InstallPath != filepath.Join(cliHome, ".claude", "skills", agentinstall.Name) {
				t.Errorf("claude plugin list: %+v, want enabled, scope user, at ~/.claude/skills/%s", p, agentinstall.Name)
			}
		}
	}
	if !found {
		t.Fatalf("claude plugin list --json does not list %s (Claude Code no longer loads plugins from ~/.claude/skills/<name>/.claude-plugin?):\n%s", pluginID, out)
	}
	details := claude("plugin", "details", pluginID)
	for _, want := range []string{agentinstall.Name, "SessionEnd"} {
		if !strings.Contains(details, want) {
			t.Errorf("claude plugin details %s has no %q:\n%s", pluginID, want, details)
		}
	}
	t.Logf("claude plugin details:\n%s", details)
	// A session's init event: the plugin is loaded and the command is
	// there to type. The session asks sim-llm a sim question and ends.
	sim := httptest.NewServer(simmodel.NewServer(simmodel.New(simmodel.Options{Epsilon: -1, HarmSpill: -1, LengthBudget: -1}), simmodel.ServerOptions{}))
	defer sim.Close()
	cmd := exec.Command(agentCLI(t, "claude"), "-p", "Note the serial code. Record value: 4821.\n\nAnswer inside <answer></answer>.",
		"--output-format", "stream-json", "--verbose", "--model", "sim-target", "--tools", "Read", "--no-session-persistence")
	cmd.Env = agentEnv(cliHome, tmp, "ANTHROPIC_BASE_URL="+sim.URL, "ANTHROPIC_API_KEY=sk-ant-sim-not-a-key")
	cmd.Dir = filepath.Join(home, "work", "app")
	initOut, err := cmd.CombinedOutput()
	var init struct {
		Type          string   `json:"type"`
		Subtype       string   `json:"subtype"`
		SessionID     string   `json:"session_id"`
		SlashCommands []string `json:"slash_commands"`
		Skills        []string `json:"skills"`
		Plugins       []struct {
			Name, Path, Source string
		} `json:"plugins"`
	}
	sc := bufio.NewScanner(bytes.NewReader(initOut))
	sc.Buffer(nil, 4<<20)
	for sc.Scan() && init.Subtype != "init" {
		_ = json.Unmarshal(sc.Bytes(), &init)
	}
	if init.Subtype != "init" {
		t.Fatalf("claude -p printed no init event (%v):\n%s", err, initOut)
	}
	if !slices.ContainsFunc(init.Plugins, func(p struct{ Name, Path, Source string }) bool { return p.Source == pluginID }) {
		t.Errorf("the session's init event lists plugins %+v, not %s", init.Plugins, pluginID)
	}
	cmdName := ""
	for _, c := range init.SlashCommands {
		if c == agentinstall.Name || c == agentinstall.Name+":"+agentinstall.Name {
			cmdName = c
		}
	}
	if cmdName == "" {
		t.Errorf("the session's slash commands %v have no /%s", init.SlashCommands, agentinstall.Name)
	}
	t.Logf("Claude Code's session offers /%s (plugin %s)", cmdName, pluginID)
	// The model-invocable skill is among the session's skills, and the
	// handoff command among its commands, both under the plugin's name.
	if !slices.Contains(init.Skills, agentinstall.Name+":"+agentinstall.Name) {
		t.Errorf("the session's skills %v have no %s:%s", init.Skills, agentinstall.Name, agentinstall.Name)
	}
	if !slices.Contains(init.SlashCommands, agentinstall.Name+":"+agentinstall.Name+"-handoff") {
		t.Errorf("the session's slash commands %v have no /%s:%s-handoff", init.SlashCommands, agentinstall.Name, agentinstall.Name)
	}
	// claude plugin validate lists what the plugin provides, as it reads it.
	validate := claude("plugin", "validate", filepath.Join(cliHome, ".claude", "skills", agentinstall.Name))
	for _, want := range []string{"skills: " + agentinstall.Name + ":" + agentinstall.Name, "commands: " + agentinstall.Name + ":" + agentinstall.Name + "\n",
		"commands: " + agentinstall.Name + ":" + agentinstall.Name + "-handoff", "Validation passed"} {
		if !strings.Contains(validate, want) {
			t.Errorf("claude plugin validate has no %q:\n%s", want, validate)
		}
	}
	// The session's end ran the plugin's SessionEnd hook, which recorded
	// it in the state dir.
	recorded := func() []agentinstall.RecordedSession {
		b, _ := os.ReadFile(filepath.Join(state, agentinstall.RecordFile))
		var out []agentinstall.RecordedSession
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var r agentinstall.RecordedSession
			if json.Unmarshal([]byte(l), &r) == nil {
				out = append(out, r)
			}
		}
		return out
	}
	if rs := recorded(); len(rs) != 1 || rs[0].SessionID != init.SessionID || rs[0].Agent != agentinstall.ClaudeCode || rs[0].Project != cmd.Dir {
		t.Errorf("after Claude Code's session %s the hook's record holds %+v, want that session in %s", init.SessionID, rs, cmd.Dir)
	} else {
		t.Logf("Claude Code ran the SessionEnd hook: recorded %+v", rs[0])
	}

	// Codex: the skill is in the prompt it would send.
	ccmd := exec.Command(agentCLI(t, "codex"), "debug", "prompt-input", "hi")
	ccmd.Env = agentEnv(cliHome, tmp)
	ccmd.Dir = filepath.Join(home, "work", "app")
	cout, err := ccmd.CombinedOutput()
	if err != nil {
		t.Fatalf("codex debug prompt-input: %v\n%s", err, cout)
	}
	if !strings.Contains(string(cout), agentinstall.Name+": Run or schedule a skillfleet sleep night") || !strings.Contains(string(cout), agentinstall.Name+"/SKILL.md") {
		t.Errorf("codex debug prompt-input does not list the %s skill:\n%s", agentinstall.Name, tailLines(string(cout), 40))
	}

	// The command's script runs a night and prints the proposal.
	run := exec.Command(script, "run")
	run.Dir = filepath.Join(home, "work", "app")
	run.Env = agentEnv(home, tmp)
	start := time.Now()
	rout, err := run.CombinedOutput()
	if err != nil {
		t.Fatalf("%s run: %v\n%s", script, err, rout)
	}
	t.Logf("%s run (%s):\n%s", script, time.Since(start).Round(time.Millisecond), rout)
	for _, want := range []string{"action: accept", "accepted skill add \"Write arXiv identifiers", "staged: " + state,
		"adopt with: skillfleet sleep adopt --persona researcher --state-dir " + state, "latest staging: "} {
		if !strings.Contains(string(rout), want) {
			t.Errorf("the night's output has no %q", want)
		}
	}
	// The Codex skill's script is the same front end.
	if b, err := os.ReadFile(filepath.Join(codexDir, "SKILL.md")); err != nil || !strings.Contains(string(b), filepath.Join(codexDir, "scripts", agentinstall.Name)+" run") {
		t.Errorf("the Codex skill does not name its script: %v\n%s", err, b)
	}

	// The session-end hook's command records the session.
	rec := exec.Command(script, "record")
	rec.Env = agentEnv(home, tmp)
	rec.Stdin = strings.NewReader(`{"session_id":"abc-123","transcript_path":"` + home + `/.claude/projects/x/abc-123.jsonl","cwd":"` + home + `/work/app","hook_event_name":"SessionEnd","reason":"exit"}`)
	if out, err := rec.CombinedOutput(); err != nil {
		t.Fatalf("record: %v\n%s", err, out)
	}
	st := exec.Command(script, "status")
	st.Dir = filepath.Join(home, "work", "app")
	st.Env = agentEnv(home, tmp)
	sout, err := st.CombinedOutput()
	if err != nil || !strings.Contains(string(sout), "sessions recorded by the session-end hook: 2") {
		t.Errorf("status: %v\n%s", err, sout)
	}
	if rs := recorded(); len(rs) != 2 || rs[1].SessionID != "abc-123" || rs[1].Project != home+"/work/app" || rs[1].Reason != "exit" {
		t.Errorf("the record: %+v", rs)
	}

	// Uninstall, twice: the home is as it was. (The other agents' installs
	// are TestInstallUninstallRoundTrip's, in internal/agentinstall.)
	for _, agent := range []string{agentinstall.ClaudeCode, agentinstall.Codex} {
		if out := sf("sleep", "uninstall", agent, "--home", home); !strings.Contains(out, "removed ") {
			t.Errorf("uninstall %s: %s", agent, out)
		}
		if out := sf("sleep", "uninstall", agent, "--home", home); !strings.Contains(out, "not installed") {
			t.Errorf("second uninstall %s: %s", agent, out)
		}
	}
	if diff := cmp.Diff(before, testfs.Tree(t, home)); diff != "" {
		t.Errorf("the home after uninstall differs from before the install (-before +after):\n%s", diff)
	}
}

// skillfleetIn returns a function that runs the skillfleet binary with
// agentEnv(home, tmp) and returns its output, failing t on an error.
func skillfleetIn(t *testing.T, binary, home, tmp string) func(args ...string) string {
	return func(args ...string) string {
		t.Helper()
		cmd := exec.Command(binary, args...)
		cmd.Env = agentEnv(home, tmp)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("skillfleet %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
}
