package coordinator

import (
	"errors"
	"slices"
	"sort"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench/registry"
	"github.com/skillfleet/skillfleet/pkg/config"
)

// skillOptEnvAliases are SkillOpt's names of benchmark keys that
// skillfleet's benchmark reads under another name: the value is honoured
// under the new name.
var skillOptEnvAliases = map[string]map[string]string{
	"livemath": {"use_theorem": "include_theorem", "use_sketch": "include_sketch", "shuffle_choices": "permute_choices"},
}

// skillOptEnvUnused are SkillOpt's env keys that skillfleet's benchmarks
// do not read, with what to use instead. Its published configs set them,
// so they load with a warning naming the key, never silently.
var skillOptEnvUnused = map[string]string{
	"max_api_workers": "workers size their own pools: use runtime.rollout_concurrency",
	"data_dirs":       "officeqa reads its corpus from env.docs_dir; alfworld gets its games through env.env_server (skillfleet envserver)",
}

// CheckEnvKeys checks the benchmark-specific env keys of c against the
// keys its benchmark reads: SkillOpt's name of a key the benchmark reads
// under another name is honoured under that name; a SkillOpt key no
// benchmark here reads is a warning naming what to use instead; any other
// key is an error naming the file, the key and the keys the benchmark
// reads. Every unknown key is reported, not only the first.
func CheckEnvKeys(c *config.Config) error {
	known, ok := registry.ConfigKeys(c.Env.Name)
	if !ok {
		return nil // an unknown benchmark is refused where it is built
	}
	for from, to := range skillOptEnvAliases[c.Env.Name] {
		if v, set := c.Env.Extra[from]; set {
			if _, both := c.Env.Extra[to]; both {
				return c.FieldError("env."+from, "given twice (also as env.%s, skillfleet's name for it)", to)
			}
			c.Env.Extra[to] = v
			delete(c.Env.Extra, from)
		}
	}
	keys := make([]string, 0, len(c.Env.Extra))
	for k := range c.Env.Extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []error
	for _, k := range keys {
		if slices.Contains(known, k) {
			continue
		}
		if instead, ok := skillOptEnvUnused[k]; ok {
			w := c.FieldError("env."+k, "SkillOpt's key is not used by skillfleet's %s benchmark: %s", c.Env.Name, instead)
			c.Warnings = append(c.Warnings, config.Warning{File: w.File, Field: w.Field, Msg: w.Msg})
			continue
		}
		msg := "unknown key for benchmark %s"
		if h := config.ClosestKey(k, known); h != "" {
			msg += " (did you mean env." + h + "?)"
		}
		msg += "; it reads " + strings.Join(benchOwn(known), ", ")
		errs = append(errs, c.FieldError("env."+k, msg, c.Env.Name))
	}
	return errors.Join(errs...)
}

// benchOwn are the keys of known that are not the env section's own
// (which are checked by package config).
func benchOwn(known []string) []string {
	var out []string
	for _, k := range known {
		switch k {
		case "name", "max_turns", "max_completion_tokens", "exec_timeout", "split_dir":
			continue
		}
		out = append(out, "env."+k)
	}
	if len(out) == 0 {
		return []string{"no key of its own"}
	}
	return out
}
