package sim

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench/synth"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// The household worlds (textgame, alfworld): each step's prompt holds the
// skill, the task, the recent steps, the observation and the available
// actions. The sim plays a fixed plan from what it reads there: find an
// object of the task's kind, prepare it when the task's words call for it
// (as far as the skill explains those words), put it in place, and
// another for a pair. It replies with a sentence and <action>…</action>.
var (
	householdTask    = regexp.MustCompile(`(?m)^Task: put a (?:(pair of) )?(?:(\S+) )?(\S+?)s? (?:in|on) (\S+ \d+)\.$`)
	householdActions = regexp.MustCompile(`(?m)^Available actions: (.+)$`)
	householdStep    = regexp.MustCompile(`(?m)^> (.+)\n(.*)$`)
	householdGold    = regexp.MustCompile(`gold: complete the task "(.+?)"`)
	householdAction  = regexp.MustCompile(`<action>(.*?)</action>`)
	householdSees    = regexp.MustCompile(`(?:In|On) the (\S+ \d+), you see (.+)\.$`)
	householdPick    = regexp.MustCompile(`^You pick up the (.+?) from the (\S+ \d+)\.$`)
	householdPut     = regexp.MustCompile(`^You put the (.+?) (?:in|on) the (\S+ \d+)\.$`)
)

// householdRecs are the rooms' receptacles, in the order the sim searches.
var householdRecs = []string{"countertop 1", "table 1", "cabinet 1", "drawer 1", "fridge 1", "sinkbasin 1", "microwave 1"}

// householdPlan is what the sim knows of a game from one prompt.
type householdPlan struct {
	kind, want string
	count      int
	verb, dev  string // the preparation the agent believes it needs
	acts       []string
	steps      [][2]string // action, observation
}

func (p *householdPlan) can(a string) bool { return slices.Contains(p.acts, a) }

// at is the receptacle the agent stands at ("" before it moves).
func (p *householdPlan) at() string {
	for i := len(p.steps) - 1; i >= 0; i-- {
		if r, ok := strings.CutPrefix(p.steps[i][0], "go to "); ok && strings.HasPrefix(p.steps[i][1], "You arrive") {
			return r
		}
	}
	return ""
}

// done reports whether an action succeeded with an observation prefix.
func (p *householdPlan) did(prefix string) int {
	n := 0
	for _, s := range p.steps {
		if strings.HasPrefix(s[1], prefix) {
			n++
		}
	}
	return n
}

// seenAt tracks, from the observations so far, which receptacle holds
// each object the agent has seen, and the object it carries.
func (p *householdPlan) seenAt() (where map[string]string, looked map[string]bool, held string) {
	where, looked = map[string]string{}, map[string]bool{}
	for _, s := range p.steps {
		obs := s[1]
		if m := householdSees.FindStringSubmatch(obs); m != nil {
			looked[m[1]] = true
			for o := range strings.SplitSeq(strings.NewReplacer(", and ", ", ", " and ", ", ").Replace(m[2]), ", ") {
				if o = strings.TrimPrefix(strings.TrimSpace(o), "a "); o != "" && o != "nothing" {
					where[o] = m[1]
				}
			}
		}
		if m := householdPick.FindStringSubmatch(obs); m != nil {
			delete(where, m[1])
			held = m[1]
		}
		if m := householdPut.FindStringSubmatch(obs); m != nil {
			where[m[1]], held = m[2], ""
		}
	}
	return where, looked, held
}

func (p *householdPlan) next() (string, string) {
	where, looked, held := p.seenAt()
	for _, a := range p.acts {
		if rest, ok := strings.CutPrefix(a, "put "); ok {
			held, _, _ = strings.Cut(rest, " in/on ")
		}
	}
	at := p.at()
	if held != "" {
		if p.verb != "" && p.did(fmt.Sprintf("You %s the %s", p.verb, held)) == 0 {
			if a := fmt.Sprintf("%s %s with %s", p.verb, held, p.dev); p.can(a) {
				return a, fmt.Sprintf("The task wants it prepared: I %s the %s.", p.verb, held)
			}
			return "go to " + p.dev, fmt.Sprintf("I take the %s to %s to prepare it.", held, p.dev)
		}
		if at != p.want {
			return "go to " + p.want, fmt.Sprintf("I carry the %s to %s.", held, p.want)
		}
		if p.can("open " + p.want) {
			return "open " + p.want, "It is closed; I open it."
		}
		return fmt.Sprintf("put %s in/on %s", held, p.want), fmt.Sprintf("I put the %s in place.", held)
	}
	if p.did("You put the "+p.kind) >= p.count {
		return "look", "The task should be complete; I look around."
	}
	for _, a := range p.acts {
		if strings.HasPrefix(a, "take "+p.kind+" ") && !strings.HasSuffix(a, " from "+p.want) {
			return a, "Here is one; I pick it up."
		}
	}
	for _, r := range householdRecs {
		for o, rr := range where {
			if rr == r && r != p.want && r != at && strings.HasPrefix(o, p.kind+" ") {
				return "go to " + r, fmt.Sprintf("I saw a %s at %s; I go back for it.", o, r)
			}
		}
	}
	if at != "" && p.can("open "+at) {
		return "open " + at, "I open it to look inside."
	}
	for _, r := range householdRecs {
		if !looked[r] && r != p.want && r != at {
			return "go to " + r, "I search " + r + " next."
		}
	}
	return "look", "I have searched everywhere."
}

var householdWorld = world{
	name: "household",
	match: func(req *llm.Request) bool {
		u := worldUser(req.Messages)
		// The literal is a cheap first test: most requests are not this
		// world's, and the pattern, anchored at a line start, has no
		// literal prefix for the regexp package to search for.
		return strings.Contains(u, "Task: put a ") && householdTask.MatchString(u) && householdActions.MatchString(u) && strings.Contains(u, skillHeader)
	},
	answer: func(m *Model, req *llm.Request, seed int64) (string, []llm.ToolCall) {
		user := worldUser(req.Messages)
		t := householdTask.FindStringSubmatch(user)
		task := strings.TrimPrefix(t[0], "Task: ")
		ids := synth.CuesIn(task, allRuleIDs())
		v := m.judge(skillIn(user[:strings.Index(user, "\nTask: ")]), task, ids, req.Model, seed)
		p := &householdPlan{kind: t[3], want: t[4], count: 1,
			acts: strings.Split(householdActions.FindStringSubmatch(user)[1], " | ")}
		if t[1] != "" && v.bad != synth.RulePair {
			p.count = 2
		}
		for _, id := range ids {
			if vd, ok := synth.HouseholdVerb[id]; ok && v.bad != id && !v.typo {
				p.verb, p.dev = vd[0], vd[1]
			}
		}
		if at := strings.Index(user, "\nRecent steps:\n"); at >= 0 {
			hist := user[at+len("\nRecent steps:\n") : strings.Index(user, "\nObservation: ")]
			for _, s := range householdStep.FindAllStringSubmatch(hist, -1) {
				p.steps = append(p.steps, [2]string{s[1], s[2]})
			}
		}
		if v.bad != "" && !hasID(ids, v.bad) {
			// A harmful rule misleads the agent here: it gives up.
			return "The skill's advice says this task needs nothing more.\n<action>look</action>", nil
		}
		action, why := p.next()
		return why + "\n<action>" + action + "</action>", nil
	},
	identify: func(tr prompts.Trajectory) (string, bool) {
		task := tr.Task
		for _, s := range systemTexts(tr) {
			if g := householdGold.FindStringSubmatch(s); g != nil {
				task = g[1]
			}
		}
		var actions []string
		for _, msg := range tr.Messages {
			if msg.Role == llm.RoleAssistant {
				if a := householdAction.FindStringSubmatch(msg.Content); a != nil {
					actions = append(actions, a[1])
				}
			}
		}
		if len(actions) == 0 {
			return "", false
		}
		puts := 0
		for _, a := range actions {
			if strings.HasPrefix(a, "put ") {
				puts++
			}
		}
		for _, id := range synth.CuesIn(task, allRuleIDs()) {
			if vd, ok := synth.HouseholdVerb[id]; ok && !slices.ContainsFunc(actions, func(a string) bool { return strings.HasPrefix(a, vd[0]+" ") }) {
				return id, true
			}
			if id == synth.RulePair && puts < 2 {
				return id, true
			}
		}
		return "", false
	},
}
