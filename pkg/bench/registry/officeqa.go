package registry

import (
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/officeqa"
)

func init() {
	register(officeqa.Name, entry{items: officeqa.Items, notes: (&officeqa.Env{}).AnalystNotes(), idFields: []string{"id", "uid"}, files: []string{"*.csv", "*.json"},
		normalize: officeqa.Normalize,
		newEnv:    configured(officeqa.Name, func(c officeqa.Config) (bench.Env, error) { return officeqa.New(c) })})
}
