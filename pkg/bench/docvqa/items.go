package docvqa

import (
	"errors"

	"github.com/skillfleet/skillfleet/pkg/bench"
)

// Items is what `skillfleet data check` verifies of a DocVQA item (the
// loader has already required the question and moved a
// "document_path:" suffix of it to image_path).
var Items = bench.ItemCheck{
	Fields: "question, answers (non-empty), image_path (a file under DIR, else its parent)",
	Check: func(dir, _ string, it map[string]any) error {
		if err := bench.NeedStrings(it, "answers"); err != nil {
			return err
		}
		p, _ := it["image_path"].(string)
		if p == "" {
			return errors.New("field image_path: empty (and no document_path: suffix in the question)")
		}
		return bench.ExistsUnder(dir, p, false)
	},
}
