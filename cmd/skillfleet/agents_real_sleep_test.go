package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	simmodel "github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/pkg/nightly"
)

// loginNight is one agent CLI a Sleep night runs on alone: its chat
// family (miner, reflector, judge), its exec family (replays), the flag
// naming its program, the API path its requests reach sim-llm on, and
// its login files (relative to HOME) with the access token that must
// sign every request.
type loginNight struct {
	agent, chat, target, pathFlag, api string
	login                              map[string]string
	access                             string
}

// plantedJWT is a JWT-shaped token (unsigned) with these claims, as the
// Codex login holds: Codex reads the account from its id_token and
// skillfleet the expiry from its access_token.
func plantedJWT(claims map[string]any) string {
	b, _ := json.Marshal(claims)
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(`{"alg":"RS256","typ":"JWT"}`)) + "." + enc(b) + "." + enc([]byte("planted-signature"))
}

func loginNights() []loginNight {
	month := time.Now().Add(30 * 24 * time.Hour)
	claudeAccess := "sk-ant-oat01-PlantedLoginAccess0123456789"
	auth := map[string]any{"chatgpt_plan_type": "plus", "chatgpt_account_id": "planted-account", "chatgpt_user_id": "planted-user"}
	codexAccess := plantedJWT(map[string]any{"exp": month.Unix(), "https://api.openai.com/auth": auth})
	codexID := plantedJWT(map[string]any{"exp": month.Unix(), "email": "dev@example.com", "https://api.openai.com/auth": auth})
	return []loginNight{{
		agent: "claude", chat: "claude_chat", target: "claude_code_exec", pathFlag: "--claude-code-exec-path", api: "/v1/messages",
		access: claudeAccess,
		login: map[string]string{
			".claude/.credentials.json": `{"claudeAiOauth":{"accessToken":"` + claudeAccess + `","refreshToken":"sk-ant-ort01-PlantedLoginRefresh0123456789","expiresAt":` +
				strconv.FormatInt(month.UnixMilli(), 10) + `,"scopes":["user:inference","user:profile"],"subscriptionType":"pro"}}`,
			".claude.json": `{"hasCompletedOnboarding":true,"oauthAccount":{"accountUuid":"planted-account","emailAddress":"dev@example.com"}}`,
		},
	}, {
		agent: "codex", chat: "codex_chat", target: "codex_exec", pathFlag: "--codex-exec-path", api: "/v1/responses",
		access: codexAccess,
		login: map[string]string{
			".codex/auth.json": `{"auth_mode":"chatgpt","OPENAI_API_KEY":null,"tokens":{"id_token":"` + codexID + `","access_token":"` + codexAccess +
				`","refresh_token":"rt_PlantedLoginRefresh0123456789","account_id":"planted-account"},"last_refresh":"` + time.Now().UTC().Format(time.RFC3339Nano) + `"}`,
		},
	}}
}

// nightRole names the Sleep role a model request serves, from the
// prompt's payload kind (the miner, reflector and judge) or the replay's
// opening; "" for a request of the agent's own.
func nightRole(body []byte) string {
	for _, k := range []string{nightly.KindJudge, nightly.KindMine, nightly.KindReflect} {
		if bytes.Contains(body, []byte(k)) {
			return k
		}
	}
	if bytes.Contains(body, []byte(nightly.PromptMarker+" attempt.")) {
		return "replay"
	}
	return ""
}

// judgedSession writes the researcher persona's sessions into the state
// dir (as sleep run does when there are none) and one more whose request
// has no checkable form, so that its mined task is graded by the rubric
// judge.
func judgedSession(t *testing.T, state string) {
	t.Helper()
	claudeHome := filepath.Join(state, "persona-researcher", "claude")
	project := filepath.Join(state, "persona-researcher", "project")
	if err := nightly.WritePersonaTranscripts(nightly.PersonaResearcher, claudeHome, project, time.Now()); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(claudeHome, "projects", strings.ReplaceAll(project, "/", "-"))
	texts := []string{"Summarise what the build script of this project does, in one sentence.", "It compiles the sources and runs the tests.",
		"shorter, and name the test runner", "It builds, then runs go test.", "thanks"}
	var b strings.Builder
	for i, line := range strings.Split(strings.TrimSpace(string(readFile(t, filepath.Join(dir, "persona-00.jsonl")))), "\n") {
		var r map[string]any
		if err := json.Unmarshal([]byte(line), &r); err != nil || i >= len(texts) {
			t.Fatalf("persona session line %d: %v", i, err)
		}
		r["sessionId"] = "persona-summary"
		msg := r["message"].(map[string]any)
		if r["type"] == "assistant" {
			msg["content"] = []map[string]string{{"type": "text", "text": texts[i]}}
		} else {
			msg["content"] = texts[i]
		}
		j, _ := json.Marshal(r)
		b.Write(j)
		b.WriteByte('\n')
	}
	writeTestFile(t, filepath.Join(dir, "persona-summary.jsonl"), b.String())
}

// TestSleepNightOnALoginAlone runs a Sleep night (the researcher
// persona) with no API key anywhere in its environment, once on Claude
// Code and once on Codex: the miner, reflector and judge are the real
// CLI in chat mode (--backend claude_chat, codex_chat) and the replays
// the real CLI with its tools (--target-backend claude_code_exec,
// codex_exec), each pointed at sim-llm through the CLI's own endpoint
// setting (Claude Code's ANTHROPIC_BASE_URL, Codex's model provider;
// from --base-url and --target-base-url) and signed with a copy of the
// user's login (--optimizer-option user_login=true,
// --target-user-login). Besides the persona's sessions, one asks for
// something with no checkable form, so the night's rubric judge grades
// its replays (an agent target grades in chat mode). Every request
// sim-llm served carried the login's access token as its bearer and no
// API key; the miner (no session mined by the heuristic instead), the
// reflector, the judge and the replays each made requests; the night
// stages a proposal; the login files are byte for byte as before.
//
// Minutes a CLI (about a hundred CLI calls): opt-in,
// SKILLFLEET_AGENT_E2E=1 and -timeout 40m.
func TestSleepNightOnALoginAlone(t *testing.T) {
	for _, ln := range loginNights() {
		t.Run(ln.agent, func(t *testing.T) {
			bin := realAgentBin(t, ln.agent)
			if os.Getenv("SKILLFLEET_AGENT_E2E") != "1" {
				t.Skip("a Sleep night of real agent CLI calls (mining, reflection, judging and replays): set SKILLFLEET_AGENT_E2E=1 and -timeout 40m")
			}
			t.Parallel()
			home, state := t.TempDir(), t.TempDir()
			tmp, err := os.MkdirTemp("", "sf-login-night-")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.RemoveAll(tmp) })
			if err := os.Chmod(tmp, 0o755); err != nil { // the sandbox's user enters it
				t.Fatal(err)
			}
			hashes := map[string]string{}
			for p, s := range ln.login {
				writeTestFile(t, filepath.Join(home, p), s)
				sum := sha256.Sum256([]byte(s))
				hashes[p] = hex.EncodeToString(sum[:8])
			}

			judgedSession(t, state)

			var mu sync.Mutex
			signed := map[string]int{}
			roles := map[string]int{}
			sim := simmodel.NewServer(simmodel.New(simmodel.Options{Epsilon: -1, HarmSpill: -1, LengthBudget: -1}), simmodel.ServerOptions{})
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.HasPrefix(r.URL.Path, ln.api) {
					body, _ := io.ReadAll(r.Body)
					r.Body = io.NopCloser(bytes.NewReader(body))
					mu.Lock()
					signed["bearer="+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")+" key="+r.Header.Get("X-Api-Key")]++
					roles[nightRole(body)]++
					mu.Unlock()
				}
				sim.ServeHTTP(w, r)
			}))
			t.Cleanup(srv.Close)

			start := time.Now()
			cmd := exec.Command(binary, "sleep", "run", "--persona", "researcher", "--state-dir", state,
				"--backend", ln.chat, "--model", "sim-target", "--base-url", srv.URL+"/v1", ln.pathFlag, bin,
				"--optimizer-option", "user_login=true",
				"--target-backend", ln.target, "--target-base-url", srv.URL+"/v1", "--target-user-login",
				"--workers", "1", "--concurrency", "4", "--max-tokens", "0")
			cmd.Env = []string{"HOME=" + home, "PATH=" + os.Getenv("PATH"), "TMPDIR=" + tmp}
			out, err := cmd.CombinedOutput()
			if err != nil || !strings.Contains(string(out), "staged:") {
				t.Fatalf("the night: %v\n%s", err, tailLines(string(out), 40))
			}
			if !strings.Contains(string(out), "("+ln.chat+"/sim-target)") {
				t.Errorf("the night's header does not name %s as its model:\n%s", ln.chat, out)
			}
			mu.Lock()
			defer mu.Unlock()
			calls := 0
			for k, n := range signed {
				calls += n
				if k != "bearer="+ln.access+" key=" {
					t.Errorf("%d requests signed %q: want the login's token alone", n, k)
				}
			}
			for _, role := range []string{nightly.KindMine, nightly.KindReflect, nightly.KindJudge, "replay"} {
				if roles[role] == 0 {
					t.Errorf("no %s request reached sim-llm (requests by role: %v)", role, roles)
				}
			}
			staged := strings.TrimSpace(strings.SplitN(strings.SplitN(string(out), "staged: ", 2)[1], "\n", 2)[0])
			var rep struct {
				MineDropped []string `json:"mine_dropped"`
			}
			if err := json.Unmarshal(readFile(t, filepath.Join(staged, "report.json")), &rep); err != nil {
				t.Fatal(err)
			}
			for _, d := range rep.MineDropped {
				if strings.Contains(d, "heuristic") {
					t.Errorf("a session was mined without the model: %s", d)
				}
			}
			var files []string
			for _, p := range slices.Sorted(maps.Keys(ln.login)) {
				b, err := os.ReadFile(filepath.Join(home, p))
				if err != nil || !bytes.Equal(b, []byte(ln.login[p])) {
					t.Errorf("the login file %s changed in the night (%v)", p, err)
				}
				after := sha256.Sum256(b)
				files = append(files, p+" "+hashes[p]+" → "+hex.EncodeToString(after[:8]))
			}
			t.Logf("%s: %d requests in %s, every one on the login (by role %v); login files before and after: %s; the night:\n%s",
				ln.agent, calls, time.Since(start).Round(time.Second), roles, strings.Join(files, ", "), tailLines(string(out), 15))
		})
	}
}
