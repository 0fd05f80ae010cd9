package main

import (
	"context"
	"maps"
	"slices"

	"github.com/skillfleet/skillfleet/backends"
	"github.com/skillfleet/skillfleet/coordinator"
	"github.com/skillfleet/skillfleet/pkg/config"
)

// preflightRoles are the models a run of cfg calls, each named by its role
// (prefix names the run among others, e.g. a campaign cell).
func preflightRoles(cfg *config.Config, prefix string) []backends.RoleSpec {
	var out []backends.RoleSpec
	for _, role := range []string{config.RoleTarget, config.RoleOptimizer} {
		out = append(out, backends.RoleSpec{Role: prefix + role, Spec: backends.SpecFromProto(coordinator.RoleSpec(cfg, role))})
	}
	return out
}

// preflight checks every model's credentials before the first call when
// this process's own workers will make the calls (external workers have
// their own environment, which this process cannot see). A problem is a
// usage error (exit 2) naming the variable or sign-in to fix.
func (o trainOpts) preflight(ctx context.Context, cfgs map[string]*config.Config) error {
	if o.noPreflight {
		return nil
	}
	local := map[string]*config.Config{}
	for prefix, cfg := range cfgs {
		if o.workers == 0 || (o.workers < 0 && cfg.Runtime.Workers == 0) {
			continue
		}
		local[prefix] = cfg
	}
	return preflightConfigs(ctx, local)
}

// preflightConfigs checks the credentials of every model the configs
// call, each distinct model once, keyed by a prefix naming the run in
// messages ("" for a lone run; a campaign passes "cell NAME " for each
// cell before starting any). With runtime.sim_llm the API roles call the
// in-process sim-llm and are skipped; an agent CLI role is still checked
// (its binary answers --version).
func preflightConfigs(ctx context.Context, cfgs map[string]*config.Config) error {
	var roles []backends.RoleSpec
	for _, prefix := range slices.Sorted(maps.Keys(cfgs)) {
		cfg := cfgs[prefix]
		for _, r := range preflightRoles(cfg, prefix) {
			if !cfg.Runtime.SimLLM || r.Spec.Backend == backends.BackendExec {
				roles = append(roles, r)
			}
		}
	}
	if len(roles) == 0 {
		return nil
	}
	if err := backends.Preflight(ctx, roles, backends.Deps{}); err != nil {
		return usageError{err}
	}
	return nil
}
