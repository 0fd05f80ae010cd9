package exec_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillfleet/skillfleet/backends/exec"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// TestLoginSafety: a user login whose OAuth access token expires before
// the call could end (Claude Code's expiresAt, Codex's JWT exp, pi's and
// opencode's expires) is refused before the agent starts, naming the
// file, and the user's file is left byte for byte; a fresh one reaches
// the agent (pi's and opencode's where each CLI reads it), and the
// user's file is still unchanged. The Copilot CLI's login is a token
// variable, refused when none is set.
func TestLoginSafety(t *testing.T) {
	t.Parallel()
	jwt := func(exp time.Time) string {
		p := base64.RawURLEncoding.EncodeToString([]byte(fmt.Sprintf(`{"exp":%d}`, exp.Unix())))
		return "eyJhbGciOiJub25lIn0." + p + ".c2ln"
	}
	soon, later := time.Now().Add(time.Minute), time.Now().Add(3*time.Hour)
	for _, tc := range []struct {
		agent, file string
		login       func(time.Time) string
		// check is a shell test the stand-in agent runs on its copy.
		check string
	}{
		{exec.AgentClaude, ".claude/.credentials.json", func(e time.Time) string {
			return fmt.Sprintf(`{"claudeAiOauth":{"accessToken":"sk-ant-oat-planted-1","refreshToken":"sk-ant-ort-planted-2","expiresAt":%d}}`, e.UnixMilli())
		}, `test -s "$HOME/.claude/.credentials.json"`},
		{exec.AgentCodex, ".codex/auth.json", func(e time.Time) string {
			return `{"tokens":{"access_token":"` + jwt(e) + `","refresh_token":"rt_planted-refresh"}}`
		}, `test -s "$CODEX_HOME/auth.json"`},
		{exec.AgentPi, ".pi/agent/auth.json", func(e time.Time) string {
			return fmt.Sprintf(`{"anthropic":{"type":"oauth","access":"pi-planted-access","refresh":"pi-planted-refresh","expires":%d}}`, e.UnixMilli())
		}, `test -s "$PI_CODING_AGENT_DIR/auth.json"`},
		{exec.AgentOpencode, ".local/share/opencode/auth.json", func(e time.Time) string {
			return fmt.Sprintf(`{"anthropic":{"type":"oauth","access":"oc-planted-access","refresh":"oc-planted-refresh","expires":%d}}`, e.UnixMilli())
		}, `test -s "$XDG_DATA_HOME/opencode/auth.json"`},
	} {
		for _, fresh := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/fresh=%v", tc.agent, fresh), func(t *testing.T) {
				t.Parallel()
				home := t.TempDir()
				p := filepath.Join(home, tc.file)
				exp := soon
				if fresh {
					exp = later
				}
				content := tc.login(exp)
				if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
					t.Fatal(err)
				}
				script := filepath.Join(t.TempDir(), "agent.sh")
				body := "#!/bin/sh\n" + tc.check + ` || { echo "no login copy" >&2; exit 1; }` + "\necho logged-in\n"
				if err := os.WriteFile(script, []byte(body), 0o755); err != nil {
					t.Fatal(err)
				}
				c := exec.New(exec.Config{Agent: tc.agent, Command: []string{script}, Output: exec.OutputText, UserLogin: true,
					Timeout: 10 * time.Minute, Getenv: env(map[string]string{"HOME": home, "PATH": os.Getenv("PATH")}),
					Sandbox: exec.SandboxConfig{Mode: exec.SandboxNone, Logf: func(string, ...any) {}}})
				resp, err := c.Chat(t.Context(), simRequest("# Records\n", "q"))
				switch {
				case fresh && (err != nil || !strings.Contains(resp.Content, "logged-in")):
					t.Fatalf("fresh login: %+v, %v", resp, err)
				case !fresh && (resp != nil || llm.KindOf(err) != llm.KindInvalidRequest || !strings.Contains(err.Error(), "expires") || !strings.Contains(err.Error(), p)):
					t.Fatalf("expiring login: %+v, %v; want invalid_request naming %s and the expiry", resp, err, p)
				}
				if b, _ := os.ReadFile(p); string(b) != content {
					t.Fatal("the user's login file changed")
				}
				if err != nil && (strings.Contains(err.Error(), "planted") || strings.Contains(err.Error(), "eyJ")) {
					t.Fatalf("the error shows the login: %v", err)
				}
			})
		}
	}
	t.Run("copilot token", func(t *testing.T) {
		t.Parallel()
		c := exec.New(exec.Config{Agent: exec.AgentCopilot, Command: []string{"sh", "-c", `test -n "$COPILOT_GITHUB_TOKEN" && echo token-seen`}, Output: exec.OutputText,
			UserLogin: true, Getenv: env(map[string]string{"HOME": t.TempDir(), "PATH": os.Getenv("PATH")}),
			Sandbox: exec.SandboxConfig{Mode: exec.SandboxNone, Logf: func(string, ...any) {}}})
		if _, err := c.Chat(t.Context(), simRequest("# Records\n", "q")); llm.KindOf(err) != llm.KindInvalidRequest || !strings.Contains(err.Error(), "COPILOT_GITHUB_TOKEN") {
			t.Fatalf("no token: %v", err)
		}
		c = exec.New(exec.Config{Agent: exec.AgentCopilot, Command: []string{"sh", "-c", `test -n "$COPILOT_GITHUB_TOKEN" && echo token-seen $COPILOT_GITHUB_TOKEN`}, Output: exec.OutputText,
			UserLogin: true, Getenv: env(map[string]string{"HOME": t.TempDir(), "PATH": os.Getenv("PATH"), "COPILOT_GITHUB_TOKEN": "gho_planted_token_123"}),
			Sandbox: exec.SandboxConfig{Mode: exec.SandboxNone, Logf: func(string, ...any) {}}})
		resp, err := c.Chat(t.Context(), simRequest("# Records\n", "q"))
		if err != nil || !strings.Contains(resp.Content, "token-seen") || strings.Contains(resp.Content, "gho_planted") {
			t.Fatalf("token login: %+v, %v (the token must reach the agent, redacted from its reply)", resp, err)
		}
	})
}
