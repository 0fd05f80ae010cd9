package registry

import (
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/spreadsheet"
)

func init() {
	register(spreadsheet.Name, entry{items: spreadsheet.Items, notes: (&spreadsheet.Env{}).AnalystNotes(), idFields: []string{"id"},
		newEnv: configured(spreadsheet.Name, func(c spreadsheet.Config) (bench.Env, error) { return spreadsheet.New(c) })})
}
