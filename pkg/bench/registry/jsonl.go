package registry

import (
	"encoding/json"
	"fmt"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/jsonl"
)

func init() {
	register(jsonl.Name, entry{idFields: []string{"id"}, files: []string{"*.jsonl", "*.json"}, newEnv: func(cfg json.RawMessage) (bench.Env, error) {
		var c jsonl.Config
		if err := bench.DecodeConfig(cfg, &c); err != nil {
			return nil, fmt.Errorf("jsonl benchmark config: %w", err)
		}
		return jsonl.New(c)
	}})
}
