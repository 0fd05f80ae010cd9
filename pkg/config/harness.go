package config

import (
	"fmt"
	"strconv"
	"strings"
)

// SkillOpt's agent-harness keys (model.codex_exec_*, claude_code_exec_*,
// cursor_exec_*, copilot_*) are honoured by turning them into the exec
// backend's options of the role whose family they belong to, or refused
// at load with the key named when skillfleet has nothing that does what
// they ask. A role's own <role>_options win over a key.
//
// The families an agent CLI serves (backends/families.go has the same
// table): the harness families run the agent with its tools on a task
// (targets); the chat families run it in chat mode (no tools, the
// conversation as one prompt) on the user's own CLI login, which any
// role may use. codex_exec may also be the optimizer (SkillOpt's
// --backend codex): that role then runs Codex in chat mode.
var (
	harnessAgents = map[string]string{
		"codex_exec": "codex", "claude_code_exec": "claude", "cursor_exec": "cursor",
		"copilot_exec": "copilot", "pi_exec": "pi", "opencode_exec": "opencode",
	}
	chatAgents = map[string]string{
		"claude_chat": "claude", "copilot_chat": "copilot", "codex_chat": "codex",
		"pi_chat": "pi", "opencode_chat": "opencode",
	}
)

// checkHarness refuses the harness keys skillfleet cannot honour, and
// values no agent takes, naming the key.
func (c *Config) checkHarness() error {
	m := &c.Model
	refuse := func(key, why string) error { return c.fieldErr("model."+key, "%s", why) }
	if m.CodexExecProfile != "" {
		return refuse("codex_exec_profile", "not supported: a Codex profile lives in your ~/.codex/config.toml, which skillfleet never reads (each call has a CODEX_HOME of its own); set the profile's settings with the codex_exec_* keys or target_options")
	}
	if m.CodexExecUseSDK != nil && *m.CodexExecUseSDK {
		return refuse("codex_exec_use_sdk", "not supported: skillfleet runs the codex CLI itself (codex exec --json), in its sandbox; leave the key out or false")
	}
	switch m.CodexExecApprovalPolicy {
	case "", "never":
	default:
		return refuse("codex_exec_approval_policy", fmt.Sprintf("%q is not supported: a codex exec call has nobody to approve a command, so the policy is always never", m.CodexExecApprovalPolicy))
	}
	switch m.CodexExecSandbox {
	case "", "read-only", "workspace-write", "danger-full-access":
	default:
		return refuse("codex_exec_sandbox", fmt.Sprintf("invalid value %q (want read-only, workspace-write or danger-full-access)", m.CodexExecSandbox))
	}
	switch m.CodexExecReasoningEffort {
	case "", "minimal", "low", "medium", "high", "xhigh":
	default:
		return refuse("codex_exec_reasoning_effort", fmt.Sprintf("invalid value %q (want minimal, low, medium, high or xhigh)", m.CodexExecReasoningEffort))
	}
	switch strings.ToLower(m.CodexExecWebSearch) {
	case "", "true", "false", "live", "cached", "disabled":
	default:
		return refuse("codex_exec_web_search", fmt.Sprintf("invalid value %q (want true, false, live, cached or disabled)", m.CodexExecWebSearch))
	}
	if m.ClaudeCodeExecProfile != "" {
		return refuse("claude_code_exec_profile", "not supported: skillfleet runs Claude Code with project settings only (its own per call), never a profile of yours")
	}
	switch strings.ToLower(m.ClaudeCodeExecUseSDK) {
	case "", "auto", "cli", "false":
	default:
		return refuse("claude_code_exec_use_sdk", fmt.Sprintf("%q is not supported: skillfleet runs the claude CLI itself (claude -p), in its sandbox; use auto or cli", m.ClaudeCodeExecUseSDK))
	}
	switch m.ClaudeCodeExecEffort {
	case "", "low", "medium", "high", "xhigh", "max":
	default:
		return refuse("claude_code_exec_effort", fmt.Sprintf("invalid value %q (want low, medium, high, xhigh or max)", m.ClaudeCodeExecEffort))
	}
	if m.ClaudeCodeExecMaxThinkingTokens < 0 {
		return refuse("claude_code_exec_max_thinking_tokens", "must not be negative")
	}
	switch m.CursorExecSandbox {
	case "", "enabled", "disabled":
	default:
		return refuse("cursor_exec_sandbox", fmt.Sprintf("invalid value %q (want enabled or disabled)", m.CursorExecSandbox))
	}
	if m.CopilotExecHome != "" {
		return refuse("copilot_exec_home", "not supported: each call gets a COPILOT_HOME of its own inside its work directory; sign the CLI in with a token variable (COPILOT_GITHUB_TOKEN) listed in the role's options env, or point <role>_base_url at a provider")
	}
	if m.CopilotChatTimeout < 0 {
		return refuse("copilot_chat_timeout", "must not be negative")
	}
	for _, role := range []string{RoleOptimizer, RoleTarget} {
		f := m.OptimizerBackend
		if role == RoleTarget {
			f = m.TargetBackend
		}
		if _, ok := harnessAgents[f]; ok && role == RoleOptimizer && f != "codex_exec" {
			continue // backends.CheckConfig refuses it, naming the role
		}
		c.applyHarness(role, f)
	}
	return nil
}

// applyHarness puts the harness keys of family into the role's options
// (a key the options already hold stays as it is).
func (c *Config) applyHarness(role, family string) {
	m := &c.Model
	agent, harness := harnessAgents[family]
	chatAgent, chat := chatAgents[family]
	if !harness && !chat {
		return
	}
	opts := &m.TargetOptions
	if role == RoleOptimizer {
		opts = &m.OptimizerOptions
	}
	if *opts == nil {
		*opts = map[string]any{}
	}
	set := func(k string, v any) {
		if _, ok := (*opts)[k]; !ok && v != "" {
			(*opts)[k] = v
		}
	}
	if chat {
		agent = chatAgent
	}
	set("agent", agent)
	if chat || role == RoleOptimizer {
		set("mode", "chat")
		// A chat role on an agent CLI runs on the user's own login unless
		// it points at a provider.
		base := m.OptimizerBaseURL
		if role == RoleTarget {
			base = m.TargetBaseURL
		}
		if base == "" {
			set("user_login", "true")
		}
	}
	if role == RoleTarget && harness {
		// SkillOpt's codex_trace_to_optimizer (default true): the
		// target's reply leads with a summary of what the agent did,
		// which the analysts read apart from the conversation.
		set("trace_summary", strconv.FormatBool(m.CodexTraceToOptimizer))
	}
	isSet := func(k string) bool { return c.IsSet("model." + k) }
	switch agent {
	case "codex":
		set("bin", m.CodexExecPath)
		set("codex_sandbox", m.CodexExecSandbox)
		set("reasoning_effort", m.CodexExecReasoningEffort)
		if m.CodexExecNetworkAccess != nil {
			set("network_access", strconv.FormatBool(*m.CodexExecNetworkAccess))
		}
		set("web_search", m.CodexExecWebSearch)
	case "claude":
		if isSet("claude_code_exec_path") {
			set("bin", m.ClaudeCodeExecPath)
		}
		if isSet("claude_code_exec_effort") {
			set("reasoning_effort", m.ClaudeCodeExecEffort)
		}
		if isSet("claude_code_exec_max_thinking_tokens") {
			set("max_thinking_tokens", strconv.Itoa(m.ClaudeCodeExecMaxThinkingTokens))
		}
	case "cursor":
		set("bin", m.CursorExecPath)
		set("cursor_sandbox", m.CursorExecSandbox)
	case "copilot":
		set("bin", m.CopilotExecPath)
		if m.CopilotExecAllowAllTools != nil && !chat {
			set("allow_all_tools", strconv.FormatBool(*m.CopilotExecAllowAllTools))
		}
		if chat && m.CopilotChatTimeout > 0 {
			set("timeout", m.CopilotChatTimeout.String())
		}
		if chat && role == RoleOptimizer && m.CopilotChatOptimizerModel != "" {
			m.Optimizer = m.CopilotChatOptimizerModel
		}
		if chat && role == RoleTarget && m.CopilotChatTargetModel != "" {
			m.Target = m.CopilotChatTargetModel
		}
	}
}
