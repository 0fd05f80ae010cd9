package materialize

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// setManifestBenchmark rewrites a test manifest's head as SkillOpt's for
// another benchmark (no source_id_field: the benchmark's own key).
func setManifestBenchmark(t *testing.T, dir, benchmark string) {
	t.Helper()
	head := `{"benchmark": "` + benchmark + `", "manifest_type": "id_split", "item_fields": ["id"]}`
	if err := os.WriteFile(filepath.Join(dir, "split_manifest.json"), []byte(head), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readItems(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var items []map[string]any
	if err := json.Unmarshal(b, &items); err != nil {
		t.Fatal(err)
	}
	return items
}

// OfficeQA from officeqa_full.csv (quoted cells with newlines, a BOM on
// the header): the manifest's uids in its order, the answer as
// ground_truth, the category as task type, file lists split by line.
func TestOfficeQAFromCSV(t *testing.T) {
	dir := t.TempDir()
	man := filepath.Join(dir, "officeqa_id_split")
	writeManifest(t, man, map[string][]string{"train": {"UID0002"}, "val": {"UID0007"}, "test": {"UID0003", "UID0002x"}})
	setManifestBenchmark(t, man, "OfficeQA")
	csvText := "\ufeffuid,question,answer,source_docs,source_files,difficulty\n" +
		"UID0002,What was the total?,\"1,234\",https://example.invalid/a,treasury_bulletin_1944_01.txt,easy\n" +
		"UID0003,\"Two lines,\nof question\",42,,\"treasury_bulletin_1941_01.txt\r\ntreasury_bulletin_1941_02.txt\",hard\n" +
		"UID0007,Which year?,1950,,treasury_bulletin_1950_03.txt,hard\n" +
		"UID0002x,Another?,7,,treasury_bulletin_1960_01.txt,easy\n" +
		"UID9999,Not in the split,0,,x.txt,easy\n"
	src := filepath.Join(dir, "officeqa_full.csv")
	if err := os.WriteFile(src, []byte(csvText), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "officeqa_split")
	counts, err := OfficeQA(man, []string{src}, out)
	if err != nil {
		t.Fatal(err)
	}
	if counts["train"] != 1 || counts["val"] != 1 || counts["test"] != 2 {
		t.Fatalf("counts %v", counts)
	}
	test := readItems(t, filepath.Join(out, "test", "items.json"))
	if test[0]["id"] != "UID0003" || test[1]["id"] != "UID0002x" {
		t.Errorf("test ids out of the manifest's order: %v", test)
	}
	if test[0]["question"] != "Two lines,\nof question" || test[0]["ground_truth"] != "42" || test[0]["task_type"] != "hard" {
		t.Errorf("item %v", test[0])
	}
	if files, _ := test[0]["source_files"].([]any); len(files) != 2 || files[1] != "treasury_bulletin_1941_02.txt" {
		t.Errorf("source_files %v", test[0]["source_files"])
	}
	train := readItems(t, filepath.Join(out, "train", "items.json"))
	if train[0]["ground_truth"] != "1,234" {
		t.Errorf("a quoted answer with a comma: %v", train[0]["ground_truth"])
	}
	// A wanted row without its answer is refused, naming the file's row.
	bad := strings.Replace(csvText, "Which year?,1950,", "Which year?,,", 1)
	if err := os.WriteFile(src, []byte(bad), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := OfficeQA(man, []string{src}, filepath.Join(dir, "again")); err == nil || !strings.Contains(err.Error(), "row 4: uid UID0007: field answer") {
		t.Errorf("missing answer: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "again")); err == nil {
		t.Error("a refused source still wrote the split")
	}
}

// SpreadsheetBench from Verified 400 unpacked: the task rows of its
// dataset.json for the manifest's ids, each task's workbooks copied under
// the output where the benchmark looks; a task whose directory is missing
// is refused before anything is written.
func TestSpreadsheetBenchFromVerified(t *testing.T) {
	dir := t.TempDir()
	man := filepath.Join(dir, "spreadsheetbench_id_split")
	writeManifest(t, man, map[string][]string{"train": {"52532"}, "val": {"41-47"}, "test": {"59794"}})
	setManifestBenchmark(t, man, "SpreadsheetBench")
	src := filepath.Join(dir, "spreadsheetbench_verified_400")
	rows := []map[string]any{
		{"id": 52532, "instruction": "Sum A1:A3 into B1.", "instruction_type": "Cell-Level Manipulation", "answer_position": "B1", "spreadsheet_path": "spreadsheet/52532"},
		{"id": "41-47", "instruction": "Add a total row.", "instruction_type": "Sheet-Level Manipulation", "answer_position": "'Data'!A1:B9", "answer_sheet": "Data", "spreadsheet_path": "spreadsheet/41-47"},
		{"id": "59794", "instruction": "Fill C2.", "instruction_type": "Cell-Level Manipulation", "answer_position": "C2", "spreadsheet_path": "spreadsheet/59794"},
		{"id": "99999", "instruction": "Unused.", "instruction_type": "Cell-Level Manipulation", "answer_position": "A1", "spreadsheet_path": "spreadsheet/99999"},
	}
	b, _ := json.Marshal(rows)
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "dataset.json"), b, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"52532", "41-47", "59794"} {
		d := filepath.Join(src, "spreadsheet", id)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"1_" + id + "_init.xlsx", "1_" + id + "_golden.xlsx"} {
			if err := os.WriteFile(filepath.Join(d, f), []byte("workbook "+f), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	out := filepath.Join(dir, "spreadsheetbench_split")
	counts, err := SpreadsheetBench(man, []string{src}, out)
	if err != nil {
		t.Fatal(err)
	}
	if counts["train"] != 1 || counts["val"] != 1 || counts["test"] != 1 {
		t.Fatalf("counts %v", counts)
	}
	val := readItems(t, filepath.Join(out, "val", "items.json"))
	if val[0]["answer_sheet"] != "Data" || val[0]["spreadsheet_path"] != "spreadsheet/41-47" || val[0]["instruction"] != "Add a total row." {
		t.Errorf("item %v", val[0])
	}
	if got, err := os.ReadFile(filepath.Join(out, "spreadsheet", "52532", "1_52532_golden.xlsx")); err != nil || string(got) != "workbook 1_52532_golden.xlsx" {
		t.Errorf("copied workbook: %q, %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(out, "spreadsheet", "99999")); err == nil {
		t.Error("a task outside the manifest was copied")
	}
	if err := os.RemoveAll(filepath.Join(src, "spreadsheet", "59794")); err != nil {
		t.Fatal(err)
	}
	again := filepath.Join(dir, "again")
	if _, err := SpreadsheetBench(man, []string{src}, again); err == nil || !strings.Contains(err.Error(), "id 59794: no directory of workbooks") {
		t.Errorf("missing workbooks: %v", err)
	}
	if _, err := os.Stat(again); err == nil {
		t.Error("a refused source still wrote the split")
	}
}
