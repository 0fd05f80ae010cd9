package spreadsheet

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"
)

// book writes a workbook: cells maps "Sheet!A1" to a value; a value of
// type dateCell gets a date style, timeCell a time style.
type (
	dateCell time.Time
	timeCell float64
	formula  string
)

func book(t *testing.T, path string, cells map[string]any) string {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	dateStyle, _ := f.NewStyle(&excelize.Style{NumFmt: 14})
	timeStyle, _ := f.NewStyle(&excelize.Style{NumFmt: 20})
	for ref, v := range cells {
		sheet, cell, _ := strings.Cut(ref, "!")
		if _, err := f.GetSheetIndex(sheet); err == nil {
			if idx, _ := f.GetSheetIndex(sheet); idx < 0 {
				if _, err := f.NewSheet(sheet); err != nil {
					t.Fatal(err)
				}
			}
		}
		var err error
		switch x := v.(type) {
		case dateCell:
			err = f.SetCellValue(sheet, cell, time.Time(x))
			if err == nil {
				err = f.SetCellStyle(sheet, cell, cell, dateStyle)
			}
		case timeCell:
			err = f.SetCellFloat(sheet, cell, float64(x), -1, 64)
			if err == nil {
				err = f.SetCellStyle(sheet, cell, cell, timeStyle)
			}
		case formula:
			err = f.SetCellFormula(sheet, cell, string(x))
		default:
			err = f.SetCellValue(sheet, cell, v)
		}
		if err != nil {
			t.Fatalf("%s = %v: %v", ref, v, err)
		}
	}
	if err := f.SaveAs(path); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestCompareRules(t *testing.T) {
	dir := t.TempDir()
	day := time.Date(2020, 1, 2, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name       string
		gold, pred map[string]any
		pos        string
		match      bool
	}{
		{"equal numbers", map[string]any{"Sheet1!A1": 6}, map[string]any{"Sheet1!A1": 6.0}, "A1", true},
		// round(float(v), 2): 3.14159 and 3.141 both become 3.14.
		{"rounded to 2 places", map[string]any{"Sheet1!A1": 3.14159}, map[string]any{"Sheet1!A1": 3.141}, "A1", true},
		{"differ after rounding", map[string]any{"Sheet1!A1": 3.14}, map[string]any{"Sheet1!A1": 3.15}, "A1", false},
		// A numeric string in a cell is a number.
		{"numeric string", map[string]any{"Sheet1!A1": 42}, map[string]any{"Sheet1!A1": " 42.0 "}, "A1", true},
		// A bool is round(float(True), 2) = 1.0.
		{"bool as number", map[string]any{"Sheet1!A1": 1}, map[string]any{"Sheet1!A1": true}, "A1", true},
		{"text vs number", map[string]any{"Sheet1!A1": 42}, map[string]any{"Sheet1!A1": "forty-two"}, "A1", false},
		{"text equal", map[string]any{"Sheet1!A1": "Paid"}, map[string]any{"Sheet1!A1": "Paid"}, "A1", true},
		{"text case matters", map[string]any{"Sheet1!A1": "Paid"}, map[string]any{"Sheet1!A1": "paid"}, "A1", false},
		// "" and a missing cell are both None.
		{"empty vs missing", map[string]any{"Sheet1!A1": ""}, map[string]any{"Sheet1!B1": 1}, "A1", true},
		{"missing vs value", map[string]any{}, map[string]any{"Sheet1!A1": 0}, "A1", false},
		// Dates compare as serial days rounded to 0 places: a date and the
		// same date written as its serial number (43832) match.
		{"date vs serial", map[string]any{"Sheet1!A1": dateCell(day)}, map[string]any{"Sheet1!A1": 43832}, "A1", true},
		{"date vs other date", map[string]any{"Sheet1!A1": dateCell(day)}, map[string]any{"Sheet1!A1": dateCell(day.AddDate(0, 0, 1))}, "A1", false},
		// Times become "HH:MM" text: 0.5 day is "12:00"; the text "12:00" matches.
		{"time as text", map[string]any{"Sheet1!A1": timeCell(0.5)}, map[string]any{"Sheet1!A1": "12:00"}, "A1", true},
		// A formula openpyxl wrote has no cached value: it reads as None.
		{"formula without value", map[string]any{"Sheet1!A1": 6}, map[string]any{"Sheet1!A1": formula("SUM(1,2,3)")}, "A1", false},
		{"range and list", map[string]any{"Sheet1!A1": 1, "Sheet1!B2": 2, "Sheet1!D4": "x"},
			map[string]any{"Sheet1!A1": 1, "Sheet1!B2": 2, "Sheet1!D4": "x"}, "A1:B2, D4", true},
		{"one cell of a range differs", map[string]any{"Sheet1!A1": 1, "Sheet1!B2": 2}, map[string]any{"Sheet1!A1": 1, "Sheet1!B2": 3}, "A1:B2", false},
		{"sheet-qualified", map[string]any{"Data!C3": 9}, map[string]any{"Data!C3": 9}, "'Data'!C3", true},
		{"missing sheet", map[string]any{"Data!C3": 9}, map[string]any{"Sheet1!C3": 9}, "Data!C3", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := book(t, filepath.Join(dir, tc.name+"-gold.xlsx"), tc.gold)
			p := book(t, filepath.Join(dir, tc.name+"-pred.xlsx"), tc.pred)
			diff, err := Compare(p, g, tc.pos)
			if err != nil {
				t.Fatal(err)
			}
			if (diff == "") != tc.match {
				t.Errorf("match = %v (diff %q), want %v", diff == "", diff, tc.match)
			}
		})
	}
	if _, err := ParsePositions("A1:ZZZZ9"); err == nil {
		t.Error("bad position accepted")
	}
	if d, _ := Compare(filepath.Join(dir, "nope.xlsx"), book(t, filepath.Join(dir, "g.xlsx"), map[string]any{"Sheet1!A1": 1}), "A1"); !strings.Contains(d, "cannot be opened") {
		t.Errorf("missing output: %q", d)
	}
}

func TestPyRound(t *testing.T) {
	// Python: round(2.675, 2) == 2.67 (2.675 is 2.67499999… in binary);
	// round(0.125, 2) == 0.12 (exact tie, to even); round(0.5, 0) == 0.0.
	for _, tc := range []struct {
		x    float64
		n    int
		want float64
	}{{2.675, 2, 2.67}, {0.125, 2, 0.12}, {0.375, 2, 0.38}, {0.5, 0, 0}, {1.5, 0, 2}, {43832.4, 0, 43832}} {
		if got := pyRound(tc.x, tc.n); got != tc.want {
			t.Errorf("pyRound(%v, %d) = %v, want %v", tc.x, tc.n, got, tc.want)
		}
	}
}

// findPython returns an interpreter that can import openpyxl.
func findPython(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"/usr/bin/python3", "python3"} {
		if exec.Command(p, "-c", "import openpyxl").Run() == nil {
			return p
		}
	}
	if os.Getenv("CI") != "" {
		t.Fatal("no python3 with openpyxl (CI is set: apt-get install python3-openpyxl)")
	}
	t.Skip("no python3 with openpyxl here (apt-get install python3-openpyxl)")
	return ""
}
