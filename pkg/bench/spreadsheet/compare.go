package spreadsheet

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"

	"github.com/xuri/excelize/v2"
)

// kind is a compared cell value's type after the comparison transform.
type kind int

const (
	kindNone kind = iota
	kindNum
	kindStr
)

// cellValue is a cell as the comparison sees it.
type cellValue struct {
	k   kind
	num float64
	str string
}

func (v cellValue) String() string {
	switch v.k {
	case kindNum:
		return strconv.FormatFloat(v.num, 'f', -1, 64)
	case kindStr:
		return strconv.Quote(v.str)
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

// Built-in number formats openpyxl reads as dates or times.
var builtinDate = map[int]bool{14: true, 15: true, 16: true, 17: true, 22: true, 27: true, 30: true, 36: true, 50: true, 57: true}
var builtinTime = map[int]bool{18: true, 19: true, 20: true, 21: true, 45: true, 46: true, 47: true}

var fmtNoise = regexp.MustCompile(`"[^"]*"|\\.|\[[^\]]*\]|_.|\*.`)

// formatKind classifies a number format: 'd' for a date (or date-time),
// 't' for a time of day, 0 for a plain number.
func formatKind(code string) byte {
	c := strings.ToLower(fmtNoise.ReplaceAllString(code, ""))
	if c == "general" || c == "" {
		return 0
	}
	hasDate := strings.ContainsAny(c, "dy")
	hasTime := strings.ContainsAny(c, "hs")
	hasM := strings.Contains(c, "m")
	switch {
	case hasDate || (hasM && !hasTime):
		return 'd'
	case hasTime:
		return 't'
	}
	return 0
}

// dateKind reports how a cell's style makes openpyxl read its number.
func dateKind(f *excelize.File, sheet, cell string) byte {
	idx, err := f.GetCellStyle(sheet, cell)
	if err != nil || idx == 0 {
		return 0
	}
	st, err := f.GetStyle(idx)
	if err != nil || st == nil {
		return 0
	}
	if st.CustomNumFmt != nil {
		return formatKind(*st.CustomNumFmt)
	}
	switch {
	case builtinTime[st.NumFmt]:
		return 't'
	case builtinDate[st.NumFmt]:
		return 'd'
	}
	return 0
}

// readCell reads a cell as openpyxl with data_only=True would, then
// applies SkillOpt's comparison transform: bools, numbers and numeric
// strings become round(float(v), 2); times their "HH:MM" text (str()
// less the seconds); dates their Excel serial rounded to whole days; ""
// and formulas without a cached value are empty.
func readCell(f *excelize.File, sheet, cell string) (cellValue, error) {
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
		if v, ok := pyFloat(raw); ok {
			return cellValue{k: kindNum, num: pyRound(v, 2)}, nil
		}
		return cellValue{k: kindStr, str: raw}, nil
	case excelize.CellTypeDate:
		return cellValue{k: kindStr, str: raw}, nil
	}
	v, ok := pyFloat(raw)
	if !ok {
		return cellValue{k: kindStr, str: raw}, nil
	}
	switch dateKind(f, sheet, cell) {
	case 'd':
		return cellValue{k: kindNum, num: pyRound(v, 0)}, nil
	case 't':
		if v >= 0 && v < 1 {
			return timeOf(v), nil
		}
		return cellValue{k: kindNum, num: pyRound(v, 0)}, nil
	}
	return cellValue{k: kindNum, num: pyRound(v, 2)}, nil
}

// timeOf renders a day fraction as openpyxl's time, str() less its last
// three characters: "HH:MM".
func timeOf(frac float64) cellValue {
	secs := int(math.Round(frac * 86400))
	return cellValue{k: kindStr, str: fmt.Sprintf("%02d:%02d", secs/3600%24, secs/60%60)}
}

// cellRange is one range of answer_position.
type cellRange struct {
	sheet  string // "" = the gold's first sheet
	c1, r1 int
	c2, r2 int
}

// ParsePositions reads answer_position: comma-separated ranges or cells,
// each optionally sheet-qualified ("Sheet1!A1:C5", "'My data'!B2").
func ParsePositions(s string) ([]cellRange, error) {
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
		a, b, _ := strings.Cut(strings.ReplaceAll(part, "$", ""), ":")
		if b == "" {
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
// first difference (and up to a few more) as feedback.
func Compare(predPath, goldPath, positions string) (diff string, err error) {
	ranges, err := ParsePositions(positions)
	if err != nil {
		return "", err
	}
	gold, err := excelize.OpenFile(goldPath)
	if err != nil {
		return "", fmt.Errorf("gold workbook %s: %w", goldPath, err)
	}
	defer gold.Close()
	pred, err := excelize.OpenFile(predPath)
	if err != nil {
		return fmt.Sprintf("the output workbook cannot be opened: %v", err), nil
	}
	defer pred.Close()
	goldSheets := gold.GetSheetList()
	predSheets := map[string]bool{}
	for _, s := range pred.GetSheetList() {
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
