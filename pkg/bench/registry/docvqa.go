package registry

import (
	"encoding/json"
	"fmt"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/docvqa"
)

func init() {
	register(docvqa.Name, entry{notes: (&docvqa.Env{}).AnalystNotes(), idFields: []string{"id", "questionId"}, files: []string{"*.csv"}, normalize: docvqa.Normalize,
		newEnv: func(cfg json.RawMessage) (bench.Env, error) {
			var c docvqa.Config
			if err := bench.DecodeConfig(cfg, &c); err != nil {
				return nil, fmt.Errorf("docvqa benchmark config: %w", err)
			}
			return docvqa.New(c), nil
		}})
}
