package config

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestHarnessKeysRefusedNamingTheKey: a SkillOpt harness key skillfleet
// cannot honour, or a value no agent takes, fails the load with the key
// named.
func TestHarnessKeysRefusedNamingTheKey(t *testing.T) {
	t.Parallel()
	for key, yaml := range map[string]string{
		"model.codex_exec_profile":                   "  codex_exec_profile: fast\n",
		"model.codex_exec_use_sdk":                   "  codex_exec_use_sdk: true\n",
		"model.codex_exec_approval_policy":           "  codex_exec_approval_policy: on-request\n",
		"model.codex_exec_sandbox":                   "  codex_exec_sandbox: jail\n",
		"model.codex_exec_reasoning_effort":          "  codex_exec_reasoning_effort: ultra\n",
		"model.codex_exec_web_search":                "  codex_exec_web_search: sometimes\n",
		"model.claude_code_exec_profile":             "  claude_code_exec_profile: work\n",
		"model.claude_code_exec_use_sdk":             "  claude_code_exec_use_sdk: sdk\n",
		"model.claude_code_exec_effort":              "  claude_code_exec_effort: extreme\n",
		"model.claude_code_exec_max_thinking_tokens": "  claude_code_exec_max_thinking_tokens: -1\n",
		"model.cursor_exec_sandbox":                  "  cursor_exec_sandbox: off\n",
		"model.copilot_exec_home":                    "  copilot_exec_home: /home/me/.copilot\n",
	} {
		t.Run(key, func(t *testing.T) {
			t.Parallel()
			dir := setup(t, map[string]string{"run.yaml": minimal + "model:\n  backend: codex\n" + yaml})
			_, err := Load(filepath.Join(dir, "run.yaml"), nil)
			var fe *FieldError
			if !errors.As(err, &fe) || fe.Field != key {
				t.Fatalf("Load = %v, want a field error naming %s", err, key)
			}
		})
	}
}

// TestHarnessKeysHonoured: the harness keys become the role's exec
// options (a role's own option wins); a chat family or an agent CLI as
// the optimizer runs in chat mode on the user's login unless it points
// at a provider; the target's trace summary follows
// codex_trace_to_optimizer.
func TestHarnessKeysHonoured(t *testing.T) {
	t.Parallel()
	dir := setup(t, map[string]string{
		"codex.yaml": minimal + "model:\n  backend: codex\n  codex_exec_path: /opt/codex\n  codex_exec_sandbox: read-only\n" +
			"  codex_exec_reasoning_effort: high\n  codex_exec_network_access: true\n  codex_exec_web_search: cached\n" +
			"  codex_exec_approval_policy: never\n  target_options:\n    codex_sandbox: workspace-write\n",
		"claude.yaml": minimal + "model:\n  backend: claude\n  target_backend: claude_code_exec\n  claude_code_exec_effort: high\n" +
			"  claude_code_exec_max_thinking_tokens: 4096\n  codex_trace_to_optimizer: false\n",
		"copilot.yaml": minimal + "model:\n  backend: copilot\n  copilot_exec_path: /opt/copilot\n  copilot_chat_optimizer_model: gpt-5-mini\n" +
			"  copilot_chat_timeout: 7m\n  optimizer_base_url: http://127.0.0.1:8089/v1\n",
		"cursor.yaml": minimal + "model:\n  backend: cursor\n  cursor_exec_path: /opt/cursor-agent\n  cursor_exec_sandbox: disabled\n",
		"pi.yaml":     minimal + "model:\n  optimizer_backend: pi_chat\n  target_backend: opencode_exec\n",
	})
	opt := func(c *Config, role, k string) string {
		v, _ := c.Model.Role(role).Options[k].(string)
		return v
	}
	type want map[string]string
	for file, roles := range map[string]map[string]want{
		"codex.yaml": {
			RoleOptimizer: {"agent": "codex", "mode": "chat", "user_login": "true", "bin": "/opt/codex", "reasoning_effort": "high"},
			RoleTarget: {"agent": "codex", "mode": "", "bin": "/opt/codex", "codex_sandbox": "workspace-write", "reasoning_effort": "high",
				"network_access": "true", "web_search": "cached", "trace_summary": "true"},
		},
		"claude.yaml": {
			RoleOptimizer: {"agent": "claude", "mode": "chat", "user_login": "true", "reasoning_effort": "high", "max_thinking_tokens": "4096"},
			RoleTarget:    {"agent": "claude", "mode": "", "user_login": "", "max_thinking_tokens": "4096", "trace_summary": "false"},
		},
		"copilot.yaml": {
			RoleOptimizer: {"agent": "copilot", "mode": "chat", "user_login": "", "bin": "/opt/copilot", "timeout": "7m0s"},
			RoleTarget:    {"agent": "copilot", "mode": "chat", "user_login": "true", "timeout": "7m0s"},
		},
		"cursor.yaml": {
			RoleOptimizer: {"agent": "", "mode": ""},
			RoleTarget:    {"agent": "cursor", "bin": "/opt/cursor-agent", "cursor_sandbox": "disabled", "trace_summary": "true"},
		},
		"pi.yaml": {
			RoleOptimizer: {"agent": "pi", "mode": "chat", "user_login": "true"},
			RoleTarget:    {"agent": "opencode", "mode": "", "trace_summary": "true"},
		},
	} {
		c := mustLoad(t, filepath.Join(dir, file))
		for role, w := range roles {
			for k, v := range w {
				if got := opt(c, role, k); got != v {
					t.Errorf("%s: %s option %s = %q, want %q", file, role, k, got, v)
				}
			}
		}
		if file == "copilot.yaml" && c.Model.Optimizer != "gpt-5-mini" {
			t.Errorf("copilot_chat_optimizer_model: optimizer model %q", c.Model.Optimizer)
		}
		if file == "codex.yaml" && !strings.HasPrefix(c.Model.TargetBackend, "codex") {
			t.Errorf("target backend %q", c.Model.TargetBackend)
		}
	}
}
