package spreadsheet

import (
	"archive/zip"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/xuri/excelize/v2"
)

// Cell values book understands besides plain Go values.
type (
	dateCell time.Time // a date with built-in format 14 (mm-dd-yy)
	timeCell float64   // a day fraction with built-in format 20 (h:mm)
	formula  string    // a formula with no cached value (as openpyxl writes one)
	// numFmt is a number with a built-in format id or a custom format code.
	numFmt struct {
		v    float64
		id   int
		code string
	}
	// rawCell replaces the cell's XML in the saved file: attrs and inner
	// XML of <c> (for t="d" dates and formulas with cached values, which
	// excelize does not write).
	rawCell struct{ attrs, inner string }
)

// date1904 as a key of book's cells switches the workbook to the 1904
// date system.
const date1904Key = "@1904"

// book writes a workbook: cells maps "Sheet!A1" to a value. Sheets are
// created in name order; the default Sheet1 is dropped when no cell uses it.
func book(t testing.TB, path string, cells map[string]any) string {
	t.Helper()
	f := excelize.NewFile()
	defer f.Close()
	dateStyle, _ := f.NewStyle(&excelize.Style{NumFmt: 14})
	timeStyle, _ := f.NewStyle(&excelize.Style{NumFmt: 20})
	var refs []string
	usesSheet1 := false
	for ref := range cells {
		if ref == date1904Key {
			yes := true
			if err := f.SetWorkbookProps(&excelize.WorkbookPropsOptions{Date1904: &yes}); err != nil {
				t.Fatal(err)
			}
			continue
		}
		refs = append(refs, ref)
		usesSheet1 = usesSheet1 || strings.HasPrefix(ref, "Sheet1!")
	}
	sort.Strings(refs)
	raws := map[string]rawCell{}
	for _, ref := range refs {
		v := cells[ref]
		sheet, cell, _ := strings.Cut(ref, "!")
		if idx, _ := f.GetSheetIndex(sheet); idx < 0 {
			if _, err := f.NewSheet(sheet); err != nil {
				t.Fatal(err)
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
		case numFmt:
			st := &excelize.Style{NumFmt: x.id}
			if x.code != "" {
				st = &excelize.Style{CustomNumFmt: &x.code}
			}
			var style int
			style, err = f.NewStyle(st)
			if err == nil {
				err = f.SetCellFloat(sheet, cell, x.v, -1, 64)
			}
			if err == nil {
				err = f.SetCellStyle(sheet, cell, cell, style)
			}
		case formula:
			err = f.SetCellFormula(sheet, cell, string(x))
		case rawCell:
			if sheet != "Sheet1" {
				t.Fatalf("rawCell only on Sheet1, not %s", ref)
			}
			raws[cell] = x
			err = f.SetCellValue(sheet, cell, "placeholder")
		default:
			err = f.SetCellValue(sheet, cell, v)
		}
		if err != nil {
			t.Fatalf("%s = %v: %v", ref, v, err)
		}
	}
	if !usesSheet1 && len(refs) > 0 {
		if err := f.DeleteSheet("Sheet1"); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.SaveAs(path); err != nil {
		t.Fatal(err)
	}
	if len(raws) > 0 {
		rewriteCells(t, path, raws)
	}
	return path
}

// rewriteCells replaces cells of xl/worksheets/sheet1.xml in the saved
// workbook with raw XML.
func rewriteCells(t testing.TB, path string, raws map[string]rawCell) {
	t.Helper()
	zr, err := zip.OpenReader(path)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, zf := range zr.File {
		r, err := zf.Open()
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			t.Fatal(err)
		}
		if zf.Name == "xl/worksheets/sheet1.xml" {
			for cell, rc := range raws {
				re := regexp.MustCompile(`<c r="` + cell + `"[^>]*>.*?</c>`)
				if !re.Match(data) {
					t.Fatalf("cell %s not found in sheet1.xml", cell)
				}
				data = re.ReplaceAll(data, []byte(`<c r="`+cell+`" `+rc.attrs+`>`+rc.inner+`</c>`))
			}
		}
		w, err := zw.Create(zf.Name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	zr.Close()
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

type compareCase struct {
	name       string
	gold, pred map[string]any
	pos        string
	match      bool
}

// compareCases is the comparison table, each expectation reasoned from
// SkillOpt's rules in the comment above it.
func compareCases() []compareCase {
	day := time.Date(2020, 1, 2, 0, 0, 0, 0, time.UTC) // Excel serial 43832
	return []compareCase{
		{"equal numbers", map[string]any{"Sheet1!A1": 6}, map[string]any{"Sheet1!A1": 6.0}, "A1", true},
		// round(float(v), 2): 3.14159 and 3.141 both become 3.14.
		{"rounded to 2 places", map[string]any{"Sheet1!A1": 3.14159}, map[string]any{"Sheet1!A1": 3.141}, "A1", true},
		{"differ after rounding", map[string]any{"Sheet1!A1": 3.14}, map[string]any{"Sheet1!A1": 3.15}, "A1", false},
		// A numeric string in a cell is a number: float(" 42.0 ") = 42.0.
		{"numeric string", map[string]any{"Sheet1!A1": 42}, map[string]any{"Sheet1!A1": " 42.0 "}, "A1", true},
		{"numeric strings both sides", map[string]any{"Sheet1!A1": "1e3"}, map[string]any{"Sheet1!A1": "1000.001"}, "A1", true},
		// A bool is round(float(True), 2) = 1.0; False is 0.0.
		{"bool as number", map[string]any{"Sheet1!A1": 1}, map[string]any{"Sheet1!A1": true}, "A1", true},
		{"false as zero", map[string]any{"Sheet1!A1": false}, map[string]any{"Sheet1!A1": 0}, "A1", true},
		{"true vs 2", map[string]any{"Sheet1!A1": true}, map[string]any{"Sheet1!A1": 2}, "A1", false},
		// Different types fail: 42.0 vs the text "forty-two".
		{"text vs number", map[string]any{"Sheet1!A1": 42}, map[string]any{"Sheet1!A1": "forty-two"}, "A1", false},
		{"text equal", map[string]any{"Sheet1!A1": "Paid"}, map[string]any{"Sheet1!A1": "Paid"}, "A1", true},
		{"text case matters", map[string]any{"Sheet1!A1": "Paid"}, map[string]any{"Sheet1!A1": "paid"}, "A1", false},
		{"text spaces matter", map[string]any{"Sheet1!A1": "Paid"}, map[string]any{"Sheet1!A1": "Paid "}, "A1", false},
		// "" and a missing cell are both None.
		{"empty vs missing", map[string]any{"Sheet1!A1": ""}, map[string]any{"Sheet1!B1": 1}, "A1", true},
		{"missing vs value", map[string]any{}, map[string]any{"Sheet1!A1": 0}, "A1", false},
		{"empty vs text", map[string]any{"Sheet1!A1": ""}, map[string]any{"Sheet1!A1": "x"}, "A1", false},
		// Dates compare as serial days rounded to 0 places: a date and the
		// same date written as its serial number (43832) match.
		{"date vs serial", map[string]any{"Sheet1!A1": dateCell(day)}, map[string]any{"Sheet1!A1": 43832}, "A1", true},
		{"date vs other date", map[string]any{"Sheet1!A1": dateCell(day)}, map[string]any{"Sheet1!A1": dateCell(day.AddDate(0, 0, 1))}, "A1", false},
		// 43832.4 with m/d/yy h:mm is 2020-01-02 09:36 → round(43832.4) = 43832;
		// 43832.75 (18:00) rounds up to 43833.
		{"date-time rounds down", map[string]any{"Sheet1!A1": numFmt{v: 43832.4, id: 22}}, map[string]any{"Sheet1!A1": 43832}, "A1", true},
		{"date-time rounds up", map[string]any{"Sheet1!A1": numFmt{v: 43832.75, id: 22}}, map[string]any{"Sheet1!A1": 43833}, "A1", true},
		{"date-time is not its fraction", map[string]any{"Sheet1!A1": numFmt{v: 43832.4, id: 22}}, map[string]any{"Sheet1!A1": 43832.4}, "A1", false},
		// A custom date format counts: yyyy-mm-dd.
		{"custom date format", map[string]any{"Sheet1!A1": numFmt{v: 43832, code: "yyyy-mm-dd"}}, map[string]any{"Sheet1!A1": "43832"}, "A1", true},
		// Letters inside quotes or brackets do not make a date: 3.14159
		// formatted 0.00" days" stays a number, 3.14.
		{"quoted letters are no date", map[string]any{"Sheet1!A1": numFmt{v: 3.14159, code: `0.00" days"`}}, map[string]any{"Sheet1!A1": 3.14}, "A1", true},
		{"locale colour is no date", map[string]any{"Sheet1!A1": numFmt{v: 3.14159, code: `[Red]0.00`}}, map[string]any{"Sheet1!A1": 3.14}, "A1", true},
		// openpyxl's 1900 system: serial 59 is 1900-02-28 (it adds the day
		// Excel's phantom 1900-02-29 took and to_excel takes it back) → 59;
		// serial 60, the phantom day itself, becomes 1900-02-28 too → 59.
		{"serial 59", map[string]any{"Sheet1!A1": numFmt{v: 59, id: 14}}, map[string]any{"Sheet1!A1": 59}, "A1", true},
		{"serial 60 is 59", map[string]any{"Sheet1!A1": numFmt{v: 60, id: 14}}, map[string]any{"Sheet1!A1": 60}, "A1", false},
		{"serial 60 reads 59", map[string]any{"Sheet1!A1": numFmt{v: 60, id: 14}}, map[string]any{"Sheet1!A1": 59}, "A1", true},
		// 1904 system: serial 42370 is 1904-01-01 + 42370 days = 2020-01-02 = 43832 in the 1900 system.
		{"1904 date system", map[string]any{date1904Key: true, "Sheet1!A1": numFmt{v: 42370, id: 14}}, map[string]any{"Sheet1!A1": dateCell(day)}, "A1", true},
		// A t="d" cell (ISO 8601 text) is a date too: 2020-01-02 = 43832.
		{"ISO date cell", map[string]any{"Sheet1!A1": rawCell{`t="d"`, `<v>2020-01-02T00:00:00</v>`}}, map[string]any{"Sheet1!A1": 43832}, "A1", true},
		{"ISO time cell", map[string]any{"Sheet1!A1": rawCell{`t="d"`, `<v>07:05:00</v>`}}, map[string]any{"Sheet1!A1": "07:05"}, "A1", true},
		// Times become str(time) less 3 characters: 0.5 day is "12:00:00" → "12:00".
		{"time as text", map[string]any{"Sheet1!A1": timeCell(0.5)}, map[string]any{"Sheet1!A1": "12:00"}, "A1", true},
		// 12:00:30 → "12:00:30"[:-3] = "12:00": the seconds are dropped.
		{"time seconds dropped", map[string]any{"Sheet1!A1": timeCell((12*3600 + 30) / 86400.0)}, map[string]any{"Sheet1!A1": "12:00"}, "A1", true},
		// 12:00:30.25 → "12:00:30.250000"[:-3] = "12:00:30.250".
		{"time with milliseconds", map[string]any{"Sheet1!A1": timeCell((12*3600 + 30.25) / 86400.0)}, map[string]any{"Sheet1!A1": "12:00:30.250"}, "A1", true},
		{"time with milliseconds is not HH:MM", map[string]any{"Sheet1!A1": timeCell((12*3600 + 30.25) / 86400.0)}, map[string]any{"Sheet1!A1": "12:00"}, "A1", false},
		// A time is text, not a number: 0.5 vs the time 12:00 fails.
		{"time vs number", map[string]any{"Sheet1!A1": timeCell(0.5)}, map[string]any{"Sheet1!A1": 0.5}, "A1", false},
		// The value, not the format, decides time vs date: 0.75 with a date
		// format is the time 18:00; 43832.75 with h:mm is a date-time → 43833.
		{"date format below one is a time", map[string]any{"Sheet1!A1": numFmt{v: 0.75, id: 14}}, map[string]any{"Sheet1!A1": "18:00"}, "A1", true},
		{"time format above one is a date", map[string]any{"Sheet1!A1": numFmt{v: 43832.75, id: 20}}, map[string]any{"Sheet1!A1": 43833}, "A1", true},
		// [h]:mm:ss is a duration (timedelta): equal durations match, a
		// duration never equals a number.
		{"duration equal", map[string]any{"Sheet1!A1": numFmt{v: 1.5, code: "[h]:mm:ss"}}, map[string]any{"Sheet1!A1": numFmt{v: 1.5, id: 46}}, "A1", true},
		{"duration vs number", map[string]any{"Sheet1!A1": numFmt{v: 1.5, code: "[h]:mm:ss"}}, map[string]any{"Sheet1!A1": 1.5}, "A1", false},
		// A formula openpyxl wrote has no cached value: it reads as None.
		{"formula without value", map[string]any{"Sheet1!A1": 6}, map[string]any{"Sheet1!A1": formula("SUM(1,2,3)")}, "A1", false},
		{"formula without value vs empty", map[string]any{}, map[string]any{"Sheet1!A1": formula("SUM(1,2,3)")}, "A1", true},
		// A formula Excel saved carries its value: the cached 6 is read.
		{"formula with cached value", map[string]any{"Sheet1!A1": rawCell{``, `<f>SUM(1,2,3)</f><v>6</v>`}}, map[string]any{"Sheet1!A1": 6}, "A1", true},
		{"formula with cached text", map[string]any{"Sheet1!A1": rawCell{`t="str"`, `<f>"ab"&amp;"c"</f><v>abc</v>`}}, map[string]any{"Sheet1!A1": "abc"}, "A1", true},
		{"range and list", map[string]any{"Sheet1!A1": 1, "Sheet1!B2": 2, "Sheet1!D4": "x"},
			map[string]any{"Sheet1!A1": 1, "Sheet1!B2": 2, "Sheet1!D4": "x"}, "A1:B2, D4", true},
		{"list's second range differs", map[string]any{"Sheet1!A1": 1, "Sheet1!D4": "x"},
			map[string]any{"Sheet1!A1": 1, "Sheet1!D4": "y"}, "A1:B2,D4", false},
		{"one cell of a range differs", map[string]any{"Sheet1!A1": 1, "Sheet1!B2": 2}, map[string]any{"Sheet1!A1": 1, "Sheet1!B2": 3}, "A1:B2", false},
		// Cells outside the answer position are not compared.
		{"outside the range ignored", map[string]any{"Sheet1!A1": 1, "Sheet1!C3": 2}, map[string]any{"Sheet1!A1": 1, "Sheet1!C3": 9}, "A1:B2", true},
		{"sheet-qualified", map[string]any{"Data!C3": 9}, map[string]any{"Data!C3": 9}, "'Data'!C3", true},
		{"quoted sheet with comma and space", map[string]any{"My, data!C3": 9, "Sheet1!A1": 1}, map[string]any{"My, data!C3": 9, "Sheet1!A1": 1}, "'My, data'!C3,Sheet1!A1", true},
		{"qualified ranges on two sheets", map[string]any{"Data!A1": 1, "Sums!B2": 5}, map[string]any{"Data!A1": 1, "Sums!B2": 6}, "Data!A1,Sums!B2", false},
		// An unqualified range is on the gold's first sheet (Data, created
		// before Other): Data!C3 matches though Other!C3 differs.
		{"default sheet is the gold's first", map[string]any{"Data!C3": 9, "Other!C3": 1}, map[string]any{"Data!C3": 9, "Other!C3": 5}, "C3", true},
		{"default sheet differs", map[string]any{"Data!C3": 9, "Other!C3": 1}, map[string]any{"Data!C3": 8, "Other!C3": 1}, "C3", false},
		{"missing sheet", map[string]any{"Data!C3": 9}, map[string]any{"Sheet1!C3": 9}, "Data!C3", false},
		{"missing default sheet", map[string]any{"Data!C3": 9}, map[string]any{"Sheet1!C3": 9}, "C3", false},
	}
}

func TestCompareRules(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range compareCases() {
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
	if _, err := parsePositions("A1:ZZZZ9"); err == nil {
		t.Error("bad position accepted")
	}
	g := book(t, filepath.Join(dir, "g.xlsx"), map[string]any{"Sheet1!A1": 1})
	if d, _ := Compare(filepath.Join(dir, "nope.xlsx"), g, "A1"); !strings.Contains(d, "cannot be opened") {
		t.Errorf("missing output: %q", d)
	}
	// A missing sheet in the prediction is reported by name.
	p := book(t, filepath.Join(dir, "p.xlsx"), map[string]any{"Other!A1": 1})
	if d, _ := Compare(p, g, "A1"); d != `sheet "Sheet1" is missing from the output workbook` {
		t.Errorf("missing sheet: %q", d)
	}
	// The diff names the cell, the expected and the got value.
	p = book(t, filepath.Join(dir, "p2.xlsx"), map[string]any{"Sheet1!A1": "one"})
	if d, _ := Compare(p, g, "A1"); d != `Sheet1!A1: expected 1, got "one"` {
		t.Errorf("diff text: %q", d)
	}
}

func TestParsePositions(t *testing.T) {
	rs, err := parsePositions("'My, data'!$B$2:A1, C3 ,Sheet2!D4")
	if err != nil {
		t.Fatal(err)
	}
	// The first range is normalised to A1:B2 (columns 1-2, rows 1-2).
	want := []cellRange{{"My, data", 1, 1, 2, 2}, {"", 3, 3, 3, 3}, {"Sheet2", 4, 4, 4, 4}}
	if len(rs) != len(want) {
		t.Fatalf("ranges = %+v", rs)
	}
	for i := range want {
		if rs[i] != want[i] {
			t.Errorf("range %d = %+v, want %+v", i, rs[i], want[i])
		}
	}
	for _, bad := range []string{"", " , ", "A0", "Sheet1!", "1A"} {
		if _, err := parsePositions(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func TestDateFormats(t *testing.T) {
	// openpyxl's is_date_format: a date letter after any character but a
	// backslash, quoted text and brackets (but [h] [m] [s]) ignored, first
	// section only.
	for code, want := range map[string]bool{
		"yyyy-mm-dd": true, "h:mm": true, "[h]:mm:ss": true, "mm:ss": true,
		"General": false, "0.00": false, `0.00" days"`: false, "[Red]0.00": false,
		`0\d`: false, "d": false, // a lone first letter has no character before it
		"0.00;yyyy": false, "[$-409]0.00": false, "#,##0_);[Red](#,##0)": false,
	} {
		if got := isDateFormat(code); got != want {
			t.Errorf("isDateFormat(%q) = %v, want %v", code, got, want)
		}
	}
	for code, want := range map[string]bool{"[h]:mm:ss": true, "[mm]:ss": true, "h:mm:ss": false, "yyyy": false} {
		if got := isDurationFormat(code); got != want {
			t.Errorf("isDurationFormat(%q) = %v, want %v", code, got, want)
		}
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
func findPython(t testing.TB) string {
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

// referenceCompare is the comparison in Python over openpyxl, written from
// the spec's rules (load with data_only=True; None/"" alike; bool, number
// and numeric string → round(float(v), 2); time → str(v)[:-3]; date or
// date-time → round(to_excel(v), 0); different types fail). It reads a JSON
// list of [pred, gold, positions] and prints a JSON list of verdicts.
const referenceCompare = `import datetime, json, sys
import openpyxl
from openpyxl.utils import range_boundaries
from openpyxl.utils.datetime import to_excel

def norm(v):
    if v is None or v == "":
        return None
    if isinstance(v, (bool, int, float)):
        return round(float(v), 2)
    if isinstance(v, str):
        try:
            return round(float(v), 2)
        except ValueError:
            return v
    if isinstance(v, datetime.time):
        return str(v)[:-3]
    if isinstance(v, (datetime.datetime, datetime.date)):
        return round(to_excel(v), 0)
    return v

def parts(pos):
    out, cur, quoted = [], "", False
    for ch in pos:
        if ch == "'":
            quoted = not quoted
        if ch == "," and not quoted:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return [p.strip() for p in out if p.strip()]

def same(pred, gold, pos):
    g = openpyxl.load_workbook(gold, data_only=True)
    p = openpyxl.load_workbook(pred, data_only=True)
    for part in parts(pos):
        sheet, _, rng = part.rpartition("!")
        sheet = sheet.strip("'") or g.sheetnames[0]
        if sheet not in p.sheetnames:
            return False
        c1, r1, c2, r2 = range_boundaries(rng.replace("$", ""))
        for r in range(r1, r2 + 1):
            for c in range(c1, c2 + 1):
                a = norm(g[sheet].cell(row=r, column=c).value)
                b = norm(p[sheet].cell(row=r, column=c).value)
                if type(a) != type(b) or a != b:
                    return False
    return True

print(json.dumps([same(*job) for job in json.load(sys.stdin)]))
`

// TestCompareMatchesOpenpyxl runs every table case through the Python
// reference over openpyxl: the Go comparison must reach the same verdict
// (and the table's expectation).
func TestCompareMatchesOpenpyxl(t *testing.T) {
	python := findPython(t)
	dir := t.TempDir()
	cases := compareCases()
	var jobs [][3]string
	for i, tc := range cases {
		g := book(t, filepath.Join(dir, fmt.Sprintf("%d-gold.xlsx", i)), tc.gold)
		p := book(t, filepath.Join(dir, fmt.Sprintf("%d-pred.xlsx", i)), tc.pred)
		jobs = append(jobs, [3]string{p, g, tc.pos})
	}
	in, _ := json.Marshal(jobs)
	cmd := exec.Command(python, "-c", referenceCompare)
	cmd.Stdin = bytes.NewReader(in)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("reference: %v\n%s", err, out)
	}
	var verdicts []bool
	if err := json.Unmarshal(out, &verdicts); err != nil || len(verdicts) != len(cases) {
		t.Fatalf("reference output %q: %v", out, err)
	}
	for i, tc := range cases {
		if verdicts[i] != tc.match {
			t.Errorf("%s: openpyxl reference says match=%v, the table %v", tc.name, verdicts[i], tc.match)
		}
	}
}
