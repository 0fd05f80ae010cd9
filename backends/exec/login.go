package exec

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

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
	}
	return nil, fmt.Errorf("option user_login: agent %q has no login skillfleet knows (want %s or %s)", c.cfg.Agent, AgentCodex, AgentClaude)
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
	for _, f := range files {
		b, err := os.ReadFile(f.src)
		if errors.Is(err, fs.ErrNotExist) && f.optional {
			continue
		}
		if err != nil {
			how := map[string]string{AgentCodex: "codex login", AgentClaude: "claude, then /login"}[c.cfg.Agent]
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
