package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Splits holds a benchmark's items per split, in file order.
type Splits struct {
	Train, Val, Test []Item
}

// Get returns the items of a split by name (train, val, test and
// SkillOpt's aliases valid_seen/selection → val, valid_unseen → test).
func (s *Splits) Get(name string) ([]Item, error) {
	switch name {
	case SplitTrain:
		return s.Train, nil
	case SplitVal, "valid_seen", "selection":
		return s.Val, nil
	case SplitTest, "valid_unseen":
		return s.Test, nil
	default:
		return nil, fmt.Errorf("unknown split %q (want train, val or test)", name)
	}
}

// LoadOptions tunes LoadSplitDir.
type LoadOptions struct {
	// IDFields are the item fields tried for the id, in order (default ["id"]).
	IDFields []string
	// Limit truncates every split to its first Limit items (0 = all).
	Limit int
}

// LoadSplitDir reads dir/{train,val,test}/: in each, the first *.json file
// in name order, a JSON array of item objects. Every item needs a
// non-empty id; ids must be unique across splits.
func LoadSplitDir(dir string, o LoadOptions) (*Splits, error) {
	if len(o.IDFields) == 0 {
		o.IDFields = []string{"id"}
	}
	s := &Splits{}
	seen := map[string]string{}
	for _, sp := range []struct {
		name string
		dst  *[]Item
	}{{SplitTrain, &s.Train}, {SplitVal, &s.Val}, {SplitTest, &s.Test}} {
		sub := filepath.Join(dir, sp.name)
		files, err := filepath.Glob(filepath.Join(sub, "*.json"))
		if err != nil {
			return nil, fmt.Errorf("split dir %s: %w", sub, err)
		}
		if len(files) == 0 {
			if _, err := os.Stat(sub); err != nil {
				return nil, fmt.Errorf("split dir %s: missing %s/ (a split dir needs train/, val/ and test/)", dir, sp.name)
			}
			return nil, fmt.Errorf("split dir %s: no *.json file in %s/", dir, sp.name)
		}
		sort.Strings(files)
		items, err := loadItems(files[0], o.IDFields)
		if err != nil {
			return nil, err
		}
		for _, it := range items {
			if prev, dup := seen[it.ID]; dup {
				return nil, fmt.Errorf("%s: item %q also appears in %s (splits must not overlap)", files[0], it.ID, prev)
			}
			seen[it.ID] = files[0]
		}
		if o.Limit > 0 && len(items) > o.Limit {
			items = items[:o.Limit]
		}
		*sp.dst = items
	}
	return s, nil
}

func loadItems(path string, idFields []string) ([]Item, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read items: %w", err)
	}
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, fmt.Errorf("%s: want a JSON array of item objects: %w", path, err)
	}
	items := make([]Item, 0, len(raws))
	for i, raw := range raws {
		var fields map[string]any
		if err := json.Unmarshal(raw, &fields); err != nil {
			return nil, fmt.Errorf("%s: item %d: not a JSON object", path, i)
		}
		id := ""
		for _, f := range idFields {
			if v, ok := fields[f]; ok && v != nil {
				id = strings.TrimSpace(fmt.Sprint(v))
				if id != "" {
					break
				}
			}
		}
		if id == "" {
			return nil, fmt.Errorf("%s: item %d: missing %s", path, i, strings.Join(idFields, " or "))
		}
		tt, _ := fields["task_type"].(string)
		items = append(items, Item{ID: id, TaskType: tt, Raw: raw})
	}
	return items, nil
}
