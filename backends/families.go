package backends

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/skillfleet/skillfleet/backends/anthropic"
	"github.com/skillfleet/skillfleet/backends/azure"
	"github.com/skillfleet/skillfleet/backends/exec"
	"github.com/skillfleet/skillfleet/backends/handoff"
	"github.com/skillfleet/skillfleet/backends/openai"
	"github.com/skillfleet/skillfleet/backends/sim"
	"github.com/skillfleet/skillfleet/pkg/config"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// BackendSim is the simulated model (a test double for demos and tests).
const BackendSim = "sim"

// BackendHandoff hands every call to whoever answers the files in its
// option dir (backends/handoff): a sleep night answered by the user's own
// agent session.
const BackendHandoff = "handoff"

// builder makes a bare backend and names its endpoint (for limiter keys).
// ctx bounds what building does before the first call (the exec backend
// runs the agent's --version).
type builder func(ctx context.Context, spec Spec, deps Deps, getenv func(string) string, o *options) (llm.Model, string, error)

// implementations are the backends [New] builds, by the name a wire
// ModelSpec carries. A new backend is its package plus one row here (and a
// row in families when configs should name it by another family name).
// provider is the backend's gen_ai.provider.name in telemetry: the
// OpenTelemetry conventions' well-known value where there is one, else the
// backend's own name.
var implementations = []struct {
	name     string
	build    builder
	provider string
}{
	{BackendOpenAI, buildOpenAI, "openai"},
	{BackendOpenAICompatible, buildOpenAI, "openai"},
	{BackendAzure, buildAzure, "azure.ai.openai"},
	{BackendAnthropic, buildAnthropic, "anthropic"},
	{BackendExec, buildExec, BackendExec},
	{BackendSim, buildSim, BackendSim},
	{BackendHandoff, buildHandoff, BackendHandoff},
}

// Implementations returns the names of the backends [New] builds (the
// names a wire ModelSpec may carry), in table order.
func Implementations() []string {
	names := make([]string, len(implementations))
	for i, im := range implementations {
		names[i] = im.name
	}
	return names
}

// Provider returns backend's gen_ai.provider.name for telemetry; an
// unknown backend is named as it is.
func Provider(backend string) string {
	for _, im := range implementations {
		if im.name == backend {
			return im.provider
		}
	}
	return backend
}

// Family is a client family that model.optimizer_backend or
// model.target_backend may name (SkillOpt's names and skillfleet's own),
// and the backend that serves it.
type Family struct {
	// Name is the family as a config names it: openai_chat, claude_code_exec, ...
	Name string
	// Backend is the implementation serving it, the ModelSpec.Backend sent
	// to workers: openai, azure, anthropic, exec or sim.
	Backend string
	// Agent is the agent CLI an exec family runs (exec option agent); ""
	// leaves it to the role's options (agent or command).
	Agent string
	// TargetOnly families run agent CLIs; they cannot be the optimizer.
	TargetOnly bool
}

// families maps every config family to its implementation. Each
// implementation's own name is a family too (see [LookupFamily]).
var families = []Family{
	{Name: "openai_chat", Backend: BackendAzure}, // SkillOpt's default family is Azure OpenAI
	{Name: "azure_openai", Backend: BackendAzure},
	{Name: "openai_compatible", Backend: BackendOpenAI}, // New accepts both names; the wire carries openai
	{Name: "qwen_chat", Backend: BackendOpenAI},
	{Name: "minimax_chat", Backend: BackendOpenAI},
	{Name: "claude", Backend: BackendAnthropic},
	// Agent CLIs with their tools on a task (targets; codex_exec may also
	// be the optimizer, in chat mode, as SkillOpt's --backend codex).
	{Name: "codex_exec", Backend: BackendExec, Agent: exec.AgentCodex},
	{Name: "claude_code_exec", Backend: BackendExec, Agent: exec.AgentClaude, TargetOnly: true},
	{Name: "cursor_exec", Backend: BackendExec, Agent: exec.AgentCursor, TargetOnly: true},
	{Name: "copilot_exec", Backend: BackendExec, Agent: exec.AgentCopilot, TargetOnly: true},
	{Name: "pi_exec", Backend: BackendExec, Agent: exec.AgentPi, TargetOnly: true},
	{Name: "opencode_exec", Backend: BackendExec, Agent: exec.AgentOpencode, TargetOnly: true},
	// Agent CLIs in chat mode (no tools, the conversation as one prompt)
	// on the user's own CLI login, for any role: SkillOpt's claude_chat
	// (claude -p --output-format json) and copilot_chat (copilot -p), and
	// the same for Codex, pi and opencode. pkg/config sets option mode.
	{Name: "claude_chat", Backend: BackendExec, Agent: exec.AgentClaude},
	{Name: "copilot_chat", Backend: BackendExec, Agent: exec.AgentCopilot},
	{Name: "codex_chat", Backend: BackendExec, Agent: exec.AgentCodex},
	{Name: "pi_chat", Backend: BackendExec, Agent: exec.AgentPi},
	{Name: "opencode_chat", Backend: BackendExec, Agent: exec.AgentOpencode},
}

func implementation(name string) (builder, bool) {
	for _, i := range implementations {
		if i.name == name {
			return i.build, true
		}
	}
	return nil, false
}

// LookupFamily returns the family a config names: a row of the family
// table, or an implementation under its own name.
func LookupFamily(name string) (Family, bool) {
	for _, f := range families {
		if f.Name == name {
			return f, true
		}
	}
	if _, ok := implementation(name); ok {
		return Family{Name: name, Backend: name}, true
	}
	return Family{}, false
}

// Families returns every family a config may name, sorted by name.
func Families() []Family {
	out := slices.Clone(families)
	for _, i := range implementations {
		if !slices.ContainsFunc(out, func(f Family) bool { return f.Name == i.name }) {
			out = append(out, Family{Name: i.name, Backend: i.name})
		}
	}
	slices.SortFunc(out, func(a, b Family) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func familyNames() string {
	fs := Families()
	names := make([]string, len(fs))
	for i, f := range fs {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// CheckConfig checks that a backend implements each role's client family
// and that the family may play the role. The error is a
// *[config.FieldError] naming model.backend when the family came from
// it, else model.<role>_backend, and listing the supported families.
func CheckConfig(c *config.Config) error {
	for _, role := range []string{config.RoleOptimizer, config.RoleTarget} {
		r := c.Model.Role(role)
		path := "model." + role + "_backend"
		field := path
		if !c.IsSet(path) {
			field = "model.backend"
		}
		f, ok := LookupFamily(r.Backend)
		if !ok {
			return c.FieldError(field, "client family %s (%s) is not implemented by any backend (supported: %s)", r.Backend, role, familyNames())
		}
		if f.TargetOnly && role == config.RoleOptimizer {
			return c.FieldError(field, "%s runs an agent CLI and can only be the target backend", f.Name)
		}
		if f.Backend == BackendExec && f.Agent == "" && r.Options["agent"] == nil && r.Options["command"] == nil {
			return c.FieldError("model."+role+"_options", "%s needs option command (the agent's argv) or agent (%s)", f.Name, strings.Join(exec.Agents(), ", "))
		}
	}
	return checkFamilyKeys(c)
}

func buildOpenAI(_ context.Context, spec Spec, deps Deps, getenv func(string) string, o *options) (llm.Model, string, error) {
	base := cmpOr(spec.BaseURL, getenv(DefaultOpenAIBaseURLEnv))
	cfg := openai.Config{BaseURL: base, APIKey: getenv(cmpOr(spec.APIKeyEnv, DefaultOpenAIKeyEnv)), Wire: wirePolicy(o), HTTPClient: deps.HTTPClient}
	wireAPI(o, &cfg)
	c := openai.New(cfg)
	return c, c.Endpoint(), nil
}

// AzureAuthModeEnv is SkillOpt's variable for the Azure sign-in mode when
// neither the config nor the role's options name one.
const AzureAuthModeEnv = "AZURE_OPENAI_AUTH_MODE"

// azureMode is the role's Azure sign-in mode: option auth_mode, else
// AZURE_OPENAI_AUTH_MODE, else api_key when the key variable holds a key
// and SkillOpt's default azure_cli when it does not.
func azureMode(spec Spec, getenv func(string) string, o *options) (string, error) {
	mode := o.str("auth_mode", "")
	from := "option auth_mode"
	if mode == "" {
		mode, from = strings.TrimSpace(getenv(AzureAuthModeEnv)), AzureAuthModeEnv
	}
	if mode == "" {
		if getenv(cmpOr(spec.APIKeyEnv, DefaultAzureKeyEnv)) != "" {
			return azure.ModeAPIKey, nil
		}
		return azure.ModeAzureCLI, nil
	}
	m, err := azure.ParseMode(mode)
	if err != nil {
		return "", fmt.Errorf("%s: %w", from, err)
	}
	return m, nil
}

func buildAzure(_ context.Context, spec Spec, deps Deps, getenv func(string) string, o *options) (llm.Model, string, error) {
	if spec.BaseURL == "" {
		return nil, "", fmt.Errorf("backend azure: no endpoint (set model.azure_openai_endpoint or AZURE_OPENAI_ENDPOINT)")
	}
	mode, err := azureMode(spec, getenv, o)
	if err != nil {
		return nil, "", fmt.Errorf("backend azure: %w", err)
	}
	keyVar := cmpOr(spec.APIKeyEnv, DefaultAzureKeyEnv)
	cfg := openai.Config{
		BaseURL: spec.BaseURL, Azure: true, AzureAuth: openai.AzureAuthAPIKey,
		APIVersion: o.str("api_version", ""), Deployment: o.str("deployment", ""),
		Wire: wirePolicy(o), HTTPClient: deps.HTTPClient,
	}
	wireAPI(o, &cfg)
	switch mode {
	case azure.ModeAPIKey:
		cfg.APIKey = getenv(keyVar)
	case azure.ModeToken:
		cfg.AzureAuth, cfg.APIKey = openai.AzureAuthBearer, getenv(o.str("token_env", DefaultAzureTokenEnv))
	case azure.ModeOpenAICompatible:
		// SkillOpt's escape hatch: the endpoint is a plain OpenAI server.
		cfg.Azure, cfg.APIKey = false, getenv(keyVar)
	default:
		cred, err := azure.Shared(azure.Config{
			Mode: mode, Scope: o.str("ad_scope", ""), ClientID: o.str("client_id", ""), TenantID: o.str("tenant_id", ""),
			TokenFile: o.str("federated_token_file", ""), HTTPClient: deps.HTTPClient,
		})
		if err != nil {
			return nil, "", fmt.Errorf("backend azure: %w", err)
		}
		cfg.AzureAuth, cfg.Tokens = openai.AzureAuthBearer, cred
	}
	c := openai.New(cfg)
	return c, c.Endpoint(), nil
}

// wireAPI reads options api (auto, chat or responses) and
// responses_models into cfg.
func wireAPI(o *options, cfg *openai.Config) {
	switch o.oneOf("api", "auto", "auto", openai.APIChat, openai.APIResponses) {
	case openai.APIChat:
		cfg.API = openai.APIChat
	case openai.APIResponses:
		cfg.API = openai.APIResponses
	}
	if l, ok := o.list("responses_models"); ok {
		if len(l) == 1 && l[0] == "none" {
			l = []string{}
		}
		cfg.ResponsesModels = l
	}
}

func buildAnthropic(_ context.Context, spec Spec, deps Deps, getenv func(string) string, o *options) (llm.Model, string, error) {
	c := anthropic.New(anthropic.Config{
		BaseURL: spec.BaseURL, APIKey: getenv(cmpOr(spec.APIKeyEnv, DefaultAnthropicKeyEnv)), Version: o.str("anthropic_version", ""),
		DefaultMaxTokens: int(o.int("default_max_tokens")), CacheSystem: o.bool("cache_system", false),
		CacheTTL: o.oneOf("cache_ttl", "", "", "5m", "1h"), ThinkingBudget: int(o.int("thinking_budget")),
		Betas: listOr(o, "beta"), HTTPClient: deps.HTTPClient,
	})
	return c, c.Endpoint(), nil
}

func buildExec(ctx context.Context, spec Spec, _ Deps, getenv func(string) string, _ *options) (llm.Model, string, error) {
	cfg, err := exec.ConfigFromOptions(spec.Model, spec.Options)
	if err != nil {
		return nil, "", fmt.Errorf("backend exec: %w", err)
	}
	cfg.Getenv = getenv
	if spec.APIKeyEnv != "" && !slices.Contains(cfg.Env, spec.APIKeyEnv) {
		cfg.Env = append(cfg.Env, spec.APIKeyEnv)
	}
	cfg.BaseURL = cmp.Or(cfg.BaseURL, spec.BaseURL)
	cfg.APIKeyEnv = cmp.Or(cfg.APIKeyEnv, spec.APIKeyEnv)
	c := exec.New(cfg)
	if _, err := c.CheckVersion(ctx); err != nil {
		return nil, "", fmt.Errorf("backend exec: %w", err)
	}
	return c, c.Endpoint(), nil
}

// buildSim is the in-process simulated model, which also answers
// skillfleet sleep's prompts.
func buildSim(_ context.Context, spec Spec, _ Deps, _ func(string) string, _ *options) (llm.Model, string, error) {
	return sim.NewSleepAware(sim.New(sim.Options{})), spec.BaseURL, nil
}

// buildHandoff serves calls from the answer files under option dir.
func buildHandoff(_ context.Context, spec Spec, _ Deps, _ func(string) string, o *options) (llm.Model, string, error) {
	dir := o.str("dir", "")
	if dir == "" {
		return nil, "", fmt.Errorf("backend %s: option dir (the handoff directory) is required", BackendHandoff)
	}
	s, err := handoff.Open(dir)
	if err != nil {
		return nil, "", err
	}
	return s, s.Dir(), nil
}

// AzureOptions sets a role's Azure sign-in options from SkillOpt's
// azure_openai_* keys (auth_mode, ad_scope, client_id), leaving any the
// role's own options set. The key's aad and azure_ad mean managed identity,
// as in SkillOpt.
func AzureOptions(az config.Azure, opts map[string]string) {
	set := func(k, v string) {
		if _, ok := opts[k]; !ok && v != "" {
			opts[k] = v
		}
	}
	set("auth_mode", az.AuthMode)
	set("ad_scope", az.ADScope)
	set("client_id", az.ManagedIdentityClientID)
}
