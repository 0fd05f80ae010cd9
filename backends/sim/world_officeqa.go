package sim

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench/synth"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// OfficeQA: an agent over the benchmark's tools. The sim sees the bulletin
// only through tool results: it greps the bulletin for the series the
// question names and answers with the row's figure. When the question
// wants the corrected amount and the skill says so, it first greps for
// errata and applies the one that corrects its row.
var (
	officeqaAsk    = regexp.MustCompile(`What figure does table FD-2 give for (.+?) in (\S+)\?`)
	officeqaDocs   = regexp.MustCompile(`(?m)^Documents: (.+)$`)
	officeqaRow    = regexp.MustCompile(`(?m)^\S+?:(\d+): (.+?) \| (\S+) \| (\d+)$`)
	officeqaErrata = regexp.MustCompile(`ERRATA: in table FD-2, line (\d+) should read (\d+)\.`)
)

// toolTurn is one tool call of the conversation so far and its result.
type toolTurn struct {
	call   llm.ToolCall
	result string
}

// toolTurns pairs the assistant's tool calls with their results.
func toolTurns(msgs []llm.Message) []toolTurn {
	results := map[string]string{}
	for _, m := range msgs {
		if m.Role == llm.RoleTool {
			results[m.ToolCallID] = m.Text()
		}
	}
	var out []toolTurn
	for _, m := range msgs {
		for _, c := range m.ToolCalls {
			out = append(out, toolTurn{call: c, result: results[c.ID]})
		}
	}
	return out
}

// grepped returns the result of the first grep for pattern, if any.
func grepped(turns []toolTurn, pattern string) (string, bool) {
	for _, t := range turns {
		var a struct {
			Pattern string `json:"pattern"`
		}
		if t.call.Name == "grep" && json.Unmarshal([]byte(t.call.Arguments), &a) == nil && strings.EqualFold(a.Pattern, pattern) {
			return t.result, true
		}
	}
	return "", false
}

func hasTool(req *llm.Request, name string) bool {
	for _, t := range req.Tools {
		if t.Name == name {
			return true
		}
	}
	return false
}

var officeqaWorld = world{
	name: "officeqa",
	match: func(req *llm.Request) bool {
		u := worldUser(req.Messages)
		return hasTool(req, "grep") && strings.HasPrefix(u, "Question: ") && officeqaAsk.MatchString(u) && officeqaDocs.MatchString(u)
	},
	answer: func(m *Model, req *llm.Request, seed int64) (string, []llm.ToolCall) {
		user := worldUser(req.Messages)
		question := strings.TrimPrefix(user[:strings.Index(user, "\n\nDocuments: ")], "Question: ")
		ask := officeqaAsk.FindStringSubmatch(question)
		file := strings.TrimSpace(strings.Split(officeqaDocs.FindStringSubmatch(user)[1], ",")[0])
		ids := synth.CuesIn(question, allRuleIDs())
		v := m.judge(skillIn(worldSystem(req.Messages)), question, ids, req.Model, seed)
		turns := toolTurns(req.Messages)
		call := func(text, pattern string) (string, []llm.ToolCall) {
			args, _ := json.Marshal(map[string]string{"pattern": pattern, "path": file})
			return text, []llm.ToolCall{{ID: fmt.Sprintf("call_%d", len(turns)+1), Name: "grep", Arguments: string(args)}}
		}
		checkErrata := hasID(ids, synth.OfficeQAErrata) && v.bad != synth.OfficeQAErrata
		errata, haveErrata := grepped(turns, "errata")
		if checkErrata && !haveErrata {
			return call("The question wants the corrected figure, so I search the bulletin for errata first.", "errata")
		}
		rows, haveRows := grepped(turns, ask[1])
		if !haveRows {
			return call(fmt.Sprintf("I search the bulletin for the %s row.", ask[1]), ask[1])
		}
		value, line := "", ""
		for _, r := range officeqaRow.FindAllStringSubmatch(rows, -1) {
			if r[2] == ask[1] && r[3] == ask[2] {
				line, value = r[1], r[4]
			}
		}
		if value == "" {
			return "The bulletin has no row for that series and period.\n<answer>not found</answer>", nil
		}
		note := "The table row gives the figure."
		if checkErrata {
			for _, e := range officeqaErrata.FindAllStringSubmatch(errata, -1) {
				if e[1] == line {
					value, note = e[2], "An erratum corrects the table row; I use the corrected figure."
				}
			}
		}
		answer := value
		if v.bad != synth.OfficeQAErrata || !hasID(ids, synth.OfficeQAErrata) {
			answer = v.dress(value)
		}
		return note + "\n<answer>" + answer + "</answer>", nil
	},
}
