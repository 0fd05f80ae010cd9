package exec

import (
	"encoding/json"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// Modes (option mode).
const (
	// ModeAgent runs the task with the agent's tools, the skill installed
	// where the agent looks for skills (the default).
	ModeAgent = "agent"
	// ModeChat serves a chat role (an optimizer, Sleep's miner, reflector
	// or judge) with the agent CLI: the whole conversation is one prompt,
	// the agent has no tools, no skill, no MCP server and no session, and
	// its reply is the answer. With option user_login the call runs on
	// the user's own CLI login, so the role needs no API key.
	ModeChat = "chat"
)

// PlaceholderHarness is replaced by the harness arguments the options
// ask for (reasoning effort, sandbox mode, ...; see harnessArgs): zero or
// more arguments.
const PlaceholderHarness = "{harness_args}"

// chatRequestOK refuses what a chat-mode CLI cannot do: tools the caller
// offers (the CLI's tool calls are its own, never handed back) and image
// parts.
func chatRequestOK(req *llm.Request) error {
	if len(req.Tools) > 0 {
		return &llm.Error{Kind: llm.KindInvalidRequest, Msg: "exec backend in chat mode: the request offers tools, which an agent CLI's chat mode cannot hand back; use an API backend for this role"}
	}
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			if p.Type == "image" {
				return &llm.Error{Kind: llm.KindInvalidRequest, Msg: "exec backend in chat mode: image parts are not supported"}
			}
		}
	}
	return nil
}

// chatPrompt is a chat request as one prompt: the system text first, then
// the messages, each after a "---" line; a message of a role other than
// user is headed by its role in brackets.
func chatPrompt(req *llm.Request) string {
	var parts []string
	for _, m := range req.Messages {
		t := strings.TrimSpace(m.Text())
		if t == "" {
			continue
		}
		if m.Role != llm.RoleUser {
			t = "[" + m.Role + "]\n" + t
		}
		parts = append(parts, t)
	}
	return strings.Join(parts, "\n\n---\n\n")
}

// harnessOptions reads the per-agent harness options into cfg.Extra
// (arguments for {harness_args}) and cfg.ExtraEnv, refusing an option the
// agent does not have and a value it does not take. They are SkillOpt's
// harness keys as options (pkg/config maps the keys onto them):
//
//   - reasoning_effort: Codex `-c model_reasoning_effort=`, Claude Code
//     `--effort`, Copilot
//     `--reasoning-effort`, pi `--thinking`, opencode `--variant`;
//   - codex_sandbox (read-only, workspace-write, danger-full-access),
//     network_access (true: Codex's workspace-write sandbox lets commands
//     reach the network), web_search (live, cached, disabled);
//   - cursor_sandbox (enabled, disabled);
//   - allow_all_tools (Copilot: --allow-all-tools; its tools then run
//     unattended inside skillfleet's sandbox);
//   - max_thinking_tokens (Claude Code).
func harnessOptions(opts map[string]string, c *Config) []string {
	var errs []string
	agentHas := map[string][]string{
		"reasoning_effort":    {AgentCodex, AgentClaude, AgentCopilot, AgentPi, AgentOpencode},
		"codex_sandbox":       {AgentCodex},
		"network_access":      {AgentCodex},
		"web_search":          {AgentCodex},
		"cursor_sandbox":      {AgentCursor},
		"allow_all_tools":     {AgentCopilot},
		"max_thinking_tokens": {AgentClaude},
	}
	keys := make([]string, 0, len(agentHas))
	for k := range agentHas {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	oneOf := func(k, v string, want ...string) bool {
		if slices.Contains(want, v) {
			return true
		}
		errs = append(errs, fmt.Sprintf("option %s=%q: want one of %s", k, v, strings.Join(want, ", ")))
		return false
	}
	for _, k := range keys {
		v := strings.TrimSpace(opts[k])
		if v == "" {
			continue
		}
		if !slices.Contains(agentHas[k], c.Agent) {
			errs = append(errs, fmt.Sprintf("option %s: agent %q has no such setting (it applies to %s)", k, c.Agent, strings.Join(agentHas[k], ", ")))
			continue
		}
		switch k {
		case "reasoning_effort":
			switch c.Agent {
			case AgentCodex:
				if oneOf(k, v, "minimal", "low", "medium", "high", "xhigh") {
					c.Extra = append(c.Extra, "-c", "model_reasoning_effort="+strconv.Quote(v))
				}
			case AgentClaude:
				if oneOf(k, v, "low", "medium", "high", "xhigh", "max") {
					c.Extra = append(c.Extra, "--effort", v)
				}
			case AgentCopilot:
				if oneOf(k, v, "none", "minimal", "low", "medium", "high", "xhigh", "max") {
					c.Extra = append(c.Extra, "--reasoning-effort", v)
				}
			case AgentPi:
				if oneOf(k, v, "off", "minimal", "low", "medium", "high", "xhigh") {
					c.Extra = append(c.Extra, "--thinking", v)
				}
			case AgentOpencode:
				c.Extra = append(c.Extra, "--variant", v)
			}
		case "codex_sandbox":
			if oneOf(k, v, "read-only", "workspace-write", "danger-full-access") {
				c.CodexSandbox = v
			}
		case "network_access":
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fmt.Sprintf("option %s=%q: want true or false", k, v))
				continue
			}
			c.Extra = append(c.Extra, "-c", "sandbox_workspace_write.network_access="+strconv.FormatBool(b))
		case "web_search":
			switch strings.ToLower(v) {
			case "true", "live":
				v = "live"
			case "false", "disabled":
				v = "disabled"
			}
			if oneOf(k, v, "live", "cached", "disabled") {
				c.Extra = append(c.Extra, "-c", "web_search="+strconv.Quote(v))
			}
		case "cursor_sandbox":
			if oneOf(k, v, "enabled", "disabled") {
				c.CursorSandbox = v
			}
		case "allow_all_tools":
			b, err := strconv.ParseBool(v)
			if err != nil {
				errs = append(errs, fmt.Sprintf("option %s=%q: want true or false", k, v))
				continue
			}
			c.AllowAllTools = b
		case "max_thinking_tokens":
			n, err := strconv.Atoi(v)
			if err != nil || n < 0 {
				errs = append(errs, fmt.Sprintf("option %s=%q: want a number of tokens", k, v))
				continue
			}
			c.ExtraEnv = append(c.ExtraEnv, "MAX_THINKING_TOKENS="+strconv.Itoa(n))
		}
	}
	return errs
}

// writeJSON writes v as a JSON file, making its directory.
func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// Per-agent settings of the agents added beside Codex and Claude Code.
const (
	// copilotUsageFile is where the Copilot CLI writes its usage
	// (--usage-output-file), in the work directory: its JSON output
	// carries no token counts.
	copilotUsageFile = ".copilot-usage.json"
	// piProvider and opencodeProvider name the provider entry written
	// for Config.BaseURL; the model the CLI is given is then
	// "<provider>/<model>".
	piProvider       = "skillfleet"
	opencodeProvider = "skillfleet"
)

// modelArg is the model as the agent's --model takes it: pi and opencode
// name a model of the provider skillfleet wrote as provider/model.
func (c *Client) modelArg(model string) string {
	if model == "" || c.cfg.BaseURL == "" {
		return model
	}
	switch c.cfg.Agent {
	case AgentPi:
		return piProvider + "/" + model
	case AgentOpencode:
		return opencodeProvider + "/" + model
	}
	return model
}

// keyRef is how a provider setting names the key: the variable's name
// for a CLI that resolves it itself (pi, opencode), else noKey for a
// server that needs none.
func (c *Client) keyValue() string {
	if k := c.cfg.APIKeyEnv; k != "" {
		if v := c.cfg.Getenv(k); v != "" {
			return v
		}
	}
	return noKey
}

// wireAgent is wireProvider for Cursor, Copilot, pi and opencode: each
// gets a HOME (and config directories) of its own inside the work
// directory, its update checks and telemetry off, and, with
// Config.BaseURL, a provider for that endpoint — the key only ever in
// the environment, never in a file:
//
//   - Copilot: COPILOT_HOME, and its BYOK settings
//     (COPILOT_PROVIDER_BASE_URL, _WIRE_API=responses, _API_KEY,
//     COPILOT_OFFLINE=true: no GitHub sign-in, no GitHub service);
//   - pi: PI_CODING_AGENT_DIR holding a models.json whose provider
//     (OpenAI Responses API at BaseURL) names the key's variable, which pi
//     reads from its environment;
//   - opencode: XDG directories, and OPENCODE_CONFIG_CONTENT with the
//     provider (@ai-sdk/openai at BaseURL, the key as {env:VAR}), the
//     permissions of its tools (shell and reads allowed, edits, web
//     fetches and other directories denied; in chat mode every tool off),
//     and npm offline, so that it installs no plugin package per call;
//   - Cursor: its HOME; it has no setting for another endpoint, so
//     BaseURL is refused (its model is Cursor's service, signed in with
//     CURSOR_API_KEY listed in option env).
func (c *Client) wireAgent(dir, model string) (env []string, err error) {
	home := filepath.Join(dir, ".home")
	if err := os.MkdirAll(home, 0o700); err != nil {
		return nil, err
	}
	env = append(env, "HOME="+home, "NO_COLOR=1")
	keyEnv := c.cfg.APIKeyEnv
	switch c.cfg.Agent {
	case AgentCursor:
		if c.cfg.BaseURL != "" {
			return nil, fmt.Errorf("agent cursor has no setting for another model endpoint (base_url %s): it runs on Cursor's service", c.cfg.BaseURL)
		}
	case AgentCopilot:
		env = append(env, "COPILOT_HOME="+filepath.Join(dir, ".copilot"), "COPILOT_AUTO_UPDATE=false")
		if !c.sandboxed() {
			if pkg := c.copilotPkgCache(); pkg != "" {
				env = append(env, "COPILOT_PKG_CACHE_HOME="+pkg)
			}
		}
		if c.cfg.BaseURL != "" {
			env = append(env, "COPILOT_OFFLINE=true", "COPILOT_PROVIDER_BASE_URL="+c.cfg.BaseURL,
				"COPILOT_PROVIDER_WIRE_API=responses", "COPILOT_PROVIDER_API_KEY="+c.keyValue())
			if model != "" {
				env = append(env, "COPILOT_MODEL="+model)
			}
		}
	case AgentPi:
		agentDir := filepath.Join(dir, ".pi", "agent")
		env = append(env, "PI_CODING_AGENT_DIR="+agentDir, "PI_OFFLINE=1", "PI_TELEMETRY=0", "PI_SKIP_VERSION_CHECK=1")
		if c.cfg.BaseURL != "" {
			key := noKey
			if keyEnv != "" {
				key = keyEnv // pi reads a value naming a variable from the environment
			}
			models := []map[string]any{}
			if model != "" {
				models = append(models, map[string]any{"id": model})
			}
			err := writeJSON(filepath.Join(agentDir, "models.json"), map[string]any{"providers": map[string]any{
				piProvider: map[string]any{"baseUrl": c.cfg.BaseURL, "api": "openai-responses", "apiKey": key, "models": models},
			}})
			if err != nil {
				return nil, err
			}
		}
	case AgentOpencode:
		env = append(env, "XDG_CONFIG_HOME="+filepath.Join(home, ".config"), "XDG_DATA_HOME="+filepath.Join(home, ".local", "share"),
			"XDG_CACHE_HOME="+filepath.Join(home, ".cache"), "XDG_STATE_HOME="+filepath.Join(home, ".local", "state"),
			"OPENCODE_DISABLE_AUTOUPDATE=1", "OPENCODE_DISABLE_MODELS_FETCH=1", "OPENCODE_DISABLE_LSP_DOWNLOAD=1",
			"OPENCODE_DISABLE_SHARE=1", "OPENCODE_DISABLE_EXTERNAL_SKILLS=1", "OPENCODE_DISABLE_TERMINAL_TITLE=1",
			// At start opencode installs its plugin package from the npm
			// registry into each config directory (the HOME's and the
			// project's .opencode), with npm running inside its own
			// process, on the same thread as the call: in a fresh HOME
			// that is every call, and on a busy machine it holds back the
			// first model request. No plugin is loaded (--pure), so npm is
			// told to stay offline and the install fails at once.
			"npm_config_offline=true")
		cfg := map[string]any{"autoupdate": false, "share": "disabled"}
		if c.chat {
			tools := map[string]bool{}
			for _, t := range []string{"bash", "edit", "write", "read", "grep", "glob", "list", "patch", "todowrite", "todoread", "webfetch", "websearch", "task", "skill"} {
				tools[t] = false
			}
			cfg["tools"] = tools
		} else {
			cfg["permission"] = map[string]any{"bash": "allow", "read": "allow", "edit": "deny", "webfetch": "deny", "external_directory": "deny"}
		}
		if c.cfg.BaseURL != "" {
			key := noKey
			if keyEnv != "" {
				key = "{env:" + keyEnv + "}"
			}
			models := map[string]any{}
			if model != "" {
				models[model] = map[string]any{"name": model}
				cfg["model"] = opencodeProvider + "/" + model
			}
			cfg["provider"] = map[string]any{opencodeProvider: map[string]any{
				"npm": "@ai-sdk/openai", "name": opencodeProvider, "models": models,
				"options": map[string]any{"baseURL": c.cfg.BaseURL, "apiKey": key},
			}}
		}
		b, err := json.Marshal(cfg)
		if err != nil {
			return nil, err
		}
		env = append(env, "OPENCODE_CONFIG_CONTENT="+string(b))
		// opencode's skill tool lists a skill's files with ripgrep, which
		// it would otherwise download: a copy where it looks for its own.
		if rg := c.ripgrep(); rg != "" && !c.chat {
			if err := copyFile(rg, filepath.Join(home, ".local", "share", "opencode", "bin", "rg"), 0o755); err != nil {
				return nil, err
			}
		}
	}
	return env, nil
}

// ripgrep finds an rg binary for opencode (once per client): rg on PATH,
// else one the other agents' packages ship in the agent's install tree
// (Codex's vendored rg).
func (c *Client) ripgrep() string {
	c.rgOnce.Do(func() {
		if p, err := osexec.LookPath("rg"); err == nil {
			c.rgPath = p
			return
		}
		if len(c.argv) == 0 {
			return
		}
		prog := c.argv[0]
		if i := strings.LastIndex(prog, "/node_modules/"); i > 0 {
			m, _ := filepath.Glob(filepath.Join(prog[:i], "node_modules", "@openai", "codex-*", "vendor", "*", "codex-path", "rg"))
			if len(m) > 0 {
				c.rgPath = m[0]
			}
		}
	})
	return c.rgPath
}

// copyFile copies a regular file, making dst's directory.
func copyFile(src, dst string, mode os.FileMode) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, mode)
}
