package registry

import (
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/alfworld"
	"github.com/skillfleet/skillfleet/pkg/bench/envserver"
)

func init() {
	register(alfworld.Name, entry{items: alfworld.Items, notes: envserver.Notes, idFields: []string{"id"}, normalize: alfworld.Normalize,
		newEnv: configured(alfworld.Name, func(c envserver.Config) (bench.Env, error) { return alfworld.New(c) })})
}
