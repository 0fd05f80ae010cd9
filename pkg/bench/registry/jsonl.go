package registry

import (
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/jsonl"
)

func init() {
	register(jsonl.Name, entry{idFields: []string{"id"}, files: []string{"*.jsonl", "*.json"},
		newEnv: configured(jsonl.Name, func(c jsonl.Config) (bench.Env, error) { return jsonl.New(c) })})
}
