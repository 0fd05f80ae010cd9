package registry

import (
	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/docvqa"
)

func init() {
	register(docvqa.Name, entry{items: docvqa.Items, notes: (&docvqa.Env{}).AnalystNotes(), idFields: []string{"id", "questionId"}, files: []string{"*.csv"},
		normalize: docvqa.Normalize,
		newEnv:    configured(docvqa.Name, func(c docvqa.Config) (bench.Env, error) { return docvqa.New(c), nil })})
}
