package exec

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// The user's own login (option user_login=true): a built-in agent's
// calls run with a HOME of their own (the work directory), where the
// login the user made with `codex login` or Claude Code's /login is not.
// With the option, each call gets a copy of the login's files, and only
// those, in its HOME before the agent starts:
//
//   - Codex: auth.json from $CODEX_HOME (default ~/.codex) into the
//     call's CODEX_HOME;
//   - Claude Code: .credentials.json from $CLAUDE_CONFIG_DIR (default
//     ~/.claude) into the call's ~/.claude, and of ~/.claude.json only the
//     account keys (oauthAccount, userID) into the call's ~/.claude.json.
//
// The user's files are only read. The copies live in the work directory
// (in the sandbox, its tmpfs), are removed when the agent ends even with
// keep_workdir, and their string values are redacted from every error and
// reply the call returns. The home is the worker's $HOME, read through
// Config.Getenv.

// claudeAccountKeys are the keys of ~/.claude.json a call's copy keeps:
// the account the OAuth token belongs to, nothing of the user's projects.
var claudeAccountKeys = []string{"oauthAccount", "userID"}

// loginFile is one file of the user's login: where it is read and where
// the call's copy goes, relative to the work directory.
type loginFile struct {
	src, dst string
	// keys, when set, keeps only these top-level keys of a JSON object.
	keys []string
	// optional files may be missing.
	optional bool
}

// loginFiles lists the agent's login files. The first is the one that
// must exist.
func (c *Client) loginFiles() ([]loginFile, error) {
	home := c.cfg.Getenv("HOME")
	switch c.cfg.Agent {
	case AgentCodex:
		dir := c.cfg.Getenv("CODEX_HOME")
		if dir == "" {
			dir = filepath.Join(home, ".codex")
		}
		return []loginFile{{src: filepath.Join(dir, "auth.json"), dst: filepath.Join(".codex", "auth.json")}}, nil
	case AgentClaude:
		dir := c.cfg.Getenv("CLAUDE_CONFIG_DIR")
		if dir == "" {
			dir = filepath.Join(home, ".claude")
		}
		return []loginFile{
			{src: filepath.Join(dir, ".credentials.json"), dst: filepath.Join(".home", ".claude", ".credentials.json")},
			{src: filepath.Join(home, ".claude.json"), dst: filepath.Join(".home", ".claude.json"), keys: claudeAccountKeys, optional: true},
		}, nil
	case AgentPi:
		dir := c.cfg.Getenv("PI_CODING_AGENT_DIR")
		if dir == "" {
			dir = filepath.Join(home, ".pi", "agent")
		}
		return []loginFile{{src: filepath.Join(dir, "auth.json"), dst: filepath.Join(".pi", "agent", "auth.json")}}, nil
	case AgentOpencode:
		dir := c.cfg.Getenv("XDG_DATA_HOME")
		if dir == "" {
			dir = filepath.Join(home, ".local", "share")
		}
		return []loginFile{{src: filepath.Join(dir, "opencode", "auth.json"), dst: filepath.Join(".home", ".local", "share", "opencode", "auth.json")}}, nil
	case AgentCopilot, AgentCursor:
		// A token in the environment, nothing to copy (tokenLogin).
		return nil, nil
	}
	return nil, fmt.Errorf("option user_login: agent %q has no login skillfleet knows (want one of %s)", c.cfg.Agent, strings.Join(Agents(), ", "))
}

// copyLogin copies the user's login files into dir (see above) and
// returns the copies' paths and the values to redact. A missing login is
// a KindInvalidRequest error naming the file and the command that makes
// it; the file's content never goes into an error.
func (c *Client) copyLogin(dir string) (copies, secrets []string, err error) {
	if !c.cfg.UserLogin {
		return nil, nil, nil
	}
	files, err := c.loginFiles()
	if err != nil {
		return nil, nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: err.Error()}
	}
	if c.cfg.Getenv("HOME") == "" {
		return nil, nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: "option user_login: HOME is not set, so there is no login to use"}
	}
	if len(files) == 0 {
		return c.tokenLogin()
	}
	for _, f := range files {
		b, err := os.ReadFile(f.src)
		if errors.Is(err, fs.ErrNotExist) && f.optional {
			continue
		}
		if err != nil {
			how := map[string]string{AgentCodex: "codex login", AgentClaude: "claude, then /login", AgentPi: "pi, then /login", AgentOpencode: "opencode auth login"}[c.cfg.Agent]
			return copies, secrets, &llm.Error{Kind: llm.KindInvalidRequest, Msg: fmt.Sprintf("option user_login: the %s login %s cannot be read (%v): log in first (%s)", c.cfg.Agent, f.src, errors.Unwrap(err), how)}
		}
		var v any
		if json.Unmarshal(b, &v) != nil {
			return copies, secrets, &llm.Error{Kind: llm.KindInvalidRequest, Msg: fmt.Sprintf("option user_login: %s is not JSON (its content is not shown)", f.src)}
		}
		if len(f.keys) > 0 {
			obj, _ := v.(map[string]any)
			kept := map[string]any{}
			for _, k := range f.keys {
				if x, ok := obj[k]; ok {
					kept[k] = x
				}
			}
			v = kept
			if b, err = json.Marshal(kept); err != nil {
				return copies, secrets, &llm.Error{Kind: llm.KindServer, Msg: "option user_login: " + err.Error()}
			}
		}
		secrets = append(secrets, jsonStrings(v)...)
		if err := c.loginFresh(f.src, v); err != nil {
			return copies, secrets, err
		}
		p := filepath.Join(dir, f.dst)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			return copies, secrets, &llm.Error{Kind: llm.KindServer, Msg: "option user_login: " + err.Error()}
		}
		copies = append(copies, p)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			return copies, secrets, &llm.Error{Kind: llm.KindServer, Msg: "option user_login: " + err.Error()}
		}
	}
	return copies, secrets, nil
}

// jsonStrings returns the string values in v long enough to be a token
// or an identifier worth redacting.
func jsonStrings(v any) []string {
	var out []string
	switch x := v.(type) {
	case string:
		if len(x) >= 8 {
			out = append(out, x)
		}
	case map[string]any:
		for _, e := range x {
			out = append(out, jsonStrings(e)...)
		}
	case []any:
		for _, e := range x {
			out = append(out, jsonStrings(e)...)
		}
	}
	// Longest first: a value that holds another is replaced whole.
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// removeLogin deletes the call's login copies.
func removeLogin(copies []string) {
	for _, p := range copies {
		_ = os.Remove(p)
	}
}

// codexChatGPTEndpoint is where Codex sends a ChatGPT-login user's model
// calls (not the API's api.openai.com).
const codexChatGPTEndpoint = "https://chatgpt.com/backend-api/codex"

// codexChatGPTLogin reports whether the user's Codex login, with option
// user_login, is a ChatGPT sign-in (tokens, no API key) rather than a
// stored API key.
func (c *Client) codexChatGPTLogin() bool {
	if !c.cfg.UserLogin || c.cfg.Agent != AgentCodex {
		return false
	}
	files, err := c.loginFiles()
	if err != nil {
		return false
	}
	b, err := os.ReadFile(files[0].src)
	if err != nil {
		return false
	}
	var a struct {
		AuthMode string          `json:"auth_mode"`
		APIKey   *string         `json:"OPENAI_API_KEY"`
		Tokens   json.RawMessage `json:"tokens"`
	}
	if json.Unmarshal(b, &a) != nil {
		return false
	}
	if a.AuthMode != "" {
		return a.AuthMode == "chatgpt"
	}
	return (a.APIKey == nil || *a.APIKey == "") && len(a.Tokens) > 0 && string(a.Tokens) != "null"
}

// tokenVars are the variables a token login of the Copilot CLI and
// Cursor Agent is read from, in the CLI's own order of precedence.
var tokenVars = map[string][]string{
	AgentCopilot: {"COPILOT_GITHUB_TOKEN", "GH_TOKEN", "GITHUB_TOKEN"},
	AgentCursor:  {"CURSOR_API_KEY"},
}

// tokenLogin is the user's login of an agent signed in by a token in
// the environment (the Copilot CLI, Cursor Agent): the first of its
// token variables that is set goes to the agent's environment (not a
// file), redacted from everything the call returns. Such a token is not
// refreshed by use, so no call can rotate it. None set is an
// invalid_request naming the variables.
func (c *Client) tokenLogin() (copies, secrets []string, err error) {
	if kv := c.tokenEnv(); len(kv) > 0 {
		_, v, _ := strings.Cut(kv[0], "=")
		return nil, []string{v}, nil
	}
	return nil, nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: fmt.Sprintf("option user_login: agent %s signs in with a token: set %s", c.cfg.Agent, strings.Join(tokenVars[c.cfg.Agent], " or "))}
}

// tokenEnv is the environment entry of a token login (user_login with
// the Copilot CLI or Cursor Agent): the first token variable set.
func (c *Client) tokenEnv() []string {
	if !c.cfg.UserLogin {
		return nil
	}
	for _, k := range tokenVars[c.cfg.Agent] {
		if v := c.cfg.Getenv(k); v != "" {
			return []string{k + "=" + v}
		}
	}
	return nil
}

// loginSlack is how long before the end of a call a login's access
// token must still be valid.
const loginSlack = 2 * time.Minute

// loginFresh refuses a login whose OAuth access token expires before the
// call can end (its timeout plus loginSlack): the agent would refresh it
// in the call's copy, and a provider that rotates refresh tokens would
// then invalidate the refresh token of the user's own session, which
// only the copy (discarded when the call ends) would hold the successor
// of. It reads the expiry where the CLIs keep it: an "expiresAt" or
// "expires" number (milliseconds since the epoch: Claude Code, pi,
// opencode) or the "exp" claim of an access_token JWT (Codex). A login
// with no expiry it can read (an API key) passes.
func (c *Client) loginFresh(src string, v any) error {
	exp, ok := loginExpiry(v)
	if !ok {
		return nil
	}
	need := time.Now().Add(c.cfg.Timeout + loginSlack)
	if exp.After(need) {
		return nil
	}
	return &llm.Error{Kind: llm.KindInvalidRequest, Msg: fmt.Sprintf("option user_login: the %s login in %s has an access token that expires at %s, before this call could end: the agent would refresh it in its copy and could rotate the refresh token out from under your own session; run %s once yourself to refresh the login, then retry",
		c.cfg.Agent, src, exp.UTC().Format(time.RFC3339), c.cfg.Agent)}
}

// loginExpiry is the earliest access-token expiry in a login file.
func loginExpiry(v any) (time.Time, bool) {
	var earliest time.Time
	found := false
	note := func(t time.Time) {
		if !found || t.Before(earliest) {
			earliest, found = t, true
		}
	}
	var walk func(any)
	walk = func(v any) {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				switch k {
				case "expiresAt", "expires", "expires_at":
					if n, ok := e.(float64); ok && n > 1e12 { // milliseconds
						note(time.UnixMilli(int64(n)))
					}
				case "access_token", "accessToken", "access":
					if s, ok := e.(string); ok {
						if t, ok := jwtExpiry(s); ok {
							note(t)
						}
					}
				}
				walk(e)
			}
		case []any:
			for _, e := range x {
				walk(e)
			}
		}
	}
	walk(v)
	return earliest, found
}

// jwtExpiry reads the exp claim of a JWT, without checking its signature.
func jwtExpiry(tok string) (time.Time, bool) {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return time.Time{}, false
	}
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return time.Time{}, false
	}
	var claims struct {
		Exp float64 `json:"exp"`
	}
	if json.Unmarshal(b, &claims) != nil || claims.Exp == 0 {
		return time.Time{}, false
	}
	return time.Unix(int64(claims.Exp), 0), true
}
