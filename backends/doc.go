// Package backends builds llm.Model implementations from a model spec and
// wraps them with the resilience every call needs.
//
// # What it owns
//
// [New] turns a [Spec] (the Go mirror of proto ModelSpec) into a model:
// backend "openai" (also "openai_compatible": OpenAI or any compatible
// server), "azure" (Azure OpenAI), "anthropic" (the Messages API), "exec"
// (a CLI agent such as Codex or Claude Code), "sim" (the simulated model,
// a test double), "handoff" (no model: each call is a prompt file someone
// answers, backends/handoff; option dir), or one registered in [Deps].Extra (tests). Which client
// families a config may name, and the backend serving each, is one table
// in families.go ([Families], [CheckConfig]): a new backend is its package
// plus one row. The result is the backend wrapped by [Wrap]:
//
//	request defaults (from the spec) → [Retry] → [Circuit] → [Limited] → backend
//
// Retry is outermost so each attempt passes the circuit and the limiter
// again; the circuit sits outside the limiter so a fast failure costs no
// rate budget; the limiter is innermost so it sees every 429 (adaptive
// concurrency halves on each).
//
// # What it must never do
//
// A spec never carries a secret: it names the environment variable that
// holds the key, read here, in the process that makes the call. No key
// reaches an error string, a log line or a String method. Infrastructure
// failures are typed errors ([llm.Error] kinds), never replies, so a
// caller cannot score an outage as a wrong answer (SkillOpt bug B7).
// Retries honour Retry-After and retry only retryable kinds, once, at one
// layer (bug B18: the SDKs' own retries are off).
//
// # Options
//
// Spec.Options keys understood by every backend: rpm, tpm (rate limits per
// minute), max_concurrency, min_concurrency, aimd_increase_every,
// default_output_tokens (limiter), circuit ("off" disables it),
// circuit_failures (default 10), circuit_cooldown (default 20s),
// retry_base (500ms), retry_cap (30s), max_retry_after (2m); durations are
// Go durations ("30s"). Backend keys: openai/azure — api_version,
// deployment, auth_mode (api_key|azure_cli|managed_identity|
// workload_identity|token|openai_compatible), ad_scope, client_id,
// tenant_id, token_env, api (auto|chat|responses), responses_models,
// max_tokens_cap, max_tokens_field
// (auto|max_tokens|max_completion_tokens), reasoning_models (comma list of
// prefixes, "none"), temperature_for_reasoning (omit|send),
// reasoning_effort_param (send|omit), seed_param (send|omit),
// thinking_mode (server_default|enabled|disabled), chat_template_kwargs
// and extra_body (JSON objects); anthropic — anthropic_version,
// default_max_tokens, cache_system (true|false), cache_ttl (5m|1h),
// thinking_budget, beta (comma list); exec — see backends/exec.ConfigFromOptions.
package backends
