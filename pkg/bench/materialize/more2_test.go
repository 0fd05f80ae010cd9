package materialize

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go"
)

// LiveMathematicianBench from its monthly files: ids "<month>:<no>", the
// multiple-choice part under mcq or at the top, choices as objects, bare
// texts or a map, the correct choice as an object or a label.
func TestLiveMathFromMonthlyFiles(t *testing.T) {
	dir := t.TempDir()
	man := filepath.Join(dir, "livemathematicianbench_id_split")
	writeManifest(t, man, map[string][]string{"train": {"202602:12"}, "val": {"202601:3"}, "test": {"202601:4"}})
	setManifestBenchmark(t, man, "LiveMathematicianBench")
	write := func(name string, rows []map[string]any) {
		b, _ := json.Marshal(rows)
		p := filepath.Join(dir, "src", "data", name[3:9], name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("qa_202601_final.json", []map[string]any{
		{"month": "202601", "no": 3, "theorem": "T", "theorem_type": "inequality", "paper_link": "http://arxiv.org/abs/2601.0",
			"mcq": map[string]any{"question": "Which bound?", "choices": []any{map[string]any{"label": "A", "text": "x"}, map[string]any{"label": "B", "text": "y"}}, "correct_choice": map[string]any{"label": "B", "text": "y"}}},
		{"no": 4, "question": "Which one?", "choices": []any{"first", "second", "third"}, "correct_choice": "c."},
	})
	write("qa_202602_final.json", []map[string]any{
		{"month": "202602", "no": 12, "question": "Pick", "choices": map[string]any{"B": "two", "A": "one"}, "correct_choice": "A"},
	})
	out := filepath.Join(dir, "livemath_split")
	counts, err := LiveMath(man, []string{filepath.Join(dir, "src")}, out)
	if err != nil {
		t.Fatal(err)
	}
	if counts["train"] != 1 || counts["val"] != 1 || counts["test"] != 1 {
		t.Fatalf("counts %v", counts)
	}
	val := readItems(t, filepath.Join(out, "val", "items.json"))[0]
	if val["question"] != "Which bound?" || val["theorem"] != "T" || val["correct_choice"].(map[string]any)["label"] != "B" {
		t.Errorf("mcq item %v", val)
	}
	test := readItems(t, filepath.Join(out, "test", "items.json"))[0]
	if test["id"] != "202601:4" || test["correct_choice"].(map[string]any)["text"] != "third" || len(test["choices"].([]any)) != 3 {
		t.Errorf("month from the file name, bare choices, label-only answer: %v", test)
	}
	train := readItems(t, filepath.Join(out, "train", "items.json"))[0]
	if cs := train["choices"].([]any); cs[0].(map[string]any)["label"] != "A" || train["correct_choice"].(map[string]any)["text"] != "one" {
		t.Errorf("map choices: %v", train)
	}
	// A correct choice that names no choice is refused, naming the row.
	write("qa_202602_final.json", []map[string]any{{"month": "202602", "no": 12, "question": "Pick", "choices": []any{"a", "b"}, "correct_choice": "E"}})
	if _, err := LiveMath(man, []string{filepath.Join(dir, "src")}, filepath.Join(dir, "again")); err == nil || !strings.Contains(err.Error(), `202602:12: field correct_choice: "E"`) {
		t.Errorf("bad correct choice: %v", err)
	}
}

// docRow is a row laid out as lmms-lab/DocVQA publishes it (the image as
// Hugging Face's {bytes, path} struct).
type docRow struct {
	QuestionID    string   `parquet:"questionId"`
	Question      string   `parquet:"question"`
	QuestionTypes []string `parquet:"question_types,list"`
	Image         struct {
		Bytes []byte `parquet:"bytes"`
		Path  string `parquet:"path"`
	} `parquet:"image"`
	DocID   int64    `parquet:"docId"`
	Answers []string `parquet:"answers,list"`
}

// DocVQA from its Parquet shards: the manifest's questionIds, each page
// image written where the manifest's image_path says, the topic as task
// type; a row without answers is refused before anything is written.
func TestDocVQAFromParquet(t *testing.T) {
	dir := t.TempDir()
	man := filepath.Join(dir, "docvqa_id_split")
	writeManifest(t, man, map[string][]string{"train": {"63180"}, "val": {"5370"}, "test": {"777"}})
	setManifestBenchmark(t, man, "DocVQA")
	// SkillOpt's manifest carries the image path and topic per id.
	b, _ := json.Marshal([]map[string]string{{"id": "63180", "questionId": "63180", "image_path": "data/docvqa_images/q63180_d9099.png", "topic": "table/list"}})
	if err := os.WriteFile(filepath.Join(man, "train", "items.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	mk := func(id string, answers ...string) docRow {
		r := docRow{QuestionID: id, Question: "What is " + id + "?", QuestionTypes: []string{"form"}, DocID: 9099, Answers: answers}
		r.Image.Bytes, r.Image.Path = []byte("\x89PNG page "+id), id+".png"
		return r
	}
	writeShard := func(rows []docRow) string {
		var buf bytes.Buffer
		w := parquet.NewGenericWriter[docRow](&buf)
		if _, err := w.Write(rows); err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "validation-00000-of-00001.parquet")
		if err := os.WriteFile(p, buf.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	src := writeShard([]docRow{mk("63180", "42", "forty-two"), mk("5370", "yes"), mk("777", "Paris"), mk("999", "unused")})
	out := filepath.Join(dir, "docvqa_split")
	counts, err := DocVQA(man, []string{src}, out)
	if err != nil {
		t.Fatal(err)
	}
	if counts["train"] != 1 || counts["val"] != 1 || counts["test"] != 1 {
		t.Fatalf("counts %v", counts)
	}
	train := readItems(t, filepath.Join(out, "train", "items.json"))[0]
	if train["image_path"] != "data/docvqa_images/q63180_d9099.png" || train["task_type"] != "table/list" || len(train["answers"].([]any)) != 2 {
		t.Errorf("item %v", train)
	}
	if img, err := os.ReadFile(filepath.Join(out, "data", "docvqa_images", "q63180_d9099.png")); err != nil || string(img) != "\x89PNG page 63180" {
		t.Errorf("page image: %q, %v", img, err)
	}
	test := readItems(t, filepath.Join(out, "test", "items.json"))[0]
	if test["image_path"] != "images/777.png" || test["task_type"] != "form" {
		t.Errorf("an id without hints: %v", test)
	}
	src = writeShard([]docRow{mk("63180", "42"), mk("5370"), mk("777", "Paris")})
	again := filepath.Join(dir, "again")
	if _, err := DocVQA(man, []string{src}, again); err == nil || !strings.Contains(err.Error(), "questionId 5370: field answers") {
		t.Errorf("row without answers: %v", err)
	}
	if _, err := os.Stat(again); err == nil {
		t.Error("a refused source still wrote the split")
	}
}
