package registry

import (
	"encoding/json"
	"fmt"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/livemath"
)

func init() {
	register(livemath.Name, entry{notes: (&livemath.Env{}).AnalystNotes(), idFields: []string{"id"}, newEnv: func(cfg json.RawMessage) (bench.Env, error) {
		var c livemath.Config
		if err := bench.DecodeConfig(cfg, &c); err != nil {
			return nil, fmt.Errorf("livemath benchmark config: %w", err)
		}
		return livemath.New(c), nil
	}})
}
