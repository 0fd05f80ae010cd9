package spreadsheet

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FindPython is findPython for the external tests.
var FindPython = findPython

// fixtureCase is one test case of a testdata item: input and gold cells.
type fixtureCase struct{ input, gold map[string]any }

// fixtureBooks are the workbooks of testdata/spreadsheet/<id>/, by item id
// and file-name style ("answer": N_<id>_input/answer, "golden":
// N_<id>_init/golden, "initial": initial.xlsx/golden.xlsx). The items
// themselves are in testdata/split/*/items.json.
var fixtureBooks = []struct {
	id, style string
	cases     []fixtureCase
}{
	// 101-1: D = Qty × Price for rows 2-4 (2×3.5 = 7, 4×1.25 = 5, 10×0.99 = 9.9).
	{"101-1", "answer", []fixtureCase{
		{map[string]any{"Sheet1!A1": "Item", "Sheet1!B1": "Qty", "Sheet1!C1": "Price", "Sheet1!D1": "Total",
			"Sheet1!A2": "pen", "Sheet1!B2": 2, "Sheet1!C2": 3.5, "Sheet1!A3": "pad", "Sheet1!B3": 4, "Sheet1!C3": 1.25,
			"Sheet1!A4": "clip", "Sheet1!B4": 10, "Sheet1!C4": 0.99},
			map[string]any{"Sheet1!D2": 7, "Sheet1!D3": 5, "Sheet1!D4": 9.9}},
		// Second case, other numbers: 1×100 = 100, 3×0.5 = 1.5, 0×7 = 0.
		{map[string]any{"Sheet1!A1": "Item", "Sheet1!B1": "Qty", "Sheet1!C1": "Price", "Sheet1!D1": "Total",
			"Sheet1!A2": "desk", "Sheet1!B2": 1, "Sheet1!C2": 100, "Sheet1!A3": "tape", "Sheet1!B3": 3, "Sheet1!C3": 0.5,
			"Sheet1!A4": "ink", "Sheet1!B4": 0, "Sheet1!C4": 7},
			map[string]any{"Sheet1!D2": 100, "Sheet1!D3": 1.5, "Sheet1!D4": 0}},
	}},
	// 102-3: the Open tickets (T1, T3) copied with the header to sheet Open.
	{"102-3", "golden", []fixtureCase{
		{map[string]any{"Tickets!A1": "Ticket", "Tickets!B1": "Status", "Tickets!A2": "T1", "Tickets!B2": "Open",
			"Tickets!A3": "T2", "Tickets!B3": "Closed", "Tickets!A4": "T3", "Tickets!B4": "Open"},
			map[string]any{"Open!A1": "Ticket", "Open!B1": "Status", "Open!A2": "T1", "Open!B2": "Open", "Open!A3": "T3", "Open!B3": "Open"}},
	}},
	// 203: the latest order date of A2:A4 (2024-03-15) into B1, as a date.
	{"203", "initial", []fixtureCase{
		{map[string]any{"Orders!A1": "Ordered", "Orders!A2": dateCell(time.Date(2024, 1, 5, 0, 0, 0, 0, time.UTC)),
			"Orders!A3": dateCell(time.Date(2024, 3, 15, 0, 0, 0, 0, time.UTC)), "Orders!A4": dateCell(time.Date(2023, 12, 31, 0, 0, 0, 0, time.UTC))},
			map[string]any{"Orders!B1": dateCell(time.Date(2024, 3, 15, 0, 0, 0, 0, time.UTC))}},
	}},
	// 204: how many of A1:A5 hold a value (3) into C1.
	{"204", "answer", []fixtureCase{
		{map[string]any{"Sheet1!A1": "x", "Sheet1!A3": 4, "Sheet1!A5": "y"}, map[string]any{"Sheet1!C1": 3}},
	}},
	// 305: the names in A2:A4 upper-cased in place.
	{"305", "answer", []fixtureCase{
		{map[string]any{"Sheet1!A1": "Name", "Sheet1!A2": "ada", "Sheet1!A3": "Grace", "Sheet1!A4": "linus"},
			map[string]any{"Sheet1!A2": "ADA", "Sheet1!A3": "GRACE", "Sheet1!A4": "LINUS"}},
	}},
	// 306: the average of B2:B5 ((3+4+5+8)/4 = 5) into B6.
	{"306", "golden", []fixtureCase{
		{map[string]any{"Sheet1!A1": "Week", "Sheet1!B1": "Hours", "Sheet1!B2": 3, "Sheet1!B3": 4, "Sheet1!B4": 5, "Sheet1!B5": 8},
			map[string]any{"Sheet1!B6": 5}},
	}},
}

// TestWriteFixtures regenerates testdata/spreadsheet/ when
// SKILLFLEET_WRITE_FIXTURES is set; the gold workbook of a case is its
// input with the gold cells added.
func TestWriteFixtures(t *testing.T) {
	if os.Getenv("SKILLFLEET_WRITE_FIXTURES") == "" {
		t.Skip("set SKILLFLEET_WRITE_FIXTURES=1 to rewrite testdata/spreadsheet")
	}
	for _, it := range fixtureBooks {
		dir := filepath.Join("testdata", "spreadsheet", it.id)
		if err := os.RemoveAll(dir); err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for n, c := range it.cases {
			gold := map[string]any{}
			for k, v := range c.input {
				gold[k] = v
			}
			for k, v := range c.gold {
				gold[k] = v
			}
			var in, out string
			switch it.style {
			case "answer":
				in, out = fmt.Sprintf("%d_%s_input.xlsx", n+1, it.id), fmt.Sprintf("%d_%s_answer.xlsx", n+1, it.id)
			case "golden":
				in, out = fmt.Sprintf("%d_%s_init.xlsx", n+1, it.id), fmt.Sprintf("%d_%s_golden.xlsx", n+1, it.id)
			default:
				in, out = "initial.xlsx", "golden.xlsx"
			}
			book(t, filepath.Join(dir, in), c.input)
			book(t, filepath.Join(dir, out), gold)
		}
	}
}
