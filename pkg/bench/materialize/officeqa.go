package materialize

import (
	"encoding/json"
	"fmt"
	"strings"
)

// OfficeQA writes runnable OfficeQA splits: for each id of the manifest
// (SkillOpt's data/officeqa_id_split), the row of the source
// (databricks/officeqa's officeqa_full.csv, or the same rows as JSON,
// JSON Lines or Parquet) whose uid equals it, as {id, question,
// ground_truth, task_type, source_files, source_docs}. The supporting
// documents are not copied: env.docs_dir names where they are.
func OfficeQA(manifestDir string, sources []string, out string) (Counts, error) {
	return byID(manifestDir, sources, out, byIDSpec{
		benchmark: "OfficeQA", keyField: "uid",
		fields: []string{"id", "question", "ground_truth", "task_type", "source_files", "source_docs"},
		item:   officeQAItem,
	})
}

func officeQAItem(id string, row map[string]any) (map[string]any, error) {
	q := strings.TrimSpace(text(row["question"]))
	answer := strings.TrimSpace(text(row["answer"]))
	if a := strings.TrimSpace(text(row["ground_truth"])); a != "" {
		answer = a
	}
	switch {
	case q == "":
		return nil, fmt.Errorf("field question is missing or empty")
	case answer == "":
		return nil, fmt.Errorf("field answer (or ground_truth) is missing or empty")
	}
	taskType := strings.TrimSpace(text(row["category"]))
	if taskType == "" {
		taskType = strings.TrimSpace(text(row["difficulty"]))
	}
	item := map[string]any{"id": id, "question": q, "ground_truth": answer,
		"source_files": listField(row["source_files"]), "source_docs": listField(row["source_docs"])}
	if taskType != "" {
		item["task_type"] = taskType
	}
	return item, nil
}

// text is a cell's text ("" for none).
func text(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	default:
		return fmt.Sprint(x)
	}
}

// listField reads a list cell as the dataset writes it: a JSON list, one
// entry per line, or a single entry (file names may hold commas only in a
// list). Empty entries are dropped.
func listField(v any) []string {
	var out []string
	add := func(s string) {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			add(text(e))
		}
		return out
	case nil:
		return []string{}
	}
	s := strings.TrimSpace(text(v))
	var list []any
	if strings.HasPrefix(s, "[") && json.Unmarshal([]byte(s), &list) == nil {
		return listField(list)
	}
	for _, line := range strings.Split(strings.ReplaceAll(s, "\r\n", "\n"), "\n") {
		add(line)
	}
	if out == nil {
		out = []string{}
	}
	return out
}
