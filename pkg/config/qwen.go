package config

import (
	"cmp"
	"maps"
	"strconv"
	"time"
)

// SkillOpt's qwen_chat defaults.
const (
	// QwenDefaultURL is the server a qwen_chat role calls when no key
	// names one (a local vLLM or SGLang server).
	QwenDefaultURL = "http://localhost:8000/v1"
	// QwenKeyEnv is the variable a qwen_chat role reads its key from
	// unless model.<role>_api_key_env names another (local servers need
	// none).
	QwenKeyEnv = "QWEN_CHAT_API_KEY"
)

// QwenFor returns the qwen_chat_* settings of a role: each optimizer_ or
// target_ prefixed key that is set wins over the shared one.
func (m *Model) QwenFor(role string) Qwen {
	q, o := m.Qwen, m.OptimizerQwen
	if role == RoleTarget {
		o = m.TargetQwen
	}
	q.BaseURL = cmp.Or(o.BaseURL, q.BaseURL)
	if !o.APIKey.IsZero() {
		q.APIKey = o.APIKey
	}
	q.Temperature = cmp.Or(o.Temperature, q.Temperature)
	q.TimeoutSeconds = cmp.Or(o.TimeoutSeconds, q.TimeoutSeconds)
	q.MaxTokens = cmp.Or(o.MaxTokens, q.MaxTokens)
	q.EnableThinking = cmp.Or(o.EnableThinking, q.EnableThinking)
	q.ThinkingMode = cmp.Or(o.ThinkingMode, q.ThinkingMode)
	return q
}

// QwenThinkingMode is the role's thinking mode as SkillOpt resolves it:
// qwen_chat_thinking_mode, else the legacy qwen_chat_enable_thinking (true
// is enabled; false leaves it to the server, as SkillOpt's legacy key
// does), else server_default.
func (q Qwen) QwenThinkingMode() string {
	switch {
	case q.ThinkingMode != "":
		return q.ThinkingMode
	case q.EnableThinking != nil && *q.EnableThinking:
		return "enabled"
	}
	return "server_default"
}

// applyQwen fills a qwen_chat role from SkillOpt's qwen_chat_* keys, as
// the OpenAI-compatible client serves it. skillfleet's own <role>_* keys
// and the role's options win; then the role's prefixed qwen key, then the
// shared one:
//
//   - qwen_chat_base_url is the server (default QwenDefaultURL);
//   - qwen_chat_api_key is read like the other keys written in a file
//     (a warning; the variable QWEN_CHAT_API_KEY is what workers read);
//   - qwen_chat_temperature is the sampling temperature;
//   - qwen_chat_timeout_seconds bounds each call (instead of model.timeout);
//   - qwen_chat_max_tokens caps every reply (option max_tokens_cap: a
//     larger request is lowered to it, as SkillOpt does);
//   - qwen_chat_thinking_mode (or the legacy qwen_chat_enable_thinking)
//     sends chat_template_kwargs.enable_thinking (option thinking_mode);
//     server_default sends nothing.
func (m *Model) applyQwen(r *Role) {
	q := m.QwenFor(r.Name)
	if r.BaseURL == "" {
		r.BaseURL = cmp.Or(q.BaseURL, QwenDefaultURL)
	}
	if r.APIKeyEnv == "" {
		r.APIKeyEnv = QwenKeyEnv
	}
	if r.APIKey.IsZero() {
		r.APIKey = q.APIKey
	}
	if r.Temperature == nil && q.Temperature != nil {
		t := *q.Temperature
		r.Temperature = &t
	}
	if q.TimeoutSeconds != nil && *q.TimeoutSeconds > 0 {
		r.Timeout = time.Duration(*q.TimeoutSeconds * float64(time.Second))
	}
	opts := maps.Clone(r.Options)
	if opts == nil {
		opts = map[string]any{}
	}
	set := func(k string, v any) {
		if _, ok := opts[k]; !ok {
			opts[k] = v
		}
	}
	if q.MaxTokens != nil && *q.MaxTokens > 0 {
		set("max_tokens_cap", strconv.Itoa(*q.MaxTokens))
	}
	if mode := q.QwenThinkingMode(); mode != "server_default" {
		set("thinking_mode", mode)
	}
	if len(opts) > 0 {
		r.Options = opts
	}
}
