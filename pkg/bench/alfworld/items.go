package alfworld

import (
	"fmt"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench"
)

// Items is what `skillfleet data check` verifies of an ALFWorld item (the
// loader has already required its gamefile).
var Items = bench.ItemCheck{
	Fields: "gamefile (non-empty), task_type; ids train:N in train, val:N or valid_seen:N in val, test:N or valid_unseen:N in test",
	Check: func(_, split string, it map[string]any) error {
		if err := bench.NeedString(it, "task_type"); err != nil {
			return err
		}
		want := idPrefixes[split]
		id, _ := it["id"].(string)
		for _, p := range want {
			if strings.HasPrefix(id, p) {
				return nil
			}
		}
		return fmt.Errorf("field id: %q in split %s does not start with %s (SkillOpt's split names its ids by split, ALFWorld's by game set)", id, split, strings.Join(quoted(want), " or "))
	},
}

// idPrefixes are the id prefixes an item of each split may have: SkillOpt's
// own split (data/alfworld_path_split) names them by split, train:,
// val:, test:; ALFWorld's game sets are named train, valid_seen and
// valid_unseen.
var idPrefixes = map[string][]string{
	"train": {"train:"},
	"val":   {"val:", "valid_seen:"},
	"test":  {"test:", "valid_unseen:"},
}

func quoted(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}
