package sim

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench/synth"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// SpreadsheetBench: the sim writes an openpyxl program that the
// benchmark runs in its sandbox. The program finds the register by its
// label at run time and writes the figure (as the agent would state it)
// into D2, or appends a total row: directly below the data when the skill
// says so, else after a blank row.
var (
	spreadsheetLookup = regexp.MustCompile(`Write the figure of the (.+?) register \(from the Data sheet\) into cell D2\.`)
	spreadsheetDiff   = regexp.MustCompile(`!D2: expected (\S+?), got (.+?)(?:;|\n|$)`)
)

// spreadsheetExpr is each rule's misstatement of the figure as a Python
// expression over the int v.
var spreadsheetExpr = map[string]string{
	"":                "v",
	"off_by_one":      "v + 1",
	"doubled":         "v * 2",
	"times_ten":       "v * 10",
	"rounding_tens":   "v // 10 * 10",
	"digits_reversed": "int(str(v)[::-1])",
	"truncated":       "int(str(v)[:-1])",
	"negative_sign":   "-v",
	"units_km":        `str(v) + " mi"`,
	"approx_prefix":   `"approx. " + str(v)`,
	"typo":            "int(str(v)[0] + str(v)[2] + str(v)[1] + str(v)[3:])",
}

const spreadsheetHead = "import openpyxl\n\nwb = openpyxl.load_workbook(INPUT_PATH)\nws = wb[\"Data\"]\n"

var spreadsheetWorld = world{
	name: "spreadsheet",
	match: func(req *llm.Request) bool {
		u := worldUser(req.Messages)
		return strings.HasPrefix(u, "Task (") && strings.Contains(worldSystem(req.Messages), "openpyxl") &&
			(spreadsheetLookup.MatchString(u) || strings.Contains(u, synth.SpreadsheetTotalAsk))
	},
	answer: func(m *Model, req *llm.Request, seed int64) (string, []llm.ToolCall) {
		lead, code := spreadsheetProgram(m, req, seed)
		if !offersTool(req, "submit_solution") {
			return lead + "\n\n```python\n" + code + "```\n", nil
		}
		// ReAct mode: look at the sheet once, then submit the program.
		for _, msg := range req.Messages {
			if msg.Role == llm.RoleTool {
				args, _ := json.Marshal(map[string]string{"code": code})
				return lead, []llm.ToolCall{{ID: "call_submit", Name: "submit_solution", Arguments: string(args)}}
			}
		}
		args, _ := json.Marshal(map[string]string{"code": spreadsheetInspect})
		return "I look at the Data sheet first.", []llm.ToolCall{{ID: "call_inspect", Name: "run_python", Arguments: string(args)}}
	},
	identify: spreadsheetIdentify,
}

// spreadsheetInspect is the program the sim runs to look at a workbook
// before it submits (ReAct mode).
const spreadsheetInspect = "import openpyxl\n\nwb = openpyxl.load_workbook(INPUT_PATH)\nws = wb[\"Data\"]\nfor row in ws.iter_rows(values_only=True):\n    print(row)\n"

// offersTool reports whether req offers a tool of that name.
func offersTool(req *llm.Request, name string) bool {
	for _, t := range req.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

// spreadsheetProgram is the sim's program for a SpreadsheetBench task and
// a line saying what it does.
func spreadsheetProgram(m *Model, req *llm.Request, seed int64) (lead, program string) {
	user := worldUser(req.Messages)
	task := user[:strings.Index(user+"\n\nThe answer goes in", "\n\nThe answer goes in")]
	ids := synth.CuesIn(task, allRuleIDs())
	v := m.judge(skillIn(worldSystem(req.Messages)), task, ids, req.Model, seed)
	var code strings.Builder
	code.WriteString(spreadsheetHead)
	if l := spreadsheetLookup.FindStringSubmatch(user); l != nil {
		key := v.bad
		if v.typo {
			key = "typo"
		}
		expr, ok := spreadsheetExpr[key]
		if !ok {
			expr = "v"
		}
		fmt.Fprintf(&code, "v = None\nfor name, figure in ws.iter_rows(min_row=2, max_col=2, values_only=True):\n    if name == %q:\n        v = figure\nws[\"D2\"] = %s\n", l[1], expr)
		lead = "The program looks the register up by its label and writes its figure into D2."
	} else {
		gap := 1
		if v.bad != "" || v.typo {
			gap = 2 // a blank row before the total
		}
		fmt.Fprintf(&code, "last = ws.max_row\ntotal = sum(row[0] for row in ws.iter_rows(min_row=2, max_row=last, min_col=2, max_col=2, values_only=True))\nrow = last + %d\nws.cell(row=row, column=1, value=\"Total\")\nws.cell(row=row, column=2, value=total)\n", gap)
		lead = "The program sums the Figure column and writes the total row."
	}
	code.WriteString("wb.save(OUTPUT_PATH)\n")
	return lead, code.String()
}

// spreadsheetIdentify names the rule a failed trajectory broke.
func spreadsheetIdentify(tr prompts.Trajectory) (string, bool) {
	if strings.Contains(tr.Answer, "row = last + 2") {
		return synth.SpreadsheetTotal, true
	}
	d := spreadsheetDiff.FindStringSubmatch(tr.FailReason)
	if d == nil {
		return "", false
	}
	clean := func(s string) string {
		s = strings.TrimSpace(s)
		if len(s) >= 2 && s[0] == '"' && s[len(s)-1] == '"' {
			s = s[1 : len(s)-1]
		}
		return s
	}
	return identifyValue(clean(d[2]), clean(d[1]))
}
