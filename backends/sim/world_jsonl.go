package sim

import (
	"regexp"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench/synth"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// jsonl: the task shows a ledger record with its value on file; the reply
// is a sentence and <answer>…</answer>.
var jsonlValue = regexp.MustCompile(regexp.QuoteMeta(synth.JSONLValue) + `(\d+)\.`)

var jsonlWorld = world{
	name: "jsonl",
	match: func(req *llm.Request) bool {
		u := worldUser(req.Messages)
		return jsonlValue.MatchString(u) && strings.Contains(u, synth.JSONLQuestion) &&
			strings.Contains(worldSystem(req.Messages), skillHeader)
	},
	answer: func(m *Model, req *llm.Request, seed int64) (string, []llm.ToolCall) {
		user := worldUser(req.Messages)
		value := jsonlValue.FindStringSubmatch(user)[1]
		v := m.judge(skillIn(worldSystem(req.Messages)), user, synth.CuesIn(user, allRuleIDs()), req.Model, seed)
		return "The record gives its value on file; I report it as the skill asks.\n<answer>" + v.dress(value) + "</answer>", nil
	},
}
