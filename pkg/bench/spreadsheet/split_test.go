package spreadsheet_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/benchtest"
	"github.com/skillfleet/skillfleet/pkg/bench/registry"
	"github.com/skillfleet/skillfleet/pkg/bench/spreadsheet"
)

// solutions are correct programs for the testdata items, by id.
var solutions = map[string]string{
	"101-1": `import openpyxl
wb = openpyxl.load_workbook(INPUT_PATH)
ws = wb["Sheet1"]
for r in range(2, 5):
    ws.cell(row=r, column=4).value = ws.cell(row=r, column=2).value * ws.cell(row=r, column=3).value
wb.save(OUTPUT_PATH)`,
	"102-3": `import openpyxl
wb = openpyxl.load_workbook(INPUT_PATH)
src = wb["Tickets"]
dst = wb.create_sheet("Open")
rows = [r for i, r in enumerate(src.iter_rows(values_only=True)) if i == 0 or r[1] == "Open"]
for r in rows:
    dst.append(list(r))
wb.save(OUTPUT_PATH)`,
	"203": `import openpyxl
wb = openpyxl.load_workbook(INPUT_PATH)
ws = wb["Orders"]
ws["B1"] = max(ws.cell(row=r, column=1).value for r in range(2, 5))
ws["B1"].number_format = "yyyy-mm-dd"
wb.save(OUTPUT_PATH)`,
	"204": `import openpyxl
wb = openpyxl.load_workbook(INPUT_PATH)
ws = wb.active
ws["C1"] = sum(1 for r in range(1, 6) if ws.cell(row=r, column=1).value not in (None, ""))
wb.save(OUTPUT_PATH)`,
	"305": `import openpyxl
wb = openpyxl.load_workbook(INPUT_PATH)
ws = wb["Sheet1"]
for r in range(2, 5):
    ws.cell(row=r, column=1).value = ws.cell(row=r, column=1).value.upper()
wb.save(OUTPUT_PATH)`,
	"306": `import openpyxl
wb = openpyxl.load_workbook(INPUT_PATH)
ws = wb.active
hours = [ws.cell(row=r, column=2).value for r in range(2, 6)]
ws["B6"] = sum(hours) / len(hours)
wb.save(OUTPUT_PATH)`,
}

// TestSplitDirThroughRegistry reads testdata/split the way a run does
// (registry load options, split_dir config, data root defaulting to the
// split dir's parent) and solves every item with its program; the formula
// answer to 306 (openpyxl stores no value for it) fails.
func TestSplitDirThroughRegistry(t *testing.T) {
	python := spreadsheet.FindPython(t)
	splitDir, err := filepath.Abs(filepath.Join("testdata", "split"))
	if err != nil {
		t.Fatal(err)
	}
	splits, err := registry.LoadSplits(spreadsheet.Name, splitDir, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, sp := range [][]bench.Item{splits.Train, splits.Val, splits.Test} {
		for _, it := range sp {
			ids = append(ids, it.ID)
		}
	}
	// 204 is a JSON number in the file; its id is the text "204".
	if got := strings.Join(ids, " "); got != "101-1 102-3 203 204 305 306" {
		t.Fatalf("ids = %s", got)
	}
	cfg, _ := json.Marshal(map[string]any{"name": "spreadsheet", "split_dir": splitDir, "python": python, "exec_timeout": "30s", "max_turns": 0})
	env, err := registry.New(spreadsheet.Name, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, sp := range [][]bench.Item{splits.Train, splits.Val, splits.Test} {
		for _, it := range sp {
			ep, err := env.Episode(context.Background(), benchtest.Text("```python\n"+solutions[it.ID]+"\n```"), bench.EpisodeRequest{Item: it})
			if err != nil {
				t.Fatalf("%s: %v", it.ID, err)
			}
			if ep.Hard != 1 || ep.Soft != 1 {
				t.Errorf("%s: hard %v soft %v: %s", it.ID, ep.Hard, ep.Soft, ep.FailReason)
			}
		}
	}
	// 101-1 has two cases; a program right only on the first (hard-coded
	// totals 7, 5, 9.9) passes one of two: soft 0.5, hard 0.
	hardCoded := "```python\nimport openpyxl\nwb = openpyxl.load_workbook(INPUT_PATH)\nws = wb.active\nws['D2'], ws['D3'], ws['D4'] = 7, 5, 9.9\nwb.save(OUTPUT_PATH)\n```"
	ep, err := env.Episode(context.Background(), benchtest.Text(hardCoded), bench.EpisodeRequest{Item: splits.Train[0]})
	if err != nil || ep.Hard != 0 || ep.Soft != 0.5 || !strings.Contains(ep.FailReason, "case 2: wrong cells: Sheet1!D2: expected 100, got 7") {
		t.Errorf("half right: %v, hard %v soft %v, %q", err, ep.Hard, ep.Soft, ep.FailReason)
	}
	// A formula is stored without a value: B6 reads empty, not 5.
	formula := "```python\nimport openpyxl\nwb = openpyxl.load_workbook(INPUT_PATH)\nwb.active['B6'] = '=AVERAGE(B2:B5)'\nwb.save(OUTPUT_PATH)\n```"
	ep, err = env.Episode(context.Background(), benchtest.Text(formula), bench.EpisodeRequest{Item: splits.Test[1]})
	if err != nil || ep.Hard != 0 || !strings.Contains(ep.FailReason, "Sheet1!B6: expected 5, got empty") {
		t.Errorf("formula answer: %v, hard %v, %q", err, ep.Hard, ep.FailReason)
	}
}
