package registry

import (
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/livemath"
)

func init() {
	register(livemath.Name, entry{items: livemath.Items, notes: (&livemath.Env{}).AnalystNotes(), idFields: []string{"id"},
		newEnv: configured(livemath.Name, func(c livemath.Config) (bench.Env, error) { return livemath.New(c), nil })})
}
