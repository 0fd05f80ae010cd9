package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/skillfleet/skillfleet/internal/agentinstall"
	"github.com/skillfleet/skillfleet/internal/testfs"
)

// TestSleepInstallListedByRealCLIs installs skillfleet sleep into the
// Copilot CLI, pi and opencode in a temporary home that holds some of the
// user's own settings (twice: the second changes nothing), and asks each
// pinned real CLI, on a copy of the installed home (the CLIs write state
// files of their own), what it loads: the Copilot CLI's `copilot skill
// list` and `copilot mcp list` (the skill and the MCP server, beside the
// user's own server), pi's RPC mode `get_commands` (the skill as
// skill:skillfleet-sleep, from the installed SKILL.md) and `opencode
// debug skill` (the skill at its installed place). Uninstall (twice)
// leaves the home file for file as it was, and the CLIs then list it no
// more. (Claude Code and Codex: TestSleepInstallIntoAgents; Cursor's
// agent is not on npm: TestInstallUninstallRoundTrip in
// internal/agentinstall.)
func TestSleepInstallListedByRealCLIs(t *testing.T) {
	for _, tc := range []struct {
		agent string
		// own are the user's files in the home before the install.
		own map[string]string
		// listed runs the CLI on home and reports whether it loads the
		// install, with the output to show.
		listed func(t *testing.T, bin, home, tmp string) (bool, string)
	}{
		{
			agent: agentinstall.Copilot,
			own: map[string]string{
				".copilot/mcp-config.json":     `{"mcpServers":{"mine":{"type":"local","command":"mine-mcp","args":[],"tools":["*"]}}}` + "\n",
				".copilot/skills/own/SKILL.md": "---\nname: own\ndescription: the user's own skill\n---\nMine.\n",
			},
			listed: func(t *testing.T, bin, home, tmp string) (bool, string) {
				env := copilotListEnv(home, tmp)
				skills := runAgentList(t, bin, home, env, "skill", "list")
				servers := runAgentList(t, bin, home, env, "mcp", "list")
				if !strings.Contains(skills, "own - the user's own skill") || !strings.Contains(servers, "mine") {
					t.Fatalf("the user's own skill or server is not listed:\n%s\n%s", skills, servers)
				}
				inSkills := strings.Contains(skills, agentinstall.Name+" - Run or schedule a skillfleet sleep night")
				inServers := strings.Contains(servers, agentinstall.Name)
				if inSkills != inServers {
					t.Errorf("skill listed %v, MCP server listed %v:\n%s\n%s", inSkills, inServers, skills, servers)
				}
				return inSkills && inServers, skills + servers
			},
		},
		{
			agent: agentinstall.Pi,
			own:   map[string]string{".pi/agent/settings.json": `{"defaultThinkingLevel":"off"}` + "\n"},
			listed: func(t *testing.T, bin, home, tmp string) (bool, string) {
				// RPC mode answers each command on a line and runs on
				// after its input ends: the first line is the answer.
				cmd := exec.Command(bin, "--mode", "rpc", "--no-session")
				cmd.Dir, cmd.Env = home, agentEnv(home, tmp, "PI_OFFLINE=1", "PI_TELEMETRY=0", "PI_SKIP_VERSION_CHECK=1")
				cmd.Stdin = strings.NewReader(`{"type":"get_commands","id":"1"}` + "\n")
				stdout, err := cmd.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				if err := cmd.Start(); err != nil {
					t.Fatalf("pi --mode rpc: %v", err)
				}
				out, err := bufio.NewReader(stdout).ReadString('\n')
				_ = cmd.Process.Kill()
				_ = cmd.Wait()
				if err != nil && out == "" {
					t.Fatalf("pi --mode rpc printed no answer: %v", err)
				}
				var resp struct {
					Success bool `json:"success"`
					Data    struct {
						Commands []struct {
							Name, Source string
							SourceInfo   struct{ Path string } `json:"sourceInfo"`
						} `json:"commands"`
					} `json:"data"`
				}
				line, _, _ := strings.Cut(string(out), "\n")
				if err := json.Unmarshal([]byte(line), &resp); err != nil || !resp.Success {
					t.Fatalf("pi get_commands answered %q (%v)", out, err)
				}
				dir, _ := agentinstall.Dir(agentinstall.Pi, home)
				for _, c := range resp.Data.Commands {
					if c.Name == "skill:"+agentinstall.Name && c.Source == "skill" && c.SourceInfo.Path == filepath.Join(dir, "SKILL.md") {
						return true, line
					}
				}
				return false, line
			},
		},
		{
			agent: agentinstall.Opencode,
			own:   map[string]string{".config/opencode/opencode.json": `{"autoupdate":false,"share":"disabled"}` + "\n"},
			listed: func(t *testing.T, bin, home, tmp string) (bool, string) {
				out := runAgentList(t, bin, home, agentEnv(home, tmp, "OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1",
					"OPENCODE_DISABLE_LSP_DOWNLOAD=1", "OPENCODE_DISABLE_SHARE=1"), "debug", "skill")
				var skills []struct{ Name, Location string }
				if i := strings.Index(out, "["); i < 0 || json.Unmarshal([]byte(out[i:]), &skills) != nil {
					t.Fatalf("opencode debug skill printed no skill list:\n%s", out)
				}
				dir, _ := agentinstall.Dir(agentinstall.Opencode, home)
				var names []string
				found := false
				for _, s := range skills {
					names = append(names, s.Name+" "+s.Location)
					found = found || s.Name == agentinstall.Name && s.Location == filepath.Join(dir, "SKILL.md")
				}
				return found, strings.Join(names, "\n")
			},
		},
	} {
		t.Run(tc.agent, func(t *testing.T) {
			bin := realAgentBin(t, tc.agent)
			t.Parallel()
			home, tmp := t.TempDir(), t.TempDir()
			for p, s := range tc.own {
				writeTestFile(t, filepath.Join(home, p), s)
			}
			before := testfs.Tree(t, home)
			sf := skillfleetIn(t, binary, home, tmp)
			install := []string{"sleep", "install", tc.agent, "--home", home, "--skillfleet", binary, "--state-dir", filepath.Join(tmp, "state")}
			sf(install...)
			if out := sf(install...); !strings.Contains(out, "already installed, unchanged") {
				t.Errorf("second install:\n%s", out)
			}
			cliHome := t.TempDir()
			copyHome(t, home, cliHome)
			if ok, out := tc.listed(t, bin, cliHome, tmp); !ok {
				t.Fatalf("the real %s does not list the installed %s:\n%s", tc.agent, agentinstall.Name, out)
			}
			if out := sf("sleep", "uninstall", tc.agent, "--home", home); !strings.Contains(out, "removed ") {
				t.Errorf("uninstall: %s", out)
			}
			if out := sf("sleep", "uninstall", tc.agent, "--home", home); !strings.Contains(out, "not installed") {
				t.Errorf("second uninstall: %s", out)
			}
			if diff := cmp.Diff(before, testfs.Tree(t, home)); diff != "" {
				t.Fatalf("the home after uninstall differs from before the install (-before +after):\n%s", diff)
			}
			after := t.TempDir()
			copyHome(t, home, after)
			if ok, out := tc.listed(t, bin, after, tmp); ok {
				t.Fatalf("after uninstall the real %s still lists %s:\n%s", tc.agent, agentinstall.Name, out)
			}
		})
	}
}

// copilotListEnv is the Copilot CLI's environment for its list commands:
// no update check, the shared unpacked bundle.
func copilotListEnv(home, tmp string) []string {
	env := agentEnv(home, tmp, "COPILOT_AUTO_UPDATE=false", "NO_COLOR=1")
	if base, err := os.UserCacheDir(); err == nil {
		env = append(env, "COPILOT_PKG_CACHE_HOME="+filepath.Join(base, "skillfleet", "copilot"))
	}
	return env
}

// runAgentList runs an agent CLI's command in dir and returns its output.
func runAgentList(t *testing.T, bin, dir string, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Dir, cmd.Env = dir, env
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", filepath.Base(bin), strings.Join(args, " "), err, out)
	}
	return string(out)
}
