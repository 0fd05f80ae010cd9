package sim

import (
	"cmp"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// optimize answers an optimizer request. Its randomness is drawn from the
// payload bytes, the request seed, the model name and Options.Seed.
func (m *Model) optimize(kind string, payload json.RawMessage, model string, seed int64) (string, error) {
	payload = unpad(payload)
	r := simbench.HashRNG([]byte("optimizer"), []byte(model), i64(m.o.Seed), payload, i64(seed))
	switch kind {
	case prompts.AnalystFailure, prompts.AnalystSuccess:
		var in prompts.AnalystInput
		if err := decode(kind, payload, &in); err != nil {
			return "", err
		}
		if err := checkMode(kind, in.Mode); err != nil {
			return "", err
		}
		var out *prompts.AnalystReply
		if kind == prompts.AnalystFailure {
			out = m.analystFailure(&in, r)
		} else {
			out = m.analystSuccess(&in, r)
		}
		return reply("I compared the trajectories with the current skill. Here is my analysis.", out)
	case prompts.MergeFailure, prompts.MergeSuccess:
		var in prompts.MergeInput
		if err := decode(kind, payload, &in); err != nil {
			return "", err
		}
		if err := checkMode(kind, in.Mode); err != nil {
			return "", err
		}
		side := "failure"
		if kind == prompts.MergeSuccess {
			side = "success"
		}
		return reply("I merged the proposals of the group.", merge(in.Skill, in.Mode, side, in.Patches))
	case prompts.MergeFinal:
		var in prompts.MergeFinalInput
		if err := decode(kind, payload, &in); err != nil {
			return "", err
		}
		if err := checkMode(kind, in.Mode); err != nil {
			return "", err
		}
		out := merge(in.Skill, in.Mode, "", [][]prompts.Item{in.Failure, in.Success})
		out.Reasoning = fmt.Sprintf("Combined %d failure and %d success proposals, failure ones first, dropping duplicates.", len(in.Failure), len(in.Success))
		return reply("Here is the combined proposal for this step.", out)
	case prompts.Ranking:
		var in prompts.RankInput
		if err := decode(kind, payload, &in); err != nil {
			return "", err
		}
		if err := checkMode(kind, in.Mode); err != nil {
			return "", err
		}
		return reply("These are the changes I would apply, most valuable first.", rank(&in))
	case prompts.LRController:
		var in prompts.LRInput
		if err := decode(kind, payload, &in); err != nil {
			return "", err
		}
		return reply("Here is my decision on the number of changes.", learningRate(&in))
	case prompts.Rewrite:
		var in prompts.RewriteInput
		if err := decode(kind, payload, &in); err != nil {
			return "", err
		}
		return reply("I rewrote the skill with the selected suggestions.", rewrite(&in))
	case prompts.SlowUpdate:
		var in prompts.EpochInput
		if err := decode(kind, payload, &in); err != nil {
			return "", err
		}
		return reply("Here is the new epoch guidance.", slowUpdate(&in))
	case prompts.MetaSkill:
		var in prompts.EpochInput
		if err := decode(kind, payload, &in); err != nil {
			return "", err
		}
		return reply("Here are my updated notes.", metaSkill(&in))
	case prompts.Consolidate:
		var in prompts.ConsolidateInput
		if err := decode(kind, payload, &in); err != nil {
			return "", err
		}
		return reply("Here are the consolidated notes.", consolidate(&in))
	default:
		return "", fmt.Errorf("unknown request kind %q (want one of %s)", kind, strings.Join(prompts.Names(), ", "))
	}
}

// decode decodes a payload strictly into v, a pointer to kind's input
// type, whose kind must be kind.
func decode(kind string, payload json.RawMessage, v any) error {
	if err := decodeStrict(payload, v); err != nil {
		return fmt.Errorf("%s payload: %w", kind, err)
	}
	if k := reflect.ValueOf(v).Elem().FieldByName("Kind"); k.IsValid() && k.String() != kind {
		return fmt.Errorf("%s payload: kind is %q", kind, k.String())
	}
	return nil
}

func checkMode(kind, mode string) error {
	if modes := prompts.Modes(kind); !slices.Contains(modes, mode) {
		return fmt.Errorf("%s payload: unknown mode %q (want %s)", kind, mode, strings.Join(modes, ", "))
	}
	return nil
}

// Proposal kinds, which decide a suggestion's type in rewrite mode.
const (
	propAdd        = "add"        // a new rule
	propSharpen    = "sharpen"    // a vague line replaced by the rule
	propRemove     = "remove"     // a harmful rule deleted
	propCompress   = "compress"   // a rule shortened or a redundant line dropped
	propHarmful    = "harmful"    // a harmful rule (the sim's mistake)
	propLure       = "lure"       // a category's lure, taken for a fix (the sim's mistake)
	propIrrelevant = "irrelevant" // a platitude (the sim's mistake)
)

// proposal is one analyst edit in patch form, before it is shaped for the
// run's update mode.
type proposal struct {
	edit    prompts.Item
	kind    string
	pitfall string
	why     string
	// again marks an edit the payload lists as rejected, proposed anyway:
	// the analyst gives it the least support, having seen it fail.
	again bool
}

// support returns n, or 1 for an edit proposed again after a rejection.
func (p proposal) support(n int) int {
	if p.again {
		return 1
	}
	return n
}

// rejectedSet holds the edits the step buffer lists as rejected.
type rejectedSet map[string]bool

func editKey(op, target, content string) string {
	return strings.ToLower(strings.TrimSpace(op)) + "\x00" + strings.TrimSpace(target) + "\x00" + strings.TrimSpace(content)
}

// fileEditKey is [editKey] of an edit of a package file: the same key for
// SKILL.md (file "" or "SKILL.md"), the file in front for any other.
func fileEditKey(file, op, target, content string) string {
	k := editKey(op, target, content)
	if file != "" && file != "SKILL.md" {
		k = "file\x00" + file + "\x00" + k
	}
	return k
}

func newRejectedSet(buf []prompts.BufferEntry) rejectedSet {
	s := rejectedSet{}
	for _, e := range buf {
		for _, r := range e.RejectedEdits {
			if r.Op != "" {
				s[fileEditKey(r.File, r.Op, r.Target, r.Content)] = true
				continue
			}
			// A rejected suggestion: compare in patch form.
			if ed, ok := suggestionEdit(prompts.Item{Type: r.Type, Title: r.Title, Instruction: r.Instruction}); ok {
				s[editKey(ed.Op, ed.Target, ed.Content)] = true
			}
		}
	}
	return s
}

func (s rejectedSet) has(e prompts.Item) bool {
	return s[fileEditKey(e.File, e.Op, e.Target, e.Content)]
}

// gold returns the reference answer of a trajectory: its reference, else
// what the fail reason or the evaluation messages say.
func gold(tr prompts.Trajectory) (string, bool) {
	if g := strings.TrimSpace(tr.Reference); g != "" {
		return g, true
	}
	texts := []string{tr.FailReason}
	for i := len(tr.Messages) - 1; i >= 0; i-- {
		if tr.Messages[i].Role == llm.RoleSystem {
			texts = append(texts, tr.Messages[i].Content)
		}
	}
	if g, ok := simbench.GoldFromFeedback(texts...); ok {
		return g, true
	}
	return worldGold(texts...)
}

// answerOf returns a trajectory's final answer.
func answerOf(tr prompts.Trajectory) string {
	if a := strings.TrimSpace(tr.Answer); a != "" {
		return a
	}
	for i := len(tr.Messages) - 1; i >= 0; i-- {
		if tr.Messages[i].Role == llm.RoleAssistant {
			return simbench.ExtractAnswer(tr.Messages[i].Content)
		}
	}
	return ""
}

// lastHeading returns the last "## " heading line of the skill's editable
// part, or "".
func lastHeading(skill string) string {
	h := ""
	for _, l := range editableLines(skill) {
		if strings.HasPrefix(l, "## ") {
			h = l
		}
	}
	return h
}

// lineWith returns the first editable line whose text holds every stem.
func lineWith(skill string, stems []string) string {
	for _, l := range editableLines(skill) {
		low := strings.ToLower(l)
		all := len(stems) > 0
		for _, s := range stems {
			all = all && strings.Contains(low, s)
		}
		if all {
			return l
		}
	}
	return ""
}

// ruleEdits returns the edits that would add pitfall p's rule to skill,
// one per wording, starting from a seeded one: replace p's vague line when
// the skill has it, else insert after the last heading or append.
func ruleEdits(skill string, p simbench.Pitfall, r *simbench.RNG) []proposal {
	texts := p.Texts()
	start := r.IntN(len(texts))
	head, _ := splitProtected(skill)
	heading := ""
	if h := lastHeading(skill); h != "" && r.Chance(0.5) {
		heading = h
	}
	var out []proposal
	for i := range texts {
		text := texts[(start+i)%len(texts)]
		switch {
		case strings.Contains(head, p.Vague):
			out = append(out, proposal{kind: propSharpen, edit: prompts.Item{Op: "replace", Target: p.Vague, Content: text}})
		case heading != "":
			out = append(out, proposal{kind: propAdd, edit: prompts.Item{Op: "insert_after", Target: heading, Content: "- " + text}})
		default:
			out = append(out, proposal{kind: propAdd, edit: prompts.Item{Op: "append", Content: "- " + text}})
		}
	}
	return out
}

// harmfulShare is the share of harmful rules among the mistakes and
// guesses the analysts make (the rest are irrelevant platitudes).
const harmfulShare = 0.25

// temptation returns, in place of pitfall p's narrow fix, the lure of p's
// category ([simbench.Lure]: format and reading have one), whose harmful
// rule reads like one rule for all of the category's slips. An analyst is
// drawn to it when it sees kinds >= 2 different slips of the category at
// once, with probability min(1, 5q) (always, by default). It believes the
// lure is the fix, so the caller gives it the fix's support, and every
// analyst so tempted proposes the same edit: only the step buffer (it was
// rejected) or the meta skill (it did harm) talks an analyst out of it. A
// lure the skill already holds is not proposed again.
func (m *Model) temptation(skill, meta string, p simbench.Pitfall, kinds int, r *simbench.RNG) (proposal, bool) {
	g, ok := simbench.Lure(p.Category)
	if !ok || kinds < 2 || !r.Chance(min(1, 5*m.o.HarmfulRate)) {
		return proposal{}, false
	}
	if namedHarmful(meta, g) || viewSkill(skill).Broken(g.ID) {
		return proposal{}, false
	}
	return proposal{kind: propLure, pitfall: g.ID, edit: prompts.Item{Op: "append", Content: "- " + g.Harmful}}, true
}

// mistake returns, with probability q, a harmful (harmfulShare) or
// irrelevant proposal that stands in for the right one; its support is 1. A
// harmful rule that the meta skill names, or that the skill already
// holds, gives way to an irrelevant one, as does a harmful one when no
// pitfall is at hand (p nil).
func (m *Model) mistake(skill, meta string, p *simbench.Pitfall, r *simbench.RNG) (proposal, bool) {
	if !r.Chance(m.o.HarmfulRate) {
		return proposal{}, false
	}
	harmful := r.Chance(harmfulShare)
	plat := simbench.Platitudes()[r.IntN(len(simbench.Platitudes()))]
	if harmful && p != nil && !namedHarmful(meta, *p) && !viewSkill(skill).Broken(p.ID) {
		return proposal{kind: propHarmful, pitfall: p.ID, edit: prompts.Item{Op: "append", Content: "- " + p.Harmful}}, true
	}
	return proposal{kind: propIrrelevant, edit: prompts.Item{Op: "append", Content: "- " + plat}}, true
}

// namedHarmful reports whether the meta skill names p's harmful rule.
func namedHarmful(meta string, p simbench.Pitfall) bool {
	return meta != "" && strings.Contains(strings.ToLower(meta), strings.ToLower(p.Harmful))
}

// knownHarmful returns the pitfalls whose harmful rule the analyst knows
// to be harmful: the meta skill names it, or the step buffer lists an
// edit that added it among the rejected ones. Only then, or when it sees
// through the line by itself, does a failure analyst blame such a line.
func knownHarmful(meta string, buf []prompts.BufferEntry) map[string]bool {
	known := map[string]bool{}
	for _, p := range allPitfalls() {
		if namedHarmful(meta, p) {
			known[p.ID] = true
		}
	}
	for _, e := range buf {
		for _, rej := range e.RejectedEdits {
			ed := prompts.Item{Op: rej.Op, Target: rej.Target, Content: rej.Content}
			if rej.Op == "" {
				var ok bool
				if ed, ok = suggestionEdit(prompts.Item{Type: rej.Type, Title: rej.Title, Instruction: rej.Instruction}); !ok {
					continue
				}
			}
			added := ed.Content + "\n" + strings.Join(rej.ChangeSummary, "\n")
			if op := strings.ToLower(strings.TrimSpace(ed.Op)); op == "delete" || op == "remove" {
				added = ""
			}
			for _, id := range viewSkill(added).BrokenIDs() {
				known[id] = true
			}
		}
	}
	return known
}

// choose returns the first candidate that was not rejected; a rejected one
// is still chosen with probability r, marked as proposed again.
func (m *Model) choose(cands []proposal, rejected rejectedSet, r *simbench.RNG) (proposal, bool) {
	for _, c := range cands {
		if !rejected.has(c.edit) {
			return c, true
		}
		if r.Chance(m.o.ReproposeRate) {
			c.again = true
			return c, true
		}
	}
	return proposal{}, false
}

type failureGroup struct {
	id    string
	count int
}

func (m *Model) analystFailure(in *prompts.AnalystInput, r *simbench.RNG) *prompts.AnalystReply {
	view := viewSkill(in.Skill)
	// A skill package in patch mode: proposals go to the files the
	// trajectories name (world_package.go); identity otherwise.
	route := func(props []proposal) []proposal { return props }
	if pk, ok := packageOf(in.Skill); ok && in.Mode == prompts.ModePatch {
		homes := packageHomes(in.Trajectories)
		route = func(props []proposal) []proposal { return routePackage(pk, props, homes) }
	}
	rejected := newRejectedSet(in.StepBuffer)
	known := knownHarmful(in.MetaSkill, in.StepBuffer)
	byID := map[string]*failureGroup{}
	var groups []*failureGroup
	unexplained := 0
	for _, tr := range in.Trajectories {
		if tr.Hard >= 1 {
			continue
		}
		g, ok := gold(tr)
		id := ""
		if ok {
			id, ok = simbench.IdentifyPitfall(answerOf(tr), g)
		}
		if !ok {
			id, ok = identifyWorld(tr)
		}
		if !ok {
			unexplained++
			continue
		}
		if fg, seen := byID[id]; seen {
			fg.count++
			continue
		}
		fg := &failureGroup{id: id, count: 1}
		byID[id] = fg
		groups = append(groups, fg)
	}
	slices.SortStableFunc(groups, func(a, b *failureGroup) int { return cmp.Compare(b.count, a.count) })
	// Different missing rules of one category, side by side, are what
	// makes a sweeping rule for the category tempting.
	kinds := map[string]int{}
	for _, g := range groups {
		if p, _ := lookupPitfall(g.id); !view.Covered(g.id) && !view.Broken(g.id) {
			kinds[p.Category]++
		}
	}

	var props []proposal
	var summary []prompts.FailureType
	var notes []string
	for _, g := range groups {
		p, _ := lookupPitfall(g.id)
		desc := p.Description
		broken := view.Broken(g.id)
		// A harmful line reads like the skill's rule on its topic: the
		// analyst blames it when it knows the line to be harmful, else
		// sees through it only with probability DiagnoseRate.
		blamed := broken && (known[g.id] || r.Chance(m.o.DiagnoseRate))
		if blamed {
			if line := lineWith(in.Skill, p.HarmfulStems); line != "" {
				desc += fmt.Sprintf(" The skill's line %q causes it.", strings.TrimSpace(line))
				c := proposal{kind: propRemove, pitfall: g.id, edit: prompts.Item{Op: "delete", Target: line}}
				if pick, ok := m.choose(route([]proposal{c}), rejected, r); ok {
					pick.edit.SupportCount = pick.support(g.count)
					props = append(props, pick)
				}
			}
		}
		switch {
		case broken && !blamed:
			desc += " The skill already has a line on this; the agent did not apply it."
		case view.Covered(g.id) && !broken:
			desc += " The skill already states the rule; the agent did not apply it."
			if in.SkillAware {
				notes = append(notes, "Apply this rule every time it is relevant: "+p.Rule)
			}
		case !view.Covered(g.id):
			desc += " The skill does not state the rule that prevents it."
			// A tempting harmful rule is believed to be the fix and gets the
			// fix's support; an ordinary mistake gets the least support.
			pick, ok, support := proposal{}, false, g.count
			if bad, isBad := m.temptation(in.Skill, in.MetaSkill, p, kinds[p.Category], r); isBad {
				pick, ok = m.choose([]proposal{bad}, rejected, r)
			}
			if !ok {
				if bad, isBad := m.mistake(in.Skill, in.MetaSkill, &p, r); isBad {
					pick, ok = m.choose([]proposal{bad}, rejected, r)
					support = 1
				}
			}
			if !ok {
				cands := ruleEdits(in.Skill, p, r)
				for i := range cands {
					cands[i].pitfall = g.id
				}
				pick, ok = m.choose(route(cands), rejected, r)
				support = g.count
			}
			if !ok {
				break
			}
			if i := slices.IndexFunc(props, func(q proposal) bool { return q.edit.Content == pick.edit.Content }); i >= 0 {
				// One edit for several failure types: a lure, believed to
				// fix them all, sums their support.
				if props[i].kind == propLure && !props[i].again {
					props[i].edit.SupportCount += support
				}
				break
			}
			pick.edit.SupportCount = pick.support(support)
			pick.pitfall = cmp.Or(pick.pitfall, g.id)
			props = append(props, pick)
		}
		summary = append(summary, prompts.FailureType{FailureType: g.id, Count: g.count, Description: desc})
	}
	if it, ok := descriptionEdit(in); ok {
		// The agent never loaded the package: its description is the fix
		// that comes first (world_package.go).
		if pick, ok := m.choose([]proposal{{kind: propAdd, edit: it}}, rejected, r); ok {
			props = append([]proposal{pick}, props...)
		}
	}
	props = append(props, m.speculate(in, props, r)...)
	if unexplained > 0 {
		summary = append(summary, prompts.FailureType{FailureType: "unrecognised_answer", Count: unexplained,
			Description: "The answer matches no known failure pattern; it looks like a one-off slip that no rule prevents."})
	}
	for i := range props {
		props[i].why = fmt.Sprintf("%d failed trajectories show %s.", props[i].edit.SupportCount, cmp.Or(props[i].pitfall, "this problem"))
		if in.SkillAware {
			props[i].edit.Label = "SKILL_DEFECT"
		}
	}
	out := &prompts.AnalystReply{
		BatchSize:      json.RawMessage(strconv.Itoa(len(in.Trajectories))),
		FailureSummary: summary,
		Patch:          shape(in.Mode, in.Skill, in.Budget, props, failureReasoning(groups, unexplained, kept(in.Mode, in.Budget, len(props)))),
	}
	if len(notes) > 0 {
		out.AppendixNotes, _ = json.Marshal(notes)
	}
	return out
}

// maxSpeculative bounds the speculative proposals of one analyst reply.
const maxSpeculative = 3

// speculate returns the proposals with which a failure analyst pads its
// reply when the budget leaves far more room than its failures support,
// as a model asked for "at most N edits" tends to: q times the spare
// slots, rounded down and at most maxSpeculative, are filled with guesses
// that no failure supports, support 1: a wordy platitude or (harmfulShare)
// the harmful rule of a pitfall the skill does not cover, offered as a
// general caution. With the default budget (4) and q (0.2) there is no
// padding; with a budget of 50 there is, and ranking cannot clip it.
func (m *Model) speculate(in *prompts.AnalystInput, props []proposal, r *simbench.RNG) []proposal {
	if in.Mode == prompts.ModeFullRewrite {
		return nil
	}
	view := viewSkill(in.Skill)
	seen := map[string]bool{}
	for _, p := range props {
		seen[p.edit.Content] = true
	}
	var out []proposal
	n := min(int(float64(in.Budget-len(props))*m.o.HarmfulRate), maxSpeculative)
	for range n {
		var c proposal
		cat := simbench.Catalogue()
		if p := cat[r.IntN(len(cat))]; r.Chance(harmfulShare) && !view.Covered(p.ID) && !view.Broken(p.ID) && !namedHarmful(in.MetaSkill, p) {
			c = proposal{kind: propHarmful, pitfall: p.ID, edit: prompts.Item{Op: "append", Content: "- " + p.Harmful}}
		} else {
			plat := simbench.Platitudes()
			c = proposal{kind: propIrrelevant, edit: prompts.Item{Op: "append", Content: "- " + plat[r.IntN(len(plat))]}}
		}
		if seen[c.edit.Content] || strings.Contains(in.Skill, strings.TrimPrefix(c.edit.Content, "- ")) {
			continue
		}
		if pick, ok := m.choose([]proposal{c}, newRejectedSet(in.StepBuffer), r); ok {
			seen[c.edit.Content] = true
			pick.edit.SupportCount = 1
			out = append(out, pick)
		}
	}
	return out
}

func failureReasoning(groups []*failureGroup, unexplained, n int) string {
	var parts []string
	for _, g := range groups {
		parts = append(parts, fmt.Sprintf("%s (%d)", g.id, g.count))
	}
	s := "No failure matched a known pattern."
	if len(parts) > 0 {
		s = "The failures come from: " + strings.Join(parts, ", ") + "."
	}
	if unexplained > 0 {
		s += fmt.Sprintf(" %d look like one-off slips.", unexplained)
	}
	return s + fmt.Sprintf(" I propose %d change(s) for causes the skill can fix.", n)
}

// compressions are edits that make the skill shorter without losing a
// rule: drop a wordy line that names no concrete situation, drop a second
// line stating a rule already stated, drop a vague line whose rule is
// present, shorten a long rule to its shortest wording.
func compressions(skill string) []proposal {
	view := viewSkill(skill)
	lines := editableLines(skill)
	var out []proposal
	for _, l := range lines {
		if isFiller(l) {
			out = append(out, proposal{kind: propCompress, edit: prompts.Item{Op: "delete", Target: l}})
		}
	}
	seen := map[string]bool{}
	for _, l := range lines {
		k := ruleKey(l)
		if !strings.HasPrefix(k, "rule:") {
			continue
		}
		if seen[k] {
			out = append(out, proposal{kind: propCompress, pitfall: k[5:], edit: prompts.Item{Op: "delete", Target: l}})
		}
		seen[k] = true
	}
	for _, p := range allPitfalls() {
		if !view.Covered(p.ID) {
			continue
		}
		for _, l := range lines {
			if strings.Contains(l, p.Vague) && ruleKey(l) == "" {
				out = append(out, proposal{kind: propCompress, pitfall: p.ID, edit: prompts.Item{Op: "delete", Target: l}})
				break
			}
		}
	}
	for _, l := range lines {
		k := ruleKey(l)
		if !strings.HasPrefix(k, "rule:") {
			continue
		}
		p, _ := lookupPitfall(k[5:])
		short := slices.MinFunc(p.Texts(), func(a, b string) int { return cmp.Compare(len(a), len(b)) })
		if text := bulletText(l); len(text) > len(short)+8 {
			out = append(out, proposal{kind: propCompress, pitfall: p.ID, edit: prompts.Item{Op: "replace", Target: text, Content: short}})
		}
	}
	return out
}

// isFiller reports whether a skill line is wordy filler: a long list item
// that states no rule and no harmful rule.
func isFiller(line string) bool {
	t := strings.TrimSpace(line)
	return strings.HasPrefix(t, "- ") && len(t) > 110 && ruleKey(t) == ""
}

func (m *Model) analystSuccess(in *prompts.AnalystInput, r *simbench.RNG) *prompts.AnalystReply {
	view := viewSkill(in.Skill)
	var patterns []string
	var seen []string
	for _, tr := range in.Trajectories {
		if tr.Hard < 1 {
			continue
		}
		for _, id := range pitfallsInTask(tr.Task) {
			if view.Covered(id) && !slices.Contains(seen, id) && len(patterns) < 5 {
				seen = append(seen, id)
				p, _ := lookupPitfall(id)
				patterns = append(patterns, "Applied the rule: "+p.Rule)
			}
		}
	}
	if len(patterns) == 0 {
		patterns = []string{"Reported the record value exactly as the question quotes it."}
	}
	kinds := map[string]int{}
	for _, id := range seen {
		p, _ := lookupPitfall(id)
		kinds[p.Category]++
	}
	over := m.o.LengthBudget > 0 && llm.EstimateTokens(in.Skill) > int64(m.o.LengthBudget)
	var props []proposal
	reasoning := "The successes follow the skill's rules; nothing needs to change."
	if r.Chance(0.3) || over {
		var pf *simbench.Pitfall
		if len(seen) > 0 {
			p, _ := lookupPitfall(seen[r.IntN(len(seen))])
			pf = &p
		}
		// The lure of a category reads as a generalisation of the rules
		// that worked: the success analyst's favourite mistake.
		var cands []proposal
		why := "The skill can say the same in fewer words."
		reasoning = "The successes follow the skill's rules; one change makes the skill more compact."
		if pf != nil {
			if bad, ok := m.temptation(in.Skill, in.MetaSkill, *pf, kinds[pf.Category], r); ok {
				cands = []proposal{bad}
				why = "The rule on " + pf.ID + " works; a more general instruction would cover more cases."
				reasoning = "The successes follow the skill's rules; one of them generalises."
			}
		}
		if cands == nil {
			if bad, ok := m.mistake(in.Skill, in.MetaSkill, pf, r); ok {
				cands = []proposal{bad}
			} else {
				cands = compressions(in.Skill)
				if pk, ok := packageOf(in.Skill); ok && in.Mode == prompts.ModePatch {
					cands = routePackage(pk, cands, nil)
				}
			}
		}
		if pick, ok := m.choose(cands, newRejectedSet(in.StepBuffer), r); ok {
			pick.edit.SupportCount = 1
			pick.why = why
			props = append(props, pick)
		} else {
			reasoning = "The successes follow the skill's rules; nothing needs to change."
		}
	}
	return &prompts.AnalystReply{
		BatchSize:       json.RawMessage(strconv.Itoa(len(in.Trajectories))),
		SuccessPatterns: patterns,
		Patch:           shape(in.Mode, in.Skill, in.Budget, props, reasoning),
	}
}

// kept is how many of n proposals a mode's budget keeps.
func kept(mode string, budget, n int) int {
	if mode == prompts.ModeFullRewrite {
		return n
	}
	return min(n, max(budget, 0))
}

// shape turns proposals into the patch body of a mode: edits (patch),
// revise suggestions (rewrite), or one skill candidate (full rewrite).
// Patch and rewrite keep at most budget items.
func shape(mode, skill string, budget int, props []proposal, reasoning string) *prompts.PatchBody {
	body := &prompts.PatchBody{Reasoning: reasoning}
	props = props[:kept(mode, budget, len(props))]
	switch mode {
	case prompts.ModeRewrite:
		items := make([]prompts.Item, 0, len(props))
		for _, p := range props {
			items = append(items, suggestion(p))
		}
		body.ReviseSuggestions = items
	case prompts.ModeFullRewrite:
		if len(props) == 0 {
			body.SkillCandidates = []prompts.Item{}
			break
		}
		edits := make([]prompts.Item, len(props))
		var summary []string
		for i, p := range props {
			edits[i] = p.edit
			summary = append(summary, describe(p.edit))
		}
		body.SkillCandidates = []prompts.Item{{Title: "Revised skill", ChangeSummary: summary, NewSkill: applyEdits(skill, edits)}}
	default:
		items := make([]prompts.Item, 0, len(props))
		for _, p := range props {
			items = append(items, p.edit)
		}
		body.Edits = items
	}
	return body
}

func describe(e prompts.Item) string {
	switch e.Op {
	case "delete":
		return fmt.Sprintf("Removed %q.", strings.TrimSpace(e.Target))
	case "replace":
		return fmt.Sprintf("Replaced %q with %q.", e.Target, e.Content)
	default:
		return fmt.Sprintf("Added %q.", bulletText(e.Content))
	}
}

// suggestion renders a proposal as a revise suggestion whose instruction
// [suggestionEdit] can read back.
func suggestion(p proposal) prompts.Item {
	s := prompts.Item{Motivation: p.why, SupportCount: p.edit.SupportCount, Label: p.edit.Label, PriorityHint: "medium"}
	if p.edit.SupportCount >= 2 {
		s.PriorityHint = "high"
	}
	topic := cmp.Or(p.pitfall, "general")
	switch p.edit.Op {
	case "delete":
		s.Type, s.Title = "remove_rule", "Remove a misleading line ("+topic+")"
		s.Instruction = `Remove "` + p.edit.Target + `"`
	case "replace":
		s.Type, s.Title = "clarify", "Sharpen the guidance on "+topic
		if p.kind == propCompress {
			s.Type, s.Title = "compress", "Shorten the rule on "+topic
		}
		s.Instruction = `Replace "` + p.edit.Target + `" with "` + p.edit.Content + `"`
	default:
		s.Type, s.Title = "add_rule", "Add a rule on "+topic
		s.Instruction = `Add this rule: "` + bulletText(p.edit.Content) + `"`
	}
	return s
}

// suggestionEdit reads a revise suggestion back as a patch edit: the sim's
// own instruction forms, or any item that already has an op.
func suggestionEdit(s prompts.Item) (prompts.Item, bool) {
	if s.Op != "" {
		return prompts.Item{Op: s.Op, Target: s.Target, Content: s.Content}, true
	}
	in := strings.TrimSpace(s.Instruction)
	unq := func(x string) string { return strings.TrimSuffix(strings.TrimPrefix(x, `"`), `"`) }
	switch {
	case strings.HasPrefix(in, "Add this rule: "):
		return prompts.Item{Op: "append", Content: "- " + unq(strings.TrimPrefix(in, "Add this rule: "))}, true
	case strings.HasPrefix(in, "Remove "):
		return prompts.Item{Op: "delete", Target: unq(strings.TrimPrefix(in, "Remove "))}, true
	case strings.HasPrefix(in, "Replace "):
		body := strings.TrimPrefix(in, "Replace ")
		if t, c, ok := strings.Cut(body, `" with "`); ok {
			return prompts.Item{Op: "replace", Target: strings.TrimPrefix(t, `"`), Content: strings.TrimSuffix(c, `"`)}, true
		}
	}
	if in == "" {
		return prompts.Item{}, false
	}
	return prompts.Item{Op: "append", Content: "- " + in}, true
}

// itemKey says what an item changes, for de-duplication: a rule (or
// harmful rule) by its pitfall whatever the op, a deletion by its target,
// anything else by its exact op, target and content.
func itemKey(it prompts.Item, mode string) string {
	e := it
	if mode == prompts.ModeRewrite {
		var ok bool
		if e, ok = suggestionEdit(it); !ok {
			return "title\x00" + it.Type + "\x00" + it.Title
		}
	}
	op := strings.ToLower(strings.TrimSpace(e.Op))
	if it.File != "" && it.File != "SKILL.md" {
		// A package file's edit: creations of one file fold into one
		// (merge), other edits are told apart by their file.
		if op == skillpkg.OpCreateFile {
			return "create\x00" + it.File
		}
		return "file\x00" + it.File + "\x00" + itemKey(prompts.Item{Op: it.Op, Target: it.Target, Content: it.Content}, mode)
	}
	if op == "delete" || op == "remove" {
		return "delete\x00" + strings.TrimSpace(e.Target)
	}
	if k := ruleKey(e.Content); k != "" {
		return "add\x00" + k
	}
	return editKey(op, e.Target, e.Content)
}

// merge unites item lists: duplicates (by [itemKey]) become one item whose
// support is the sum (an item without support counts 1), a replace
// preferred over other ways of adding the same rule; the result is ordered
// by support, then first appearance. Full-rewrite candidates are folded
// into one candidate.
func merge(skill, mode, side string, lists [][]prompts.Item) *prompts.MergeReply {
	out := &prompts.MergeReply{}
	n := 0
	for _, l := range lists {
		n += len(l)
	}
	if mode == prompts.ModeFullRewrite {
		var cands []prompts.Item
		for _, l := range lists {
			cands = append(cands, l...)
		}
		out.SkillCandidates = []prompts.Item{}
		if len(cands) > 0 {
			c := foldCandidates(skill, cands)
			c.SourceType = cmp.Or(cands[0].SourceType, side)
			out.SkillCandidates = []prompts.Item{c}
		}
		out.Reasoning = fmt.Sprintf("Folded %d skill candidates into one that keeps every change they make.", len(cands))
		return out
	}
	type acc struct {
		it      prompts.Item
		support int
	}
	byKey := map[string]*acc{}
	var order []*acc
	for _, l := range lists {
		for _, it := range l {
			k := itemKey(it, mode)
			s := max(it.SupportCount, 1)
			if a, ok := byKey[k]; ok {
				a.support += s
				if strings.HasPrefix(k, "create\x00") {
					a.it.Content = foldCreate(a.it.Content, it.Content)
				}
				if isReplace(it, mode) && !isReplace(a.it, mode) {
					src := a.it.SourceType
					a.it = it
					a.it.SourceType = cmp.Or(src, it.SourceType)
				}
				continue
			}
			a := &acc{it: it, support: s}
			byKey[k] = a
			order = append(order, a)
		}
	}
	slices.SortStableFunc(order, func(a, b *acc) int { return cmp.Compare(b.support, a.support) })
	items := make([]prompts.Item, len(order))
	for i, a := range order {
		it := a.it
		it.SupportCount = a.support
		it.SourceType = cmp.Or(it.SourceType, side)
		items[i] = it
	}
	if mode == prompts.ModeRewrite {
		out.ReviseSuggestions = items
	} else {
		out.Edits = items
	}
	out.Reasoning = fmt.Sprintf("Merged %d proposals into %d, combining those that address the same cause and summing their support.", n, len(items))
	return out
}

func isReplace(it prompts.Item, mode string) bool {
	if mode == prompts.ModeRewrite {
		e, ok := suggestionEdit(it)
		return ok && e.Op == "replace"
	}
	return strings.EqualFold(strings.TrimSpace(it.Op), "replace")
}

// foldCandidates merges whole-skill candidates into one: the base skill
// without every line some candidate removed, plus every line some
// candidate added (one line per rule).
func foldCandidates(base string, cands []prompts.Item) prompts.Item {
	baseLines := editableLines(base)
	inBase := map[string]bool{}
	for _, l := range baseLines {
		inBase[strings.TrimSpace(l)] = true
	}
	removed := map[string]bool{}
	var added []string
	seenAdded := map[string]bool{}
	var summary []string
	support := 0
	for _, c := range cands {
		support += max(c.SupportCount, 1)
		for _, s := range c.ChangeSummary {
			if !slices.Contains(summary, s) {
				summary = append(summary, s)
			}
		}
		lines := editableLines(c.NewSkill)
		has := map[string]bool{}
		for _, l := range lines {
			has[strings.TrimSpace(l)] = true
		}
		for _, l := range baseLines {
			if t := strings.TrimSpace(l); t != "" && !has[t] {
				removed[t] = true
			}
		}
		for _, l := range lines {
			t := strings.TrimSpace(l)
			if t == "" || inBase[t] || seenAdded[t] {
				continue
			}
			if k := ruleKey(t); k != "" && seenAdded[k] {
				continue
			} else if k != "" {
				seenAdded[k] = true
			}
			seenAdded[t] = true
			added = append(added, t)
		}
	}
	head, rest := splitProtected(base)
	var kept []string
	for _, l := range strings.Split(head, "\n") {
		if !removed[strings.TrimSpace(l)] {
			kept = append(kept, l)
		}
	}
	skill := dropEmptyLines(strings.Join(kept, "\n")) + rest
	edits := make([]prompts.Item, len(added))
	for i, l := range added {
		edits[i] = prompts.Item{Op: "append", Content: l}
	}
	return prompts.Item{Title: "Merged revision", ChangeSummary: summary, NewSkill: applyEdits(skill, edits), SupportCount: support}
}

func rank(in *prompts.RankInput) *prompts.RankReply {
	idx := make([]int, len(in.Items))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		return cmp.Compare(max(in.Items[b].SupportCount, 1), max(in.Items[a].SupportCount, 1))
	})
	idx = idx[:min(len(idx), max(in.Budget, 0))]
	sel := make([]json.RawMessage, len(idx))
	for i, k := range idx {
		sel[i] = json.RawMessage(strconv.Itoa(k))
	}
	return &prompts.RankReply{
		Reasoning:       fmt.Sprintf("Chose %d of %d changes, those with the most support first.", len(idx), len(in.Items)),
		SelectedIndices: sel,
	}
}

// pitfallsIn returns the pitfalls whose rule or harmful rule a text states.
func pitfallsIn(text string) (rules, harms []string) {
	v := viewSkill(text)
	for _, p := range allPitfalls() {
		if v.Covered(p.ID) {
			rules = append(rules, p.ID)
		}
		if v.Broken(p.ID) {
			harms = append(harms, p.ID)
		}
	}
	return rules, harms
}

func learningRate(in *prompts.LRInput) *prompts.LRReply {
	distinct := map[string]bool{}
	var risks []string
	for _, s := range in.Items {
		rules, harms := pitfallsIn(s)
		for _, id := range append(rules, harms...) {
			distinct[id] = true
		}
		// A suggestion is described by its title, which names its pitfall.
		for _, word := range strings.FieldsFunc(s, func(c rune) bool { return !(c == '_' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') }) {
			if _, ok := lookupPitfall(word); ok {
				distinct[word] = true
			}
		}
		for _, id := range harms {
			risks = append(risks, "An item states a rule that may hurt "+id+" tasks.")
		}
	}
	if risks == nil {
		risks = []string{}
	}
	n := min(max(len(distinct), 1), 8)
	if len(in.Items) > 0 {
		n = min(n, len(in.Items))
	}
	return &prompts.LRReply{
		LearningRate: json.RawMessage(strconv.Itoa(n)),
		Reasoning:    fmt.Sprintf("The %d items address %d distinct problems; one change per problem.", len(in.Items), len(distinct)),
		Confidence:   "medium",
		RiskNotes:    risks,
	}
}

func rewrite(in *prompts.RewriteInput) *prompts.RewriteReply {
	var edits []prompts.Item
	summary := []string{}
	for _, s := range in.Suggestions {
		e, ok := suggestionEdit(s)
		if !ok {
			continue
		}
		edits = append(edits, e)
		summary = append(summary, describe(e))
	}
	return &prompts.RewriteReply{
		Reasoning:     fmt.Sprintf("Applied %d suggestions, each as a rule line or a removal.", len(edits)),
		ChangeSummary: summary,
		NewSkill:      applyEdits(in.Skill, edits),
	}
}

// troubled returns the pitfalls behind an epoch's regressed and
// persistently failing pairs, most frequent first.
func troubled(in *prompts.EpochInput) (ids []string, counts map[string]int) {
	counts = map[string]int{}
	for _, p := range in.Pairs {
		if p.Category != "regressed" && p.Category != "persistent_fail" {
			continue
		}
		g, ok := simbench.GoldFromFeedback(p.Curr.FailReason, p.Prev.FailReason)
		if !ok {
			g, ok = worldGold(p.Curr.FailReason, p.Prev.FailReason)
		}
		if !ok {
			continue
		}
		id, ok := identifyValue(p.Curr.PredictedAnswer, g)
		if !ok {
			continue
		}
		if counts[id] == 0 {
			ids = append(ids, id)
		}
		counts[id]++
	}
	slices.SortStableFunc(ids, func(a, b string) int { return cmp.Compare(counts[b], counts[a]) })
	return ids, counts
}

// maxGuidance bounds the new lines of a slow update.
const maxGuidance = 5

func slowUpdate(in *prompts.EpochInput) *prompts.SlowUpdateReply {
	ids, counts := troubled(in)
	if len(ids) == 0 {
		return &prompts.SlowUpdateReply{
			Reasoning:         "No regression or persistent failure points to a missing rule.",
			SlowUpdateContent: strings.TrimSpace(in.Previous),
		}
	}
	var lines, why []string
	has := map[string]bool{}
	for _, id := range ids[:min(len(ids), maxGuidance)] {
		p, _ := lookupPitfall(id)
		lines = append(lines, "- "+p.Rule)
		has[id] = true
		why = append(why, fmt.Sprintf("%s (%d)", id, counts[id]))
	}
	// Earlier guidance stays while the rest of the skill does not state
	// its rule: replacing the block must not lose a rule only it holds
	// (maxGuidance bounds the new lines only).
	head, _ := splitProtected(in.Skill)
	kept := 0
	for _, l := range strings.Split(in.Previous, "\n") {
		k := ruleKey(bulletText(l))
		if !strings.HasPrefix(k, "rule:") || has[k[5:]] || viewSkill(head).Covered(k[5:]) {
			continue
		}
		has[k[5:]] = true
		lines = append(lines, "- "+bulletText(l))
		kept++
	}
	reason := "Regressions and persistent failures come from: " + strings.Join(why, ", ") + "."
	if kept > 0 {
		reason += fmt.Sprintf(" Kept %d earlier line(s) whose rule the skill states nowhere else.", kept)
	}
	return &prompts.SlowUpdateReply{Reasoning: reason, SlowUpdateContent: strings.Join(lines, "\n")}
}

const neverPrefix = "- Never propose: "

func metaSkill(in *prompts.EpochInput) *prompts.MetaSkillReply {
	lines := []string{
		"- Prefer replacing a vague line with a precise rule over appending a new rule beside it.",
		"- Keep the skill short: every rule should name a concrete situation and what to do in it.",
	}
	for _, l := range strings.Split(in.Previous, "\n") {
		if l = strings.TrimSpace(l); strings.HasPrefix(l, neverPrefix) && !slices.Contains(lines, l) {
			lines = append(lines, l)
		}
	}
	ids, _ := troubled(in)
	view := viewSkill(in.Skill)
	var harmful []string
	for _, id := range ids {
		if !view.Broken(id) {
			continue
		}
		p, _ := lookupPitfall(id)
		harmful = append(harmful, id)
		if l := neverPrefix + `"` + p.Harmful + `" (it broke ` + id + ` tasks).`; !slices.Contains(lines, l) {
			lines = append(lines, l)
		}
	}
	reason := "The comparison shows no rule that did harm."
	if len(harmful) > 0 {
		reason = "Harmful rules in the skill caused regressions: " + strings.Join(harmful, ", ") + "."
	}
	return &prompts.MetaSkillReply{Reasoning: reason, MetaSkillContent: strings.Join(lines, "\n")}
}

// maxNote bounds one consolidated note, in runes.
const maxNote = 120

func consolidate(in *prompts.ConsolidateInput) *prompts.ConsolidateReply {
	notes := []string{}
	seen := map[string]bool{}
	for _, n := range in.Notes {
		n = strings.TrimSpace(n)
		if i := strings.Index(n, ". "); i >= 0 {
			n = n[:i+1]
		}
		n = truncateRunes(n, maxNote)
		k := strings.ToLower(n)
		if n == "" || seen[k] {
			continue
		}
		seen[k] = true
		notes = append(notes, n)
	}
	return &prompts.ConsolidateReply{Notes: notes}
}
