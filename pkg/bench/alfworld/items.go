package alfworld

import (
	"fmt"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench"
)

// Items is what `skillfleet data check` verifies of an ALFWorld item (the
// loader has already required its gamefile).
var Items = bench.ItemCheck{
	Fields: "gamefile (non-empty), task_type; ids train:N in train, valid_seen:N in val, valid_unseen:N in test",
	Check: func(_, split string, it map[string]any) error {
		if err := bench.NeedString(it, "task_type"); err != nil {
			return err
		}
		want := map[string]string{"train": "train:", "val": "valid_seen:", "test": "valid_unseen:"}[split]
		if id, _ := it["id"].(string); !strings.HasPrefix(id, want) {
			return fmt.Errorf("field id: %q in split %s does not start with %q (ALFWorld's convention)", id, split, want)
		}
		return nil
	},
}
