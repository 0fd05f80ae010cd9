package registry

import (
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/nightly"
)

// The replay benchmark of skillfleet sleep: its items are mined tasks,
// sent by a night's coordinator, never read from a split directory.
func init() {
	register(nightly.EnvName, entry{idFields: []string{"id"},
		newEnv: configured(nightly.EnvName, func(c nightly.EnvConfig) (bench.Env, error) { return nightly.NewEnv(c), nil })})
}
