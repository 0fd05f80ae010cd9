package registry

import (
	"encoding/json"
	"fmt"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/searchqa"
)

func init() {
	register(searchqa.Name, entry{notes: (&searchqa.Env{}).AnalystNotes(), idFields: []string{"id"}, newEnv: func(cfg json.RawMessage) (bench.Env, error) {
		var c searchqa.Config
		if err := bench.DecodeConfig(cfg, &c); err != nil {
			return nil, fmt.Errorf("searchqa benchmark config: %w", err)
		}
		return searchqa.New(c), nil
	}})
}
