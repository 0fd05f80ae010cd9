package registry

import (
	"encoding/json"
	"fmt"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/officeqa"
)

func init() {
	register(officeqa.Name, entry{notes: (&officeqa.Env{}).AnalystNotes(), idFields: []string{"id", "uid"}, files: []string{"*.csv", "*.json"}, normalize: officeqa.Normalize,
		newEnv: func(cfg json.RawMessage) (bench.Env, error) {
			var c officeqa.Config
			if err := bench.DecodeConfig(cfg, &c); err != nil {
				return nil, fmt.Errorf("officeqa benchmark config: %w", err)
			}
			return officeqa.New(c)
		}})
}
