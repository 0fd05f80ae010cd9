package spreadsheet

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/skillfleet/skillfleet/pkg/bench"
)

// Items is what `skillfleet data check` verifies of a spreadsheet item.
var Items = bench.ItemCheck{
	Fields: "instruction, instruction_type, answer_position (parsed as ranges), answer_sheet (a string if present), spreadsheet_path (a directory under DIR's parent, else DIR, holding at least one input/answer pair)",
	Check:  checkItem,
}

func checkItem(dir, _ string, it map[string]any) error {
	for _, f := range []string{"instruction", "instruction_type", "answer_position", "spreadsheet_path"} {
		if err := bench.NeedString(it, f); err != nil {
			return err
		}
	}
	if v, ok := it["answer_sheet"]; ok {
		if _, isStr := v.(string); !isStr {
			return errors.New("field answer_sheet: want a string")
		}
	}
	if _, err := parsePositions(it["answer_position"].(string)); err != nil {
		return fmt.Errorf("field answer_position: %w", err)
	}
	p := it["spreadsheet_path"].(string)
	for _, root := range []string{filepath.Dir(dir), dir} {
		d := filepath.Join(root, filepath.FromSlash(p))
		if st, err := os.Stat(d); err == nil && st.IsDir() {
			cases, err := Cases(d)
			if err != nil {
				return fmt.Errorf("field spreadsheet_path: %w", err)
			}
			if len(cases) == 0 {
				return fmt.Errorf("field spreadsheet_path: no N_<id>_input.xlsx/N_<id>_answer.xlsx (or init/golden) pair in %s", d)
			}
			return nil
		}
	}
	return fmt.Errorf("field spreadsheet_path: no directory %s under %s or %s", p, filepath.Dir(dir), dir)
}
