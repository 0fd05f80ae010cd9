package livemath

import (
	"errors"
	"fmt"

	"github.com/skillfleet/skillfleet/pkg/bench"
)

// Items is what `skillfleet data check` verifies of a LiveMath item.
var Items = bench.ItemCheck{
	Fields: "question, choices (labels A-G, each once, with text), correct_choice.label one of them",
	Check: func(_, _ string, it map[string]any) error {
		if err := bench.NeedString(it, "question"); err != nil {
			return err
		}
		cs, _ := it["choices"].([]any)
		if len(cs) < 2 {
			return errors.New("field choices: want a list of at least two {label, text}")
		}
		labels := map[string]bool{}
		for i, c := range cs {
			m, _ := c.(map[string]any)
			l, _ := m["label"].(string)
			if len(l) != 1 || l[0] < 'A' || l[0] > 'G' || labels[l] {
				return fmt.Errorf("field choices[%d].label: %q is not a new label A-G", i, l)
			}
			if err := bench.NeedString(m, "text"); err != nil {
				return fmt.Errorf("choices[%d]: %w", i, err)
			}
			labels[l] = true
		}
		cc, _ := it["correct_choice"].(map[string]any)
		if l, _ := cc["label"].(string); !labels[l] {
			return fmt.Errorf("field correct_choice.label: %q is not one of the choices", l)
		}
		return nil
	},
}
