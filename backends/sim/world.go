package sim

import (
	"crypto/sha256"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench"
	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/bench/synth"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
)

// A world is the sim's face for one synthetic world (pkg/bench/synth): it
// recognises its benchmark's target prompt in a request's messages and
// answers it in the benchmark's reply format. It reads only the request,
// as a real model would: documents, images and workbooks reach it through
// the messages (tool results, image parts), never from disk.
type world struct {
	name string
	// match reports whether req is this benchmark's target request.
	match func(req *llm.Request) bool
	// answer returns the reply: text, and tool calls for agent benchmarks.
	answer func(m *Model, req *llm.Request, seed int64) (string, []llm.ToolCall)
	// identify, when set, names the rule behind a failed trajectory of
	// this world that the sim benchmark's wrong answers do not explain.
	identify func(tr prompts.Trajectory) (string, bool)
}

// worlds are every world the sim plays, tried in this order (each is
// defined in its world_*.go file).
var worlds = []world{
	docvqaWorld,
	householdWorld,
	jsonlWorld,
	livemathWorld,
	officeqaWorld,
	packageWorld,
	packageToolWorld,
	searchqaWorld,
	spreadsheetWorld,
}

// worldOf returns the world whose target prompt req is, if any. An
// optimizer request (a ```json payload in the last user message) is never
// a world's.
func worldOf(req *llm.Request) (world, bool) {
	if strings.Contains(lastUserText(req.Messages), "```json") {
		return world{}, false
	}
	for _, w := range worlds {
		if w.match(req) {
			return w, true
		}
	}
	return world{}, false
}

// skillHeader opens the skill section of the benchmarks' prompts
// ([bench.SkillSection]).
var skillHeader = strings.SplitAfter(bench.SkillSection("x"), "relevant.\n\n")[0]

// skillIn returns the skill inside text: what follows the skill section's
// header, up to the next header of the prompt (a line starting "# " or
// "## " that the skill itself would not hold is not detectable, so the
// rest of the message is taken).
func skillIn(text string) string {
	at := strings.Index(text, skillHeader)
	if at < 0 {
		return ""
	}
	return text[at+len(skillHeader):]
}

// verdict is how the simulated agent fares on one item of a world.
type verdict struct {
	// bad is the rule that goes wrong ("" = none).
	bad string
	// typo is set when noise spoils a right answer with a slip no rule explains.
	typo bool
}

// judge decides the simulated agent's outcome on an item that needs the
// rules ids, under skill, as the sim target does for the sim benchmark:
// every rule must be covered (dilution may drop one) and none broken; a
// harmful rule in the skill spills over onto a share of the other items;
// noise flips the outcome. key identifies the item (its text).
func (m *Model) judge(skill, key string, ids []string, model string, seed int64) verdict {
	sum := sha256.Sum256([]byte(skill))
	r := simbench.HashRNG([]byte("world"), []byte(model), i64(m.o.Seed), []byte(key), sum[:], i64(seed))
	nz := m.drawNoise(r, max(len(ids), 1))
	drop := m.dilution(llm.EstimateTokens(skill))
	bad := ""
	for _, id := range ids {
		ru, _ := synth.LookupRule(id)
		if !ru.Covered(skill) || r.Chance(drop) || ru.Broken(skill) {
			bad = id
			break
		}
	}
	return m.settle(key, ids, bad, func() []string { return brokenRules(skill) }, nz)
}

// noise is the target model's own slip on one answer, drawn before the
// rest of the answer so that a seed always gives the same draws: whether
// the outcome flips (Options.Epsilon), whether a flip that spoils a right
// answer is a typo rather than a rule's wrong answer, and which of the
// item's rules such a flip picks.
type noise struct {
	flip, toTypo bool
	pick         int
}

// drawNoise draws noise from r, the pick among picks rules (the callers
// differ in the range, and the range decides whether a draw is spent).
func (m *Model) drawNoise(r *simbench.RNG, picks int) noise {
	flip := r.Chance(m.o.Epsilon)
	toTypo := r.Chance(0.5)
	return noise{flip: flip, toTypo: toTypo, pick: r.IntN(picks)}
}

// dilution is the chance that the model misses a rule it was given, for
// a skill of the given length in tokens (Options.LengthBudget and
// DilutionPer100).
func (m *Model) dilution(tokens int64) float64 {
	if over := tokens - int64(m.o.LengthBudget); m.o.LengthBudget > 0 && over > 0 {
		return min(m.o.DilutionPer100*float64(over)/100, 1)
	}
	return 0
}

// settle finishes the verdict on an item that needs the rules ids, once
// the skill's own rules are judged: bad is the first of them that went
// wrong ("" for none). When none did, a harmful rule of broken() spills
// over onto the item (key) at Options.HarmSpill and is the bad one. The
// noise then flips the outcome: a wrong answer comes out right, a right
// one wrong (the picked rule's wrong answer, or a typo).
func (m *Model) settle(key string, ids []string, bad string, broken func() []string, nz noise) verdict {
	if bad == "" && m.o.HarmSpill > 0 {
		for _, id := range broken() {
			if !hasID(ids, id) && simbench.SpillDraw(key, id) < m.o.HarmSpill {
				bad = id
				break
			}
		}
	}
	v := verdict{bad: bad}
	if nz.flip {
		switch {
		case bad != "":
			v.bad = ""
		case len(ids) > 0 && !nz.toTypo:
			v.bad = ids[nz.pick]
		default:
			v.typo = true
		}
	}
	return v
}

// brokenRules returns the ids of every rule (the sim benchmark's pitfalls,
// then the worlds' own) whose harmful rule skill holds.
func brokenRules(skill string) []string {
	ids := simbench.ViewSkill(skill).BrokenIDs()
	for _, ru := range synth.WorldRules() {
		if ru.Broken(skill) {
			ids = append(ids, ru.ID)
		}
	}
	return ids
}

func hasID(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// dress returns the answer the agent gives for a value under a verdict:
// the value, a rule's wrong answer, or a slip.
func (v verdict) dress(value string) string {
	switch {
	case v.bad != "":
		ru, _ := synth.LookupRule(v.bad)
		return ru.Wrong(value)
	case v.typo:
		return simbench.Typo(value)
	default:
		return value
	}
}

// allRuleIDs returns every rule id a world may use.
func allRuleIDs() []string {
	var ids []string
	for _, p := range simbench.Catalogue() {
		ids = append(ids, p.ID)
	}
	for _, r := range synth.WorldRules() {
		ids = append(ids, r.ID)
	}
	return ids
}

// firstSystem returns the first system message's text.
func worldSystem(msgs []llm.Message) string {
	for _, m := range msgs {
		if m.Role == llm.RoleSystem {
			return m.Text()
		}
	}
	return ""
}

// firstUser returns the first user message's text.
func worldUser(msgs []llm.Message) string {
	for _, m := range msgs {
		if m.Role == llm.RoleUser {
			return m.Text()
		}
	}
	return ""
}

// worldResponse wraps a world's reply as the model's response, with the
// same token accounting as every other reply.
func (m *Model) worldResponse(req *llm.Request, content string, calls []llm.ToolCall) *llm.Response {
	finish := "stop"
	if len(calls) > 0 {
		finish = "tool_calls"
	}
	out := llm.EstimateTokens(content)
	for _, c := range calls {
		out += llm.EstimateTokens(c.Name + c.Arguments)
	}
	return &llm.Response{
		Content: content, ToolCalls: calls, FinishReason: finish, Model: req.Model, Attempts: 1,
		Usage: llm.Usage{InputTokens: InputTokens(req.Messages), OutputTokens: out},
	}
}

// worldGold reads the gold answer from a benchmark's feedback: the
// evaluation message every benchmark appends ([bench.EvalMessage]: "...;
// gold answer X", X a JSON list, a quoted string or bare), or a fail
// reason's "expected [...]" list.
func worldGold(texts ...string) (string, bool) {
	for _, t := range texts {
		if at := strings.LastIndex(t, "; gold answer "); at >= 0 {
			rest := strings.TrimSpace(t[at+len("; gold answer "):])
			if g, ok := firstGold(rest); ok {
				return g, true
			}
			continue
		}
		for _, marker := range []string{"expected one of ", "expected "} {
			if at := strings.LastIndex(t, marker); at >= 0 && strings.HasPrefix(t[at+len(marker):], "[") {
				if g, ok := firstGold(t[at+len(marker):]); ok {
					return g, true
				}
			}
		}
	}
	return "", false
}

// firstGold reads the first gold of a rendered gold list or string: a JSON
// list, a Python list literal, a quoted string, or the bare text.
func firstGold(s string) (string, bool) {
	s = strings.TrimSpace(s)
	var list []string
	switch {
	case s == "":
		return "", false
	case strings.HasPrefix(s, "[") && json.Unmarshal([]byte(s), &list) == nil:
		if len(list) == 0 {
			return "", false
		}
		return strings.TrimSpace(list[0]), true
	case strings.HasPrefix(s, "['"):
		if end := strings.Index(s[2:], "'"); end >= 0 {
			return s[2 : 2+end], true
		}
	case strings.HasPrefix(s, `"`):
		if g, err := strconv.Unquote(s); err == nil {
			return strings.TrimSpace(g), true
		}
	}
	return s, true
}

// identifyWorld names the rule behind a failed trajectory of a world: a
// world's own reading of the trajectory, else the rule whose wrong answer
// the trajectory's answer is (the worlds' rules included).
func identifyWorld(tr prompts.Trajectory) (string, bool) {
	for _, w := range worlds {
		if w.identify == nil {
			continue
		}
		if id, ok := w.identify(tr); ok {
			return id, true
		}
	}
	if g, ok := worldGold(systemTexts(tr)...); ok {
		return identifyValue(answerOf(tr), g)
	}
	return "", false
}

// systemTexts returns a trajectory's fail reason and its system messages,
// last first: where the benchmarks put the evaluation feedback.
func systemTexts(tr prompts.Trajectory) []string {
	texts := []string{tr.FailReason}
	for i := len(tr.Messages) - 1; i >= 0; i-- {
		if tr.Messages[i].Role == llm.RoleSystem {
			texts = append(texts, tr.Messages[i].Content)
		}
	}
	return texts
}

// identifyValue returns the rule whose wrong answer for gold is wrong: a
// pitfall of the sim benchmark or a rule of the worlds.
func identifyValue(wrong, gold string) (string, bool) {
	if id, ok := simbench.IdentifyPitfall(wrong, gold); ok {
		return id, true
	}
	wrong, gold = strings.TrimSpace(wrong), strings.TrimSpace(gold)
	if wrong == gold || gold == "" {
		return "", false
	}
	for _, ru := range synth.WorldRules() {
		if ru.Wrong != nil && ru.Wrong(gold) == wrong {
			return ru.ID, true
		}
	}
	return "", false
}
