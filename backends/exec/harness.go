package exec

import (
	"encoding/json"
	"fmt"
	"os"
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
//   - reasoning_effort: Codex `-c model_reasoning_effort=`, Copilot
//     `--reasoning-effort`, pi `--thinking`, opencode `--variant`,
//     Claude Code MAX_THINKING_TOKENS is max_thinking_tokens;
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
		"reasoning_effort":    {AgentCodex, AgentCopilot, AgentPi, AgentOpencode},
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
