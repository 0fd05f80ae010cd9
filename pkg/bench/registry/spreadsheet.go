package registry

import (
	"encoding/json"
	"fmt"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/spreadsheet"
)

func init() {
	register(spreadsheet.Name, entry{notes: (&spreadsheet.Env{}).AnalystNotes(), idFields: []string{"id"}, newEnv: func(cfg json.RawMessage) (bench.Env, error) {
		var c spreadsheet.Config
		if err := bench.DecodeConfig(cfg, &c); err != nil {
			return nil, fmt.Errorf("spreadsheet benchmark config: %w", err)
		}
		return spreadsheet.New(c)
	}})
}
