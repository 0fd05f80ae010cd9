package synth

import (
	"fmt"
	"path/filepath"
	"strconv"

	"github.com/xuri/excelize/v2"

	"github.com/skillfleet/skillfleet/internal/atomicfile"
)

// SpreadsheetBench's world: a Data sheet of registers and their figures,
// one test case per item (N_<id>_input.xlsx and N_<id>_answer.xlsx under
// spreadsheet/<id>/). Cell-level items ask for one register's figure in
// D2 (answer_sheet Data), with unit, rounding and reading rules the
// comparison sees; sheet-level items ask for a total row, whose cell is a
// rule of its own: directly below the data, no blank row between.
var spreadsheetRules = []string{
	"units_km", "off_by_one", "doubled", "times_ten", "rounding_tens", "digits_reversed",
	"truncated", "negative_sign", "approx_prefix",
}

// SpreadsheetTotal is the id of the total-row rule.
const SpreadsheetTotal = "ss_total_below"

// Spreadsheet phrasing, shared with the simulated model.
const (
	SpreadsheetLookup   = "Write the figure of the %s register (from the Data sheet) into cell D2."
	SpreadsheetConcern  = " The figure concerns %s."
	SpreadsheetTotalAsk = "Add a total row to the Data sheet: the label Total in column A and the sum of the Figure column in column B."
)

// spreadsheetWorldRules are the SpreadsheetBench world's own rules.
var spreadsheetWorldRules = []Rule{{ID: SpreadsheetTotal, Category: "layout", Cue: "a total row",
	Text:        "Put a total row directly below the last data row, with no blank row between.",
	Paraphrases: []string{"A total row goes right under the data, never after a blank row.", "Write a total row on the first empty row below the data; no blank row first."},
	Stems:       []string{"total row", "blank row"}, Vague: "Summary rows need care.",
	Harmful: "Leave a spacer line above any summary so it stands out.", HarmfulStems: []string{"spacer line"},
	Description: "The total row was written after a blank row instead of directly below the data."}}

// spreadsheetItem is a SpreadsheetBench item.
type spreadsheetItem struct {
	ID              string `json:"id"`
	Instruction     string `json:"instruction"`
	InstructionType string `json:"instruction_type"`
	AnswerPosition  string `json:"answer_position"`
	AnswerSheet     string `json:"answer_sheet,omitempty"`
	SpreadsheetPath string `json:"spreadsheet_path"`
}

func writeSpreadsheet(dir string, size Size, seed int64) (*Manifest, error) {
	active := append([]string{SpreadsheetTotal}, pickRules(newRNG("spreadsheet", size, seed, "rules"), spreadsheetRules, max(size.Rules-1, 1))...)
	var werr error
	items := splits(size, func(split string, i int) spreadsheetItem {
		r := newRNG("spreadsheet", size, seed, fmt.Sprintf("%s/%d", split, i))
		id := fmt.Sprintf("synth-%s-%04d", split, i+1)
		names := append([]string(nil), entityNames...)
		r.Shuffle(len(names), func(a, b int) { names[a], names[b] = names[b], names[a] })
		n := 4 + r.IntN(5)
		values := make([]int, n)
		for k := range values {
			values[k], _ = strconv.Atoi(Value(r))
		}
		it := spreadsheetItem{ID: id, SpreadsheetPath: "spreadsheet/" + id}
		gold := map[string]any{}
		if r.Chance(0.3) {
			it.Instruction = SpreadsheetTotalAsk
			it.InstructionType = "Sheet-Level Manipulation"
			it.AnswerPosition = fmt.Sprintf("Data!A1:B%d", n+3)
			sum := 0
			for _, v := range values {
				sum += v
			}
			gold[fmt.Sprintf("A%d", n+2)], gold[fmt.Sprintf("B%d", n+2)] = "Total", sum
		} else {
			asked := r.IntN(n)
			it.Instruction = fmt.Sprintf(SpreadsheetLookup, names[asked])
			rules := itemRules(r, active[1:])
			if len(rules) == 0 {
				rules = []string{pick(r, active[1:])} // every item needs a rule: the world is small
			}
			for _, rid := range rules {
				ru, _ := LookupRule(rid)
				it.Instruction += fmt.Sprintf(SpreadsheetConcern, ru.Cue)
			}
			it.InstructionType = "Cell-Level Manipulation"
			it.AnswerPosition, it.AnswerSheet = "D2", "Data"
			gold["D2"] = values[asked]
		}
		base := filepath.Join(dir, "spreadsheet", id)
		in := filepath.Join(base, "1_"+id+"_input.xlsx")
		ans := filepath.Join(base, "1_"+id+"_answer.xlsx")
		if err := writeBook(in, names[:n], values, nil); err != nil && werr == nil {
			werr = err
		}
		if err := writeBook(ans, names[:n], values, gold); err != nil && werr == nil {
			werr = err
		}
		return it
	})
	if werr != nil {
		return nil, werr
	}
	counts, err := writeItems(dir, items)
	if err != nil {
		return nil, err
	}
	seedFile, err := writeSeedSkill(dir, SeedSkill("Solving spreadsheet tasks with openpyxl", spreadsheetGeneral, active, newRNG("spreadsheet", size, seed, "seed-skill")))
	if err != nil {
		return nil, err
	}
	return &Manifest{Counts: counts, ItemFields: []string{"id", "instruction", "instruction_type", "answer_position", "answer_sheet", "spreadsheet_path"},
		Rules: active, SeedSkill: seedFile,
		Notes: "A synthetic world (a test double), not real benchmark data. Test cases are under spreadsheet/<id>/ in this directory."}, nil
}

// writeBook writes a workbook with a Data sheet of registers and figures,
// plus extra cell values.
func writeBook(path string, names []string, values []int, extra map[string]any) error {
	f := excelize.NewFile()
	defer f.Close()
	if err := f.SetSheetName("Sheet1", "Data"); err != nil {
		return err
	}
	rows := [][]any{{"Register", "Figure"}}
	for k, n := range names {
		rows = append(rows, []any{n, values[k]})
	}
	for k, row := range rows {
		cell, _ := excelize.CoordinatesToCellName(1, k+1)
		if err := f.SetSheetRow("Data", cell, &row); err != nil {
			return err
		}
	}
	for cell, v := range extra {
		if err := f.SetCellValue("Data", cell, v); err != nil {
			return err
		}
	}
	buf, err := f.WriteToBuffer()
	if err != nil {
		return err
	}
	return atomicfile.Write(path, buf.Bytes())
}

const spreadsheetGeneral = "Write a program that reads the input workbook and writes the answer where the task says.\n\n## General\n- Find values by their labels, never by fixed row numbers.\n- Save the workbook to OUTPUT_PATH."
