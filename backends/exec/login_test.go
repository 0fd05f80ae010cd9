package exec_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/backends/exec"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// Planted login values: none may leave the call.
const (
	plantedAccess  = "eyJplanted-access-token-5c1e"
	plantedRefresh = "rt_planted-refresh-token-77ad"
	plantedProject = "/home/u/secret-project-9f3b"
)

// userHome writes a user's home with the agent's login and a file of
// the user's that no call may see.
func userHome(t *testing.T, agent string) string {
	t.Helper()
	home := t.TempDir()
	files := map[string]string{"notes.txt": "the user's own file\n"}
	switch agent {
	case exec.AgentCodex:
		files[".codex/auth.json"] = `{"auth_mode":"chatgpt","OPENAI_API_KEY":null,"tokens":{"access_token":"` + plantedAccess + `","refresh_token":"` + plantedRefresh + `"}}`
		files[".codex/config.toml"] = "# the user's config\n"
	case exec.AgentClaude:
		files[".claude/.credentials.json"] = `{"claudeAiOauth":{"accessToken":"` + plantedAccess + `","refreshToken":"` + plantedRefresh + `"}}`
		files[".claude.json"] = `{"userID":"user-4242abcd","oauthAccount":{"emailAddress":"me@example.com"},"projects":{"` + plantedProject + `":{}}}`
	}
	for p, s := range files {
		if err := os.MkdirAll(filepath.Join(home, filepath.Dir(p)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(home, p), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return home
}

// loginStandIns are stand-in CLIs that fail unless their HOME holds the
// user's login (and only the account part of ~/.claude.json), and that
// print the token in their reply.
var loginStandIns = map[string]string{
	exec.AgentCodex: `[ "$1" = --version ] && { echo 'codex-cli 0.169.0'; exit 0; }
case "$CODEX_HOME" in "$HOME"/*) ;; *) echo "CODEX_HOME $CODEX_HOME outside HOME $HOME" >&2; exit 1 ;; esac
grep -q '"access_token"' "$CODEX_HOME/auth.json" 2>/dev/null || { echo "not logged in: no $CODEX_HOME/auth.json" >&2; exit 1; }
[ ! -e "$HOME/notes.txt" ] || { echo "the user's home is visible" >&2; exit 1; }
tok=$(grep -o 'eyJ[a-z0-9-]*' "$CODEX_HOME/auth.json")
echo '{"type":"thread.started"}'
echo '{"type":"item.completed","item":{"type":"agent_message","text":"logged in with '"$tok"'"}}'
echo '{"type":"turn.completed","usage":{"input_tokens":10,"output_tokens":2}}'`,
	exec.AgentClaude: `[ "$1" = --version ] && { echo '2.1.328 (Claude Code)'; exit 0; }
grep -q accessToken "$HOME/.claude/.credentials.json" 2>/dev/null || { echo "Invalid API key · Please run /login" >&2; exit 1; }
grep -q oauthAccount "$HOME/.claude.json" || { echo "no account in $HOME/.claude.json" >&2; exit 1; }
! grep -q projects "$HOME/.claude.json" || { echo "the user's projects were copied" >&2; exit 1; }
[ -z "$ANTHROPIC_API_KEY" ] || { echo "an API key was set" >&2; exit 1; }
tok=$(grep -o 'eyJ[a-z0-9-]*' "$HOME/.claude/.credentials.json")
echo '{"type":"result","subtype":"success","is_error":false,"result":"logged in with '"$tok"'","usage":{"input_tokens":10,"output_tokens":2}}'`,
}

// TestUserLoginReachesTheAgentOnly: with option user_login=true a
// stand-in Codex and Claude Code that fail unless their HOME holds the
// user's login answer, sandboxed and not; the user's other files stay
// out of view, ~/.claude.json is cut to its account keys, the token the
// agent prints is redacted from its reply, and a kept work directory
// holds no copy of the login. Without the option the same stand-in
// fails (not logged in), its error without the token; a missing login is
// an invalid_request naming the file and the login command.
func TestUserLoginReachesTheAgentOnly(t *testing.T) {
	t.Parallel()
	for _, agent := range []string{exec.AgentCodex, exec.AgentClaude} {
		for _, sandboxed := range []bool{true, false} {
			name := agent + map[bool]string{true: "/sandboxed", false: "/unsandboxed"}[sandboxed]
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				home := userHome(t, agent)
				before := homeFiles(t, home)
				root := t.TempDir()
				bin := script(t, loginStandIns[agent])
				mk := func(login bool) *exec.Client {
					opts := map[string]string{"agent": agent, "bin": bin, "keep_workdir": "true", "work_root": root}
					if login {
						opts["user_login"] = "true"
					}
					if !sandboxed {
						opts["sandbox"] = "none"
					}
					cfg, err := exec.ConfigFromOptions("m", opts)
					if err != nil {
						t.Fatal(err)
					}
					cfg.Getenv = env(map[string]string{"HOME": home})
					cfg.Sandbox.Logf = func(string, ...any) {}
					return exec.New(cfg)
				}
				resp, err := mk(true).Chat(t.Context(), req("<skill>\nx\n</skill>", "task"))
				if err != nil {
					t.Fatalf("with user_login: %v", err)
				}
				if !strings.HasPrefix(resp.Content, "logged in with ") || strings.Contains(resp.Content, plantedAccess) {
					t.Errorf("reply %q: want the stand-in's answer with its token redacted", resp.Content)
				}
				_, err = mk(false).Chat(t.Context(), req("<skill>\nx\n</skill>", "task"))
				if err == nil || llm.KindOf(err) != llm.KindServer {
					t.Fatalf("without user_login: %v, want the agent's not-logged-in failure", err)
				}
				// The kept work directories: no copy of the login, no
				// planted value.
				_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
					if err != nil || d.IsDir() {
						return err
					}
					b, _ := os.ReadFile(p)
					for _, s := range []string{plantedAccess, plantedRefresh, plantedProject} {
						if strings.Contains(string(b), s) {
							t.Errorf("kept work file %s holds %q", p, s)
						}
					}
					if n := d.Name(); n == "auth.json" || n == ".credentials.json" || n == ".claude.json" {
						t.Errorf("kept work file %s: a copy of the login", p)
					}
					return nil
				})
				// The user's files are as they were.
				if after := homeFiles(t, home); len(after) != len(before) {
					t.Errorf("the user's home went from %d files to %d", len(before), len(after))
				}
				for p, want := range before {
					if b, _ := os.ReadFile(filepath.Join(home, p)); string(b) != want {
						t.Errorf("the user's %s changed: %q", p, b)
					}
				}
				// No login to copy.
				if err := os.RemoveAll(filepath.Join(home, map[string]string{exec.AgentCodex: ".codex", exec.AgentClaude: ".claude"}[agent])); err != nil {
					t.Fatal(err)
				}
				_, err = mk(true).Chat(t.Context(), req("<skill>\nx\n</skill>", "task"))
				how := map[string]string{exec.AgentCodex: "codex login", exec.AgentClaude: "/login"}[agent]
				if llm.KindOf(err) != llm.KindInvalidRequest || !strings.Contains(err.Error(), home) || !strings.Contains(err.Error(), how) {
					t.Fatalf("no login: %v, want an invalid_request naming the file and %q", err, how)
				}
			})
		}
	}
}

// homeFiles maps a home's files to their content.
func homeFiles(t *testing.T, home string) map[string]string {
	t.Helper()
	out := map[string]string{}
	_ = filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, _ := os.ReadFile(p)
		rel, _ := filepath.Rel(home, p)
		out[rel] = string(b)
		return nil
	})
	return out
}

// TestUserLoginRedactsTheAgentsError: an agent that fails after reading
// the login does not carry the login's values into the error.
func TestUserLoginRedactsTheAgentsError(t *testing.T) {
	t.Parallel()
	home := userHome(t, exec.AgentCodex)
	bin := script(t, `[ "$1" = --version ] && { echo 'codex-cli 0.169.0'; exit 0; }
echo "401 Unauthorized: $(cat "$CODEX_HOME/auth.json")" >&2
exit 1`)
	cfg, err := exec.ConfigFromOptions("m", map[string]string{"agent": "codex", "bin": bin, "user_login": "true", "sandbox": "none"})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Getenv = env(map[string]string{"HOME": home})
	cfg.Sandbox.Logf = func(string, ...any) {}
	_, err = exec.New(cfg).Chat(t.Context(), req("", "task"))
	if err == nil || !strings.Contains(err.Error(), "401 Unauthorized") {
		t.Fatalf("err %v: want the agent's 401", err)
	}
	if strings.Contains(err.Error(), plantedAccess) || strings.Contains(err.Error(), plantedRefresh) {
		t.Fatalf("error %q carries the login", err)
	}
	if _, err := exec.ConfigFromOptions("m", map[string]string{"agent": "codex", "user_login": "yes please"}); err == nil || !strings.Contains(err.Error(), "user_login") {
		t.Errorf("user_login=yes please: %v, want it refused", err)
	}
}

// TestUserLoginWithAnEndpointSendsNoKey: Claude Code on the user's login
// pointed at another endpoint (base_url: a gateway, or sim-llm) gets the
// endpoint and the login, and no API key, which would sign the calls in
// the login's place (the stand-in fails when ANTHROPIC_API_KEY is set).
func TestUserLoginWithAnEndpointSendsNoKey(t *testing.T) {
	t.Parallel()
	home := userHome(t, exec.AgentClaude)
	bin := script(t, `[ "$ANTHROPIC_BASE_URL" = "http://127.0.0.1:9" ] || { echo "endpoint $ANTHROPIC_BASE_URL" >&2; exit 1; }
`+strings.SplitN(loginStandIns[exec.AgentClaude], "\n", 2)[1])
	cfg, err := exec.ConfigFromOptions("m", map[string]string{"agent": exec.AgentClaude, "bin": bin, "user_login": "true",
		"base_url": "http://127.0.0.1:9/v1", "sandbox": "none", "mode": exec.ModeChat})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Getenv = env(map[string]string{"HOME": home})
	cfg.Sandbox.Logf = func(string, ...any) {}
	resp, err := exec.New(cfg).Chat(t.Context(), req("", "hello"))
	if err != nil || !strings.HasPrefix(resp.Content, "logged in with ") {
		t.Fatalf("reply %+v, %v: want the login's answer", resp, err)
	}
}
