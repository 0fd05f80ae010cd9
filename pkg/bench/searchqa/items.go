package searchqa

import "github.com/skillfleet/skillfleet/pkg/bench"

// Items is what `skillfleet data check` verifies of a SearchQA item.
var Items = bench.ItemCheck{
	Fields: "question and context (strings), answers (a non-empty list of strings)",
	Check: func(_, _ string, it map[string]any) error {
		if err := bench.NeedString(it, "question"); err != nil {
			return err
		}
		if err := bench.NeedStringField(it, "context"); err != nil {
			return err
		}
		return bench.NeedStrings(it, "answers")
	},
}
