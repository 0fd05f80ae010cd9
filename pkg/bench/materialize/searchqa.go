package materialize

import (
	"fmt"
	"strings"
)

// SearchQA writes runnable SearchQA splits: for each id of the manifest,
// the source row whose key field (the manifest's source_id_field, "key"
// by default) equals it, as {id, question, context, answers} (and
// task_type where the row has one). The source
// is the dataset its manifest names (lucadiliello/searchqa), as the files
// it is published in. A row the manifest wants that lacks a field, a key
// found twice in the source, or an id the source lacks is an error naming
// it; nothing is written then.
func SearchQA(manifestDir string, sources []string, out string) (Counts, error) {
	return byID(manifestDir, sources, out, byIDSpec{
		benchmark: "SearchQA", keyField: "key",
		fields: []string{"id", "question", "context", "answers"},
		item:   searchQAItem,
	})
}

func searchQAItem(key string, row map[string]any) (map[string]any, error) {
	var missing []string
	for _, f := range []string{"question", "context", "answers"} {
		if _, ok := row[f]; !ok {
			missing = append(missing, f)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("missing field(s) %s", strings.Join(missing, ", "))
	}
	q, ok1 := row["question"].(string)
	c, ok2 := row["context"].(string)
	if !ok1 || !ok2 {
		return nil, fmt.Errorf("question and context must be strings")
	}
	var answers []any
	switch a := row["answers"].(type) {
	case []any:
		for i, s := range a {
			if _, ok := s.(string); !ok {
				return nil, fmt.Errorf("answers[%d] is not a string", i)
			}
		}
		answers = a
	case string:
		answers = []any{a}
	default:
		return nil, fmt.Errorf("answers must be a list of strings")
	}
	item := map[string]any{"id": key, "question": q, "context": c, "answers": answers}
	// SearchQA items may carry a task type (the loader groups failures by it).
	if tt, ok := row["task_type"].(string); ok && tt != "" {
		item["task_type"] = tt
	}
	return item, nil
}
