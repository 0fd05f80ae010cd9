package registry

import (
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/envserver"
)

const householdNotes = `Household-game failures usually fall into: (1) acting before looking: taking or putting at a receptacle not visited or still closed; (2) repeating an action that changes nothing ("Nothing happens."); (3) forgetting the object's required state (clean, hot, cool) before placing it; (4) searching the same places again instead of unvisited ones; (5) replies that are not one of the listed actions. Only winning within the step limit scores.`

func init() {
	for _, name := range []string{"textgame", "alfworld"} {
		register(name, entry{notes: householdNotes, idFields: []string{"id"},
			newEnv: configured(name, func(c envserver.Config) (bench.Env, error) { return envserver.New(name, c, householdNotes) })})
	}
}
