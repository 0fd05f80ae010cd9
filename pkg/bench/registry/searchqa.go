package registry

import (
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/searchqa"
)

func init() {
	register(searchqa.Name, entry{items: searchqa.Items, notes: (&searchqa.Env{}).AnalystNotes(), idFields: []string{"id"},
		newEnv: configured(searchqa.Name, func(c searchqa.Config) (bench.Env, error) { return searchqa.New(c), nil })})
}
