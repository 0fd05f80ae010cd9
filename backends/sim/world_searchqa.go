package sim

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench/synth"
	"github.com/skillfleet/skillfleet/pkg/llm"
)

// SearchQA: the question names a register; the search results hold each
// register's figure. The reply is a sentence and <answer>…</answer>.
var (
	searchqaAsk  = regexp.MustCompile(regexp.QuoteMeta(synth.SearchQAAsk[:strings.Index(synth.SearchQAAsk, "%s")]) + `(.+?)` + regexp.QuoteMeta(synth.SearchQAAsk[strings.Index(synth.SearchQAAsk, "%s")+2:]))
	searchqaFact = regexp.MustCompile(`The (.+?) register records the figure (\d+) for this entry\.`)
)

var searchqaWorld = world{
	name: "searchqa",
	match: func(req *llm.Request) bool {
		u := worldUser(req.Messages)
		return strings.HasPrefix(u, "Search results:\n") && searchqaAsk.MatchString(u)
	},
	answer: func(m *Model, req *llm.Request, seed int64) (string, []llm.ToolCall) {
		user := worldUser(req.Messages)
		skill := skillIn(worldSystem(req.Messages))
		q := user[strings.LastIndex(user, "\n\nQuestion: ")+1:]
		mm := searchqaAsk.FindStringSubmatch(q)
		if mm == nil {
			return "The question names no register I can find.\n<answer>unknown</answer>", nil
		}
		value := ""
		for _, f := range searchqaFact.FindAllStringSubmatch(user, -1) {
			if f[1] == mm[1] {
				value = f[2]
			}
		}
		if value == "" {
			return fmt.Sprintf("No search result gives the %s register's figure.\n<answer>unknown</answer>", mm[1]), nil
		}
		v := m.judge(skill, q, synth.CuesIn(q, allRuleIDs()), req.Model, seed)
		return fmt.Sprintf("The result about the %s register gives the figure; answering as the skill asks.\n<answer>%s</answer>", mm[1], v.dress(value)), nil
	},
}
