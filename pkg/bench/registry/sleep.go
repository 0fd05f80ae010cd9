package registry

import (
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/sleep"
)

// The replay benchmark of skillfleet sleep: its items are mined tasks,
// sent by a night's coordinator, never read from a split directory.
func init() {
	register(sleep.EnvName, entry{idFields: []string{"id"},
		newEnv: configured(sleep.EnvName, func(c sleep.EnvConfig) (bench.Env, error) { return sleep.NewEnv(c), nil })})
}
