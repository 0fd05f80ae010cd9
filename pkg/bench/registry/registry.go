// Package registry maps a benchmark name (env.name) to its implementation.
// It is the one place that knows every benchmark; workers and the
// coordinator ask it by name, exactly as SkillOpt's configs pick an env.
package registry

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/sim"
)

type entry struct {
	// idFields are the item fields holding the id, in order.
	idFields []string
	newEnv   func(cfg json.RawMessage) (bench.Env, error)
}

// known holds every benchmark, filled by register calls in this package's
// init functions (one file per benchmark, so adding one touches no other).
var known = map[string]entry{}

// register adds a benchmark; a duplicate name is a programming error.
func register(name string, e entry) {
	if _, dup := known[name]; dup {
		panic("registry: benchmark " + name + " registered twice")
	}
	known[name] = e
}

func init() {
	register(sim.Name, entry{idFields: []string{"id"}, newEnv: func(cfg json.RawMessage) (bench.Env, error) {
		var c sim.Config
		if err := decode(cfg, &c); err != nil {
			return nil, fmt.Errorf("sim benchmark config: %w", err)
		}
		return sim.New(c), nil
	}})
}

func entries() map[string]entry { return known }

// decode reads the benchmark's own keys from the env JSON, ignoring the
// generic env keys every benchmark receives.
func decode(cfg json.RawMessage, dst any) error {
	if len(cfg) == 0 {
		return nil
	}
	return json.Unmarshal(cfg, dst)
}

// Names lists the known benchmarks.
func Names() []string {
	var out []string
	for k := range entries() {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// New builds a benchmark by name from its env config (JSON).
func New(name string, cfg json.RawMessage) (bench.Env, error) {
	e, ok := entries()[name]
	if !ok {
		return nil, fmt.Errorf("unknown benchmark %q (known: %s)", name, strings.Join(Names(), ", "))
	}
	return e.newEnv(cfg)
}

// IDFields returns the item fields that hold a benchmark's item ids.
func IDFields(name string) []string {
	if e, ok := entries()[name]; ok {
		return e.idFields
	}
	return []string{"id"}
}
