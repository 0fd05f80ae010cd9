package backends

import (
	"fmt"
	"slices"

	"github.com/skillfleet/skillfleet/backends/azure"
	"github.com/skillfleet/skillfleet/pkg/config"
)

// SkillOpt's client keys this package honours, by the family whose roles
// read them. A key set in a config where no role uses its family would do
// nothing: CheckConfig warns, naming the key and the family.
var familyKeys = []struct {
	backend string // the implementation whose roles read the keys ("" = by family name)
	family  string
	keys    []string
}{
	{backend: BackendAzure, family: "azure_openai (openai_chat)", keys: []string{
		"azure_openai_endpoint", "azure_openai_api_version", "azure_openai_api_key", "azure_openai_auth_mode",
		"azure_openai_ad_scope", "azure_openai_managed_identity_client_id"}},
	{family: "qwen_chat", keys: []string{
		"qwen_chat_base_url", "qwen_chat_api_key", "qwen_chat_temperature", "qwen_chat_timeout_seconds",
		"qwen_chat_max_tokens", "qwen_chat_enable_thinking", "qwen_chat_thinking_mode"}},
}

// checkFamilyKeys refuses bad values of SkillOpt's Azure and Qwen keys
// and warns about those that no role reads.
func checkFamilyKeys(c *config.Config) error {
	roles := map[string]config.Role{}
	for _, role := range []string{config.RoleOptimizer, config.RoleTarget} {
		roles[role] = c.Model.Role(role)
	}
	uses := func(role, backend, family string) bool {
		r := roles[role]
		if family == "qwen_chat" {
			return r.Backend == family
		}
		f, _ := LookupFamily(r.Backend)
		return f.Backend == backend
	}
	for _, g := range familyKeys {
		for _, k := range g.keys {
			for _, p := range []struct{ prefix, role string }{{"", ""}, {"optimizer_", config.RoleOptimizer}, {"target_", config.RoleTarget}} {
				path := "model." + p.prefix + k
				if !c.SetHere(path) {
					continue
				}
				used := false
				if p.role == "" {
					used = uses(config.RoleOptimizer, g.backend, g.family) || uses(config.RoleTarget, g.backend, g.family)
				} else {
					used = uses(p.role, g.backend, g.family)
				}
				if !used {
					msg := fmt.Sprintf("has no effect: no role uses the %s family", g.family)
					if p.role != "" {
						msg = fmt.Sprintf("has no effect: the %s role does not use the %s family", p.role, g.family)
					}
					c.Warnings = append(c.Warnings, config.Warning{File: c.File, Field: path, Msg: msg})
				}
			}
		}
	}
	for _, role := range []string{config.RoleOptimizer, config.RoleTarget} {
		prefix := role + "_"
		az := c.Model.AzureFor(role)
		if az.AuthMode != "" {
			if _, err := azure.ParseMode(az.AuthMode); err != nil {
				return c.FieldError(setOne(c, "model."+prefix+"azure_openai_auth_mode", "model.azure_openai_auth_mode"), "%v", err)
			}
		}
		q := c.Model.QwenFor(role)
		if q.TimeoutSeconds != nil && *q.TimeoutSeconds <= 0 {
			return c.FieldError(setOne(c, "model."+prefix+"qwen_chat_timeout_seconds", "model.qwen_chat_timeout_seconds"), "must be > 0, got %v", *q.TimeoutSeconds)
		}
		if q.MaxTokens != nil && *q.MaxTokens <= 0 {
			return c.FieldError(setOne(c, "model."+prefix+"qwen_chat_max_tokens", "model.qwen_chat_max_tokens"), "must be > 0, got %d", *q.MaxTokens)
		}
		if q.Temperature != nil && (*q.Temperature < 0 || *q.Temperature > 2) {
			return c.FieldError(setOne(c, "model."+prefix+"qwen_chat_temperature", "model.qwen_chat_temperature"), "must be in [0, 2], got %v", *q.Temperature)
		}
	}
	return nil
}

// setOne is the first of paths the config set (the role's key wins).
func setOne(c *config.Config, paths ...string) string {
	if i := slices.IndexFunc(paths, c.IsSet); i >= 0 {
		return paths[i]
	}
	return paths[len(paths)-1]
}
