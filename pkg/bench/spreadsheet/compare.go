package spreadsheet

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/xuri/excelize/v2"
)

// kind is a compared cell value's type after the comparison transform.
type kind int

const (
	kindNone kind = iota // None (an empty cell, "", a formula without a cached value)
	kindNum              // round(float(v), 2), or a date's serial day
	kindStr              // text, or a time's str() less its last three characters
	kindDur              // a timedelta (a cell with a duration format such as [h]:mm:ss)
)

// cellValue is a cell as the comparison sees it.
type cellValue struct {
	k   kind
	num float64
	str string
	us  int64 // kindDur: microseconds
}

func (v cellValue) String() string {
	switch v.k {
	case kindNum:
		return strconv.FormatFloat(v.num, 'f', -1, 64)
	case kindStr:
		return strconv.Quote(v.str)
	case kindDur:
		return "duration " + time.Duration(v.us*1000).String()
	}
	return "empty"
}

// pyRound is Python's round(x, n): correctly rounded from the exact
// binary value, ties to even.
func pyRound(x float64, n int) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return x
	}
	v, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'f', n, 64), 64)
	return v
}

// pyFloat parses a string the way Python's float() does (surrounding
// whitespace allowed, underscores between digits, inf and nan).
func pyFloat(s string) (float64, bool) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, false
	}
	if strings.Contains(t, "_") {
		if strings.HasPrefix(t, "_") || strings.HasSuffix(t, "_") || strings.Contains(t, "__") {
			return 0, false
		}
		t = strings.ReplaceAll(t, "_", "")
	}
	if strings.HasPrefix(strings.ToLower(strings.TrimLeft(t, "+-")), "0x") {
		return 0, false
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil {
		switch strings.ToLower(strings.TrimLeft(t, "+-")) {
		case "inf", "infinity", "nan":
			v, err = strconv.ParseFloat(t, 64)
		}
	}
	return v, err == nil
}

// builtinDateFormats are the built-in number formats (by id) that
// openpyxl reads as dates, times or durations; every other built-in id is
// a plain number to it (ids 27-36 and 50-58, locale date formats in Excel,
// are unknown to openpyxl and so read as numbers).
var builtinDateFormats = map[int]string{14: "mm-dd-yy", 15: "d-mmm-yy", 16: "d-mmm", 17: "mmm-yy",
	18: "h:mm AM/PM", 19: "h:mm:ss AM/PM", 20: "h:mm", 21: "h:mm:ss", 22: "m/d/yy h:mm",
	45: "mm:ss", 46: "[h]:mm:ss", 47: "mmss.0"}

var (
	fmtStrip      = regexp.MustCompile(`".*?"|\[[^\]]*\]`)
	fmtDateLetter = regexp.MustCompile(`[^\\][dmhysDMHYS]`)
	fmtDuration   = regexp.MustCompile(`(?i)\[hh?\](:mm(:ss(\.0*)?)?)?|\[mm?\](:ss(\.0*)?)?|\[ss?\](\.0*)?`)
)

// isDateFormat is openpyxl's test: in the first section of the format,
// with quoted literals and bracketed parts other than [h], [m], [s] (and
// doubled) removed, a date or time letter follows some character other
// than a backslash (so a format of the single letter "d" is a number).
func isDateFormat(code string) bool {
	first, _, _ := strings.Cut(code, ";")
	first = fmtStrip.ReplaceAllStringFunc(first, func(m string) string {
		switch m {
		case "[h]", "[hh]", "[m]", "[mm]", "[s]", "[ss]":
			return m
		}
		return ""
	})
	return fmtDateLetter.MatchString(first)
}

// isDurationFormat is openpyxl's timedelta test on the first section.
func isDurationFormat(code string) bool {
	first, _, _ := strings.Cut(code, ";")
	return fmtDuration.MatchString(first)
}

// numFormat returns the number format code of a cell's style.
func numFormat(f *excelize.File, sheet, cell string) string {
	idx, err := f.GetCellStyle(sheet, cell)
	if err != nil {
		return ""
	}
	st, err := f.GetStyle(idx)
	if err != nil || st == nil {
		return ""
	}
	if st.CustomNumFmt != nil {
		return *st.CustomNumFmt
	}
	return builtinDateFormats[st.NumFmt]
}

// workbook is an opened workbook and its date system.
type workbook struct {
	f        *excelize.File
	date1904 bool
}

// openWorkbook opens a workbook held in memory under the unzip limits;
// temporary files (sheets over the XML limit) go to tmp.
func openWorkbook(data []byte, lim ReadLimits, tmp string) (*workbook, error) {
	f, err := excelize.OpenReader(bytes.NewReader(data), excelize.Options{
		UnzipSizeLimit: lim.MaxUnzip, UnzipXMLSizeLimit: min(lim.MaxXML, lim.MaxUnzip), TmpDir: tmp})
	if err != nil {
		return nil, err
	}
	wb := &workbook{f: f}
	if p, err := f.GetWorkbookProps(); err == nil && p.Date1904 != nil {
		wb.date1904 = *p.Date1904
	}
	return wb, nil
}

// readCell reads a cell as openpyxl with data_only=True would, then
// applies SkillOpt's comparison transform: bools, numbers and numeric
// strings become round(float(v), 2); times str(time) less its last three
// characters ("HH:MM", or "HH:MM:SS.mmm" with fractional seconds); dates
// and date-times their Excel serial (1900 system) rounded to whole days;
// durations stay durations; "" and formulas without a cached value are
// empty.
func readCell(wb *workbook, sheet, cell string) (cellValue, error) {
	f := wb.f
	raw, err := f.GetCellValue(sheet, cell, excelize.Options{RawCellValue: true})
	if err != nil {
		return cellValue{}, err
	}
	typ, err := f.GetCellType(sheet, cell)
	if err != nil {
		return cellValue{}, err
	}
	if raw == "" {
		return cellValue{k: kindNone}, nil
	}
	switch typ {
	case excelize.CellTypeBool:
		if raw == "1" || strings.EqualFold(raw, "true") {
			return cellValue{k: kindNum, num: 1}, nil
		}
		return cellValue{k: kindNum, num: 0}, nil
	case excelize.CellTypeSharedString, excelize.CellTypeInlineString, excelize.CellTypeFormula, excelize.CellTypeError:
		return textValue(raw), nil
	case excelize.CellTypeDate:
		if v, ok := isoValue(raw); ok {
			return v, nil
		}
		return textValue(raw), nil
	}
	v, ok := pyFloat(raw)
	if !ok {
		return cellValue{k: kindStr, str: raw}, nil
	}
	if code := numFormat(f, sheet, cell); isDateFormat(code) {
		if isDurationFormat(code) {
			return durationOf(v), nil
		}
		return serialValue(v, wb.date1904), nil
	}
	return cellValue{k: kindNum, num: pyRound(v, 2)}, nil
}

// textValue is a string cell: a number when float() accepts it.
func textValue(s string) cellValue {
	if v, ok := pyFloat(s); ok {
		return cellValue{k: kindNum, num: pyRound(v, 2)}
	}
	return cellValue{k: kindStr, str: s}
}

// pyRoundInt is Python's round(x) of a float to an integer (ties to even).
func pyRoundInt(x float64) int64 { return int64(math.RoundToEven(x)) }

const msPerDay = 86400 * 1000

// serialValue converts a date-formatted number as openpyxl's from_excel
// does (the fraction rounded to milliseconds; a value in [0, 1) is a time
// of day; 1900 system serials below 60 shifted a day for Excel's phantom
// 1900-02-29) and then back as to_excel does, rounded to whole days.
func serialValue(v float64, date1904 bool) cellValue {
	day := math.Floor(v)
	ms := pyRoundInt((v - day) * msPerDay)
	if v >= 0 && v < 1 && ms < msPerDay {
		return timeValue(ms * 1000)
	}
	if !date1904 && v > 0 && v < 60 {
		day++
	}
	// Days since 1899-12-30 (a 1904 system serial counts from 1904-01-01,
	// 1462 days later).
	offset := day + float64(ms)/msPerDay
	if date1904 {
		offset += 1462
	}
	return cellValue{k: kindNum, num: pyRound(toExcel(offset), 0)}
}

// toExcel is openpyxl's to_excel of a date-time lying offset days after
// 1899-12-30: whole days below 61 lose the phantom 1900-02-29.
func toExcel(offset float64) float64 {
	days := math.Floor(offset)
	if days > 0 && days <= 60 {
		return offset - 1
	}
	return offset
}

// timeValue renders a time of day (microseconds since midnight) as
// str(datetime.time) less its last three characters.
func timeValue(us int64) cellValue {
	s, micro := us/1e6, us%1e6
	t := fmt.Sprintf("%02d:%02d:%02d", s/3600, s/60%60, s%60)
	if micro != 0 {
		t += fmt.Sprintf(".%06d", micro)
	}
	return cellValue{k: kindStr, str: t[:len(t)-3]}
}

// durationOf is openpyxl's timedelta of a duration-formatted number:
// microseconds, rounded to milliseconds when there is a fraction of a
// second.
func durationOf(v float64) cellValue {
	us := pyRoundInt(v * 86400e6)
	if us%1e6 != 0 {
		sec := us / 1e6
		if us < 0 {
			sec = (us - 1e6 + 1) / 1e6 // floor
		}
		micro := us - sec*1e6
		us = sec*1e6 + int64(math.RoundToEven(float64(micro)/1000))*1000
	}
	return cellValue{k: kindDur, us: us}
}

// isoDate is openpyxl's ISO 8601 pattern for t="d" cells.
var isoDate = regexp.MustCompile(`^(?:(\d{4})-(\d{2})-(\d{2}))?T?(?:(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,3})?)?)?Z?`)

// isoValue reads a t="d" cell's ISO 8601 text: a date or date-time
// becomes its serial day, a time its text.
func isoValue(s string) (cellValue, bool) {
	m := isoDate.FindStringSubmatch(s)
	if m == nil || m[0] == "" || m[0] == "T" || m[0] == "Z" || m[0] == "TZ" {
		return cellValue{}, false
	}
	num := func(i int) int {
		n, _ := strconv.Atoi(m[i])
		return n
	}
	var us int64
	if m[4] != "" {
		us = int64(num(4)*3600+num(5)*60+num(6)) * 1e6
		if m[7] != "" {
			frac, _ := strconv.ParseFloat(m[7], 64)
			us += int64(frac * 1e6)
		}
	}
	if m[1] == "" {
		if m[4] == "" || us >= 86400e6 {
			return cellValue{}, false
		}
		return timeValue(us), true
	}
	d := time.Date(num(1), time.Month(num(2)), num(3), 0, 0, 0, 0, time.UTC)
	if d.Year() != num(1) || int(d.Month()) != num(2) || d.Day() != num(3) {
		return cellValue{}, false
	}
	days := math.Round(d.Sub(time.Date(1899, 12, 30, 0, 0, 0, 0, time.UTC)).Hours() / 24)
	return cellValue{k: kindNum, num: pyRound(toExcel(days+float64(us)/86400e6), 0)}, true
}

// cellRange is one range of answer_position.
type cellRange struct {
	sheet  string // "" = the gold's first sheet
	c1, r1 int
	c2, r2 int
}

// parsePositions reads answer_position: comma-separated ranges or cells,
// each optionally sheet-qualified ("Sheet1!A1:C5", "'My data'!B2").
func parsePositions(s string) ([]cellRange, error) {
	var out []cellRange
	for _, part := range splitPositions(s) {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		var r cellRange
		if i := strings.LastIndex(part, "!"); i >= 0 {
			r.sheet = strings.Trim(strings.TrimSpace(part[:i]), "'")
			part = part[i+1:]
		}
		a, b, isRange := strings.Cut(strings.ReplaceAll(part, "$", ""), ":")
		if !isRange {
			b = a
		}
		var err error
		if r.c1, r.r1, err = excelize.CellNameToCoordinates(strings.TrimSpace(a)); err != nil {
			return nil, fmt.Errorf("answer_position %q: %w", s, err)
		}
		if r.c2, r.r2, err = excelize.CellNameToCoordinates(strings.TrimSpace(b)); err != nil {
			return nil, fmt.Errorf("answer_position %q: %w", s, err)
		}
		if r.c2 < r.c1 {
			r.c1, r.c2 = r.c2, r.c1
		}
		if r.r2 < r.r1 {
			r.r1, r.r2 = r.r2, r.r1
		}
		out = append(out, r)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("answer_position %q: no cell", s)
	}
	return out, nil
}

// splitPositions splits at commas outside quoted sheet names.
func splitPositions(s string) []string {
	var out []string
	quoted, start := false, 0
	for i, c := range s {
		switch {
		case c == '\'':
			quoted = !quoted
		case c == ',' && !quoted:
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return append(out, s[start:])
}

// Compare checks every cell of the answer positions in the predicted
// workbook against the gold one. It returns "" when all match, else the
// first difference (and up to a few more) as feedback. Both files are
// opened without following links, must be regular files and are read
// under DefaultOutputLimits (the prediction) and GoldLimits.
func Compare(predPath, goldPath, positions string) (diff string, err error) {
	ranges, err := parsePositions(positions)
	if err != nil {
		return "", err
	}
	gold, err := ReadRegular(goldPath, GoldLimits.MaxFile)
	if err != nil {
		return "", fmt.Errorf("gold workbook: %w", err)
	}
	pred, err := ReadRegular(predPath, DefaultOutputLimits.MaxFile)
	if err != nil {
		return fmt.Sprintf("the output workbook cannot be opened: %v", err), nil
	}
	tmp, err := os.MkdirTemp("", "skillfleet-score-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	diff, err = compareData(pred, gold, goldPath, ranges, DefaultOutputLimits, tmp)
	var u *unreadableError
	if errors.As(err, &u) {
		return u.Error(), nil
	}
	return diff, err
}

// compareData is Compare on workbooks in memory.
func compareData(predData, goldData []byte, goldPath string, ranges []cellRange, lim ReadLimits, tmp string) (string, error) {
	gold, err := openWorkbook(goldData, GoldLimits, tmp)
	if err != nil {
		return "", fmt.Errorf("gold workbook %s: %w", goldPath, err)
	}
	defer gold.f.Close()
	pred, err := openWorkbook(predData, lim, tmp)
	if err != nil {
		return "", &unreadableError{err}
	}
	defer pred.f.Close()
	goldSheets := gold.f.GetSheetList()
	predSheets := map[string]bool{}
	for _, s := range pred.f.GetSheetList() {
		predSheets[s] = true
	}
	var diffs []string
	for _, r := range ranges {
		sheet := r.sheet
		if sheet == "" && len(goldSheets) > 0 {
			sheet = goldSheets[0]
		}
		if !predSheets[sheet] {
			return fmt.Sprintf("sheet %q is missing from the output workbook", sheet), nil
		}
		for row := r.r1; row <= r.r2; row++ {
			for col := r.c1; col <= r.c2; col++ {
				cell, _ := excelize.CoordinatesToCellName(col, row)
				g, err := readCell(gold, sheet, cell)
				if err != nil {
					return "", fmt.Errorf("gold %s!%s: %w", sheet, cell, err)
				}
				p, err := readCell(pred, sheet, cell)
				if err != nil {
					return fmt.Sprintf("%s!%s cannot be read: %v", sheet, cell, err), nil
				}
				if g != p {
					if len(diffs) < 5 {
						diffs = append(diffs, fmt.Sprintf("%s!%s: expected %s, got %s", sheet, cell, g, p))
					} else if len(diffs) == 5 {
						diffs = append(diffs, "…")
					}
				}
			}
		}
	}
	return strings.Join(diffs, "; "), nil
}
