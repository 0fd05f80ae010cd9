package sim

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench/synth"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// LiveMath: the question states a constant; the choices state it in
// several ways. The agent picks the choice its (mis)reading gives and
// answers with the letter.
var (
	livemathAsk    = regexp.MustCompile(`extremal constant equals (\d+)\.`)
	livemathChoice = regexp.MustCompile(`(?m)^([A-G])\. The extremal constant is (\S+)\.$`)
)

// livemathChoices returns the choices of a LiveMath prompt: label -> value.
func livemathChoices(user string) (labels []string, values map[string]string) {
	values = map[string]string{}
	for _, m := range livemathChoice.FindAllStringSubmatch(user, -1) {
		labels = append(labels, m[1])
		values[m[1]] = m[2]
	}
	return labels, values
}

var livemathWorld = world{
	name: "livemath",
	match: func(req *llm.Request) bool {
		u := worldUser(req.Messages)
		return (strings.HasPrefix(u, "Question:\n") || strings.Contains(u, "\n\nQuestion:\n")) && livemathAsk.MatchString(u) && livemathChoice.MatchString(u)
	},
	answer: func(m *Model, req *llm.Request, seed int64) (string, []llm.ToolCall) {
		user := worldUser(req.Messages)
		q := livemathAsk.FindStringSubmatch(user)
		labels, values := livemathChoices(user)
		if q == nil || len(labels) == 0 {
			return "I cannot read the question's choices.\n<answer>A</answer>", nil
		}
		question := user[:strings.Index(user, "\n\nChoices:")]
		v := m.judge(skillIn(worldSystem(req.Messages)), question, synth.CuesIn(question, allRuleIDs()), req.Model, seed)
		want := v.dress(q[1])
		pick := ""
		for _, l := range labels {
			if values[l] == want {
				pick = l
			}
		}
		if pick == "" {
			// The misreading matches no choice: settle for the first
			// choice that does not state the constant as printed.
			for _, l := range labels {
				if values[l] != q[1] && pick == "" {
					pick = l
				}
			}
		}
		return fmt.Sprintf("Reading the constant as %s, the matching statement is choice %s.\n<answer>%s</answer>", want, pick, pick), nil
	},
	identify: func(tr prompts.Trajectory) (string, bool) {
		g, ok := worldGold(systemTexts(tr)...)
		if !ok {
			return "", false
		}
		for _, msg := range tr.Messages {
			if msg.Role != llm.RoleUser || !livemathAsk.MatchString(msg.Content) {
				continue
			}
			_, values := livemathChoices(msg.Content)
			wrong, gold := values[strings.TrimSpace(tr.Answer)], values[g]
			if wrong == "" || gold == "" {
				return "", false
			}
			return identifyValue(wrong, gold)
		}
		return "", false
	},
}
