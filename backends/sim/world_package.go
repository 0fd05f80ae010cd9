package sim

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/prompts"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// The package world: the sim benchmark's questions answered under a skill
// package (pkg/skillpkg) instead of one SKILL.md, where the rules an item
// needs live in three places, as they do in a real skill directory:
//
//   - Answer-writing rules (the format and hedging pitfalls) are the
//     procedure: the agent follows them from SKILL.md, or from a reference
//     it opened.
//   - Record-type rules (units, rounding, sign, counting, scale) are facts
//     the agent takes from references/: it opens every references/*.md
//     when SKILL.md points there (mentions "references/"), and trusts only
//     what it read there for those rules, as a skill that says "rules for
//     each record type live in references/" asks.
//   - Reading codes (the reading pitfalls) is work the agent does not
//     trust itself with: it runs the helper scripts under scripts/ on the
//     code, and a reading rule holds only when a script implements it.
//
// The package reaches the agent inlined, as the bundle a target given no
// read-file tool sees (skillpkg.Encode), or, for a target given the
// read_skill_file tool (skillpkg.WithReadTool), as SKILL.md and a list of
// the other files: the agent then calls the tool for the files it would
// open (the references when SKILL.md points there, the scripts) and
// answers under the files it read. The reply names the files the
// agent opened and ran, and, when a rule it needed was not where it
// looked, says so: that is the trajectory the optimizer reads to learn
// where a rule belongs. A single-file skill never matches this world, so
// single-file runs are unchanged.

// Where a rule lives in a package.
const (
	homeEntry     = ""            // SKILL.md (or a reference the agent opened)
	homeReference = "references/" // a references/*.md file the agent opened
	homeScript    = "scripts/"    // a script under scripts/
)

// homeOf returns where the package world's agent looks for a pitfall's rule.
func homeOf(category string) string {
	switch category {
	case "units", "rounding", "sign", "counting", "scale":
		return homeReference
	case "reading":
		return homeScript
	default:
		return homeEntry
	}
}

// Phrases of the package world's replies that the analysts read.
const (
	// hintReference + cue + hintReferenceEnd: a record-type rule the agent
	// looked for in references/ and did not find.
	hintReference    = "I looked in references/ for the rule on "
	hintReferenceEnd = " and found none."
	// hintScript + cue + hintScriptEnd: a code no script read for it.
	hintScript    = "No script in scripts/ reads "
	hintScriptEnd = "; I read it by eye."
	// hintNoPointer: SKILL.md does not point to references/ at all.
	hintNoPointer = "SKILL.md does not point me to references/."
)

// scriptFile is the helper script the analysts create for reading rules;
// referenceFile the reference file of a rule's category.
const scriptFile = "scripts/read_codes.py"

func referenceFile(category string) string { return "references/" + category + ".md" }

// packageOf decodes a skill that is a multi-file bundle.
func packageOf(skill string) (*skillpkg.Package, bool) {
	if !skillpkg.IsBundle(skill) {
		return nil, false
	}
	p, err := skillpkg.Decode(skill)
	if err != nil {
		return nil, false
	}
	return p, true
}

// packageRead is what the package world's agent reads of a package.
type packageRead struct {
	entry   string
	refs    string   // the opened references, concatenated
	scripts string   // the scripts, concatenated
	opened  []string // references opened
	ran     []string // scripts run
	pointed bool     // SKILL.md points to references/
}

func readPackage(p *skillpkg.Package) packageRead {
	pr := packageRead{entry: p.Entry()}
	pr.pointed = strings.Contains(pr.entry, homeReference)
	var refs, scripts []string
	for _, name := range p.Paths() {
		text, _ := p.File(name)
		switch {
		case strings.HasPrefix(name, homeReference) && (pr.pointed || strings.Contains(pr.entry, name)):
			pr.opened = append(pr.opened, name)
			refs = append(refs, text)
		case strings.HasPrefix(name, homeScript):
			pr.ran = append(pr.ran, name)
			scripts = append(scripts, text)
		}
	}
	pr.refs, pr.scripts = strings.Join(refs, "\n"), strings.Join(scripts, "\n")
	return pr
}

// where returns the text in which the agent finds a rule of category.
func (pr packageRead) where(category string) string {
	switch homeOf(category) {
	case homeReference:
		return pr.refs
	case homeScript:
		return pr.scripts
	default:
		return pr.entry + "\n" + pr.refs
	}
}

var packageWorld = world{
	name: "package",
	match: func(req *llm.Request) bool {
		skill, ok := simbench.SkillOf(systemText(req.Messages))
		return ok && skillpkg.IsBundle(skill)
	},
	answer: func(m *Model, req *llm.Request, seed int64) (string, []llm.ToolCall) {
		return m.packageTarget(req, seed), nil
	},
}

var packageToolWorld = world{
	name: "package_tool",
	match: func(req *llm.Request) bool {
		if !offersReadTool(req) {
			return false
		}
		skill, ok := simbench.SkillOf(systemText(req.Messages))
		return ok && strings.Contains(skill, "\n"+skillpkg.ToolListHeader+"\n")
	},
	answer: func(m *Model, req *llm.Request, seed int64) (string, []llm.ToolCall) {
		return m.packageToolTarget(req, seed)
	},
}

func offersReadTool(req *llm.Request) bool {
	for _, t := range req.Tools {
		if t.Name == skillpkg.ReadFileTool {
			return true
		}
	}
	return false
}

// packageTarget answers a sim benchmark question under a package, as
// [Model.target] does under one skill, but each rule counts only where the
// agent looks for it (see the package world above).
func (m *Model) packageTarget(req *llm.Request, seed int64) string {
	bundle, _ := simbench.SkillOf(systemText(req.Messages))
	question := simbench.QuestionOf(lastUserText(req.Messages))
	p, ok := packageOf(bundle)
	if !ok {
		return "The skill package I was given does not decode; I answer without it.\n<answer>unknown</answer>"
	}
	return m.packageAnswer(req.Model, question, p, seed)
}

// packageToolTarget answers under a package given as SKILL.md, a file
// list and the read_skill_file tool: first it calls the tool, in one turn,
// for every file the package world's agent opens (the references when
// SKILL.md points to references/ or names them, every script) that it has
// not asked for yet; then it answers under the package of SKILL.md and the
// files it read.
func (m *Model) packageToolTarget(req *llm.Request, seed int64) (string, []llm.ToolCall) {
	skill, _ := simbench.SkillOf(systemText(req.Messages))
	at := strings.LastIndex(skill, "\n\n"+skillpkg.ToolListHeader+"\n")
	entry := skill[:at] + "\n"
	var listed []string
	for _, line := range strings.Split(skill[at:], "\n") {
		if rest, ok := strings.CutPrefix(line, "- "); ok {
			if name, _, ok := strings.Cut(rest, " ("); ok {
				listed = append(listed, name)
			}
		}
	}
	// The files asked for and read so far: each tool result by the path
	// its call asked for.
	asked := map[string]string{} // call id -> path
	read := map[string]string{}
	for _, msg := range req.Messages {
		for _, c := range msg.ToolCalls {
			var a struct {
				Path string `json:"path"`
			}
			if json.Unmarshal([]byte(c.Arguments), &a) == nil {
				asked[c.ID] = a.Path
			}
		}
		if msg.Role == llm.RoleTool {
			if name := asked[msg.ToolCallID]; name != "" && !strings.HasPrefix(msg.Content, "error:") {
				read[name] = msg.Content
			}
		}
	}
	askedPaths := slices.Collect(maps.Values(asked))
	pointed := strings.Contains(entry, homeReference)
	var calls []llm.ToolCall
	for _, name := range listed {
		if slices.Contains(askedPaths, name) {
			continue
		}
		if strings.HasPrefix(name, homeReference) && (pointed || strings.Contains(entry, name)) || strings.HasPrefix(name, homeScript) {
			calls = append(calls, llm.ToolCall{ID: fmt.Sprintf("call_pkg_%d", len(asked)+len(calls)+1), Name: skillpkg.ReadFileTool,
				Arguments: mustJSON(map[string]string{"path": name})})
		}
	}
	if len(calls) > 0 {
		return "", calls
	}
	files := map[string]string{skillpkg.EntryFile: entry}
	maps.Copy(files, read)
	p, err := skillpkg.New(files, skillpkg.Limits{})
	if err != nil {
		return "The skill package I read does not hold together (" + err.Error() + "); I answer without it.\n<answer>unknown</answer>", nil
	}
	return m.packageAnswer(req.Model, simbench.QuestionOf(lastUserText(req.Messages)), p, seed), nil
}

// packageAnswer is the package world's answer to question under p.
func (m *Model) packageAnswer(model, question string, p *skillpkg.Package, seed int64) string {
	bundle := skillpkg.Encode(p)
	base, ok := simbench.BaseValue(question)
	if !ok {
		return "I could not find a record value in the question.\n<answer>unknown</answer>"
	}
	sum := sha256.Sum256([]byte(bundle))
	r := simbench.HashRNG([]byte("package"), []byte(model), i64(m.o.Seed), []byte(question), sum[:], i64(seed))
	ids := simbench.PitfallsInQuestion(question)
	nz := m.drawNoise(r, max(len(ids), 1))

	pr := readPackage(p)
	read := pr.entry + "\n" + pr.refs
	drop := m.dilution(llm.EstimateTokens(read))
	all := simbench.ViewSkill(read + "\n" + pr.scripts)
	bad, hint := "", ""
	for _, id := range ids {
		pf, _ := simbench.Lookup(id)
		covered := simbench.ViewSkill(pr.where(pf.Category)).Covered(id)
		if covered && !r.Chance(drop) && !all.Broken(id) {
			continue
		}
		bad = id
		if !covered {
			switch homeOf(pf.Category) {
			case homeReference:
				hint = hintReference + pf.Cue + hintReferenceEnd
				if !pr.pointed {
					hint = hintNoPointer
				}
			case homeScript:
				hint = hintScript + pf.Cue + hintScriptEnd
			}
		}
		break
	}
	answer := m.settle(question, ids, bad, all.BrokenIDs, nz).dress(base)
	var b strings.Builder
	b.WriteString("I read SKILL.md")
	if len(pr.opened) > 0 {
		b.WriteString(", opened " + strings.Join(pr.opened, ", "))
	}
	if len(pr.ran) > 0 {
		b.WriteString(" and ran " + strings.Join(pr.ran, ", ") + " on the code")
	}
	b.WriteString(".")
	if hint != "" {
		b.WriteString(" " + hint)
	}
	return b.String() + "\n<answer>" + answer + "</answer>"
}

// packageHome returns where a failed trajectory says the agent looked for
// pitfall p's rule and did not find it: the file to put the rule in
// (referenceFile, scriptFile), or "" when the trajectory says nothing (the
// rule belongs in SKILL.md, or the failure is not about a missing rule).
func packageHome(tr prompts.Trajectory, p simbench.Pitfall) string {
	for _, msg := range tr.Messages {
		if msg.Role != llm.RoleAssistant {
			continue
		}
		switch {
		case strings.Contains(msg.Content, hintReference+p.Cue+hintReferenceEnd):
			return referenceFile(p.Category)
		case strings.Contains(msg.Content, hintScript+p.Cue+hintScriptEnd):
			return scriptFile
		}
	}
	return ""
}

// scriptFunc is the helper function that implements a reading rule: its
// docstring states the rule, its body keeps the code as printed.
func scriptFunc(p simbench.Pitfall, text string) string {
	return fmt.Sprintf("def keep_%s(code):\n    %q\n    return code.strip()\n", p.ID, text)
}

// scriptHeader opens a new helper script.
const scriptHeader = "\"\"\"Helpers the agent runs on a code it copies from an archived record.\"\"\"\n"

// referenceHeader opens a new reference file of a category.
func referenceHeader(category string) string {
	return "# Rules for " + category + " in records\n"
}

// routePackage moves an analyst's proposals to the files of a package:
// a rule the trajectories say the agent looked for in references/ or
// scripts/ goes there (appended to the file, or creating it), and an edit
// with a target names the file that holds the target. Other proposals
// stay with SKILL.md. homes maps a pitfall to the file its failures name.
func routePackage(p *skillpkg.Package, props []proposal, homes map[string]string) []proposal {
	out := props[:0:0]
	for _, pr := range props {
		e := pr.edit
		home := homes[pr.pitfall]
		switch {
		case home != "" && (pr.kind == propAdd || pr.kind == propSharpen):
			pf, _ := lookupPitfall(pr.pitfall)
			rule := bulletText(e.Content)
			content := "- " + rule
			if home == scriptFile {
				content = scriptFunc(pf, rule)
			}
			if _, ok := p.File(home); ok {
				e = prompts.Item{File: home, Op: "append", Content: content, SupportCount: e.SupportCount, Label: e.Label}
			} else {
				head := referenceHeader(pf.Category)
				if home == scriptFile {
					head = scriptHeader
				}
				e = prompts.Item{File: home, Op: skillpkg.OpCreateFile, Content: head + "\n" + content, SupportCount: e.SupportCount, Label: e.Label}
				if home != scriptFile {
					e.Content += "\n"
				}
			}
			pr.kind = propAdd
		case e.Target != "":
			e.File = fileHolding(p, e.Target)
		}
		pr.edit = e
		out = append(out, pr)
	}
	return out
}

// fileHolding returns the package file that holds target ("" = SKILL.md,
// also when no file does).
func fileHolding(p *skillpkg.Package, target string) string {
	for _, name := range p.Paths() {
		if text, _ := p.File(name); strings.Contains(text, target) {
			if name == skillpkg.EntryFile {
				return ""
			}
			return name
		}
	}
	return ""
}

// packageHomes reads, for each failed trajectory, which file the agent
// looked for its pitfall's rule in.
func packageHomes(trs []prompts.Trajectory) map[string]string {
	homes := map[string]string{}
	for _, tr := range trs {
		if tr.Hard >= 1 {
			continue
		}
		g, ok := gold(tr)
		if !ok {
			continue
		}
		id, ok := simbench.IdentifyPitfall(answerOf(tr), g)
		if !ok {
			continue
		}
		p, _ := simbench.Lookup(id)
		if home := packageHome(tr, p); home != "" {
			homes[id] = home
		}
	}
	return homes
}

// foldCreate unites two create_file contents of one file: every paragraph
// of b that a does not hold is added after a's.
func foldCreate(a, b string) string {
	have := map[string]bool{}
	var paras []string
	for _, t := range []string{a, b} {
		for _, para := range strings.Split(strings.TrimSpace(t), "\n\n") {
			if k := strings.TrimSpace(para); k != "" && !have[k] {
				have[k] = true
				paras = append(paras, strings.TrimRight(para, "\n"))
			}
		}
	}
	return strings.Join(paras, "\n\n") + "\n"
}

// descriptionEdit is a failure analyst's set_description proposal when the
// run trains the description (AnalystInput.TrainDescription) and failed
// trajectories show an agent that never loaded the package: a package
// world reply always starts "I read SKILL.md", and an agent CLI's reply
// on a package it opened is led by the backend's note of the files, so a
// failed reply with neither is an agent that answered without the skill.
// The agent loads a skill whose description asks to be read before
// starting (agent.go), so the proposal adds that request. Support is the
// count of such failures; false when there are none, the skill is not a
// package, or the description already asks.
func descriptionEdit(in *prompts.AnalystInput) (prompts.Item, bool) {
	p, ok := packageOf(in.Skill)
	if !ok || !in.TrainDescription || in.Mode != prompts.ModePatch {
		return prompts.Item{}, false
	}
	fm, err := p.FrontMatter()
	if err != nil || strings.Contains(strings.ToLower(fm.Description), "before you start") {
		return prompts.Item{}, false
	}
	n := 0
	for _, tr := range in.Trajectories {
		if tr.Hard >= 1 {
			continue
		}
		loaded := false
		for _, msg := range tr.Messages {
			if msg.Role == llm.RoleAssistant && (strings.Contains(msg.Content, "I read SKILL.md") || strings.Contains(msg.Content, skillpkg.OpenedNote)) {
				loaded = true
			}
		}
		if !loaded {
			n++
		}
	}
	if n == 0 {
		return prompts.Item{}, false
	}
	desc := strings.TrimRight(strings.TrimSpace(fm.Description), ".") + ". Read it before you start."
	return prompts.Item{Op: skillpkg.OpSetDescription, Content: desc, SupportCount: n}, true
}
