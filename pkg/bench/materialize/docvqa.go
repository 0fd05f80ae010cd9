package materialize

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// DocVQA writes runnable DocVQA splits: for each id of the manifest
// (SkillOpt's data/docvqa_id_split, DocVQA's questionId), the row of the
// source (lmms-lab/DocVQA's validation shards, Parquet) with that
// questionId, as {id, question, answers, image_path, task_type}, and the
// row's page image written to out/<image_path> (the manifest's path, where
// the benchmark looks by default). A row without a question, answers or
// image bytes is an error before anything is written.
func DocVQA(manifestDir string, sources []string, out string) (Counts, error) {
	m, err := ReadManifest(manifestDir)
	if err != nil {
		return nil, err
	}
	images := map[string][]byte{} // image_path -> bytes
	counts, err := byIDOf(m, sources, out, byIDSpec{
		benchmark: "DocVQA", keyField: "questionId",
		fields: []string{"id", "question", "answers", "image_path", "task_type"},
		item: func(id string, row map[string]any) (map[string]any, error) {
			item, img, err := docVQAItem(id, row, m.Items[id])
			if err != nil {
				return nil, err
			}
			images[item["image_path"].(string)] = img
			return item, nil
		},
	})
	if err != nil {
		return nil, err
	}
	for p, img := range images {
		dst := filepath.Join(out, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(dst, img, 0o644); err != nil {
			return nil, err
		}
	}
	return counts, nil
}

func docVQAItem(id string, row, hint map[string]any) (map[string]any, []byte, error) {
	q := strings.TrimSpace(text(row["question"]))
	if q == "" {
		return nil, nil, fmt.Errorf("field question is missing or empty")
	}
	var answers []any
	if as, ok := row["answers"].([]any); ok {
		for _, a := range as {
			if s := strings.TrimSpace(text(a)); s != "" {
				answers = append(answers, s)
			}
		}
	}
	if len(answers) == 0 {
		return nil, nil, fmt.Errorf("field answers: want a non-empty list of strings")
	}
	var img []byte
	switch v := row["image"].(type) {
	case map[string]any: // Hugging Face's image feature: {bytes, path}
		img = []byte(text(v["bytes"]))
	case string:
		img = []byte(v)
	}
	if len(img) == 0 {
		return nil, nil, fmt.Errorf("field image: no image bytes")
	}
	path := strings.TrimSpace(text(hint["image_path"]))
	if path == "" {
		path = "images/" + id + ".png"
	}
	if filepath.IsAbs(path) || strings.Contains("/"+filepath.ToSlash(path)+"/", "/../") {
		return nil, nil, fmt.Errorf("image_path %q leaves the output", path)
	}
	item := map[string]any{"id": id, "question": q, "answers": answers, "image_path": path}
	// The task type: the manifest's topic, else the row's first
	// question type.
	taskType := strings.TrimSpace(text(hint["topic"]))
	if ts, ok := row["question_types"].([]any); ok && len(ts) > 0 && taskType == "" {
		taskType = strings.TrimSpace(text(ts[0]))
	}
	if taskType != "" {
		item["task_type"] = taskType
	}
	return item, img, nil
}
