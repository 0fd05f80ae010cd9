package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/nightly"
	"github.com/skillfleet/skillfleet/pkg/prompts"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// SleepAware is a simulated model that also answers skillfleet sleep's
// prompts (pkg/nightly): replay attempts of the researcher persona's tasks,
// mining, rubric judging and reflection. Every other request goes to the
// wrapped model unchanged. Like the rest of the sim it is a test double:
// deterministic, reading only the request's messages.
//
// An attempt answers a question about a paper of the persona's reading
// list with its arXiv id, in the form the skill and memory in the system
// message ask for: wrapped in <answer> tags only if they say so, as
// "arXiv:ID" only if they say so (else as a versioned URL), and all in
// lower case if they hold that (harmful) rule. The reflector proposes the
// habits the failures show are missing and, when it sees two kinds of
// format slip at once, also the tempting lower-case rule — a lure the
// night's gate must keep out. A rule the slow memory says a gate rejected
// before is not proposed again.
//
// An attempt offered tools (an API replay whose judge checks a tool was
// called) calls each whose name its skill or memory tells it to call,
// use or run, then answers once the results are in.
//
// An attempt whose skill is a package (a bundle between "<skill>" lines,
// as a night on a skill package gives it) is read as an agent reads a
// skill directory: when SKILL.md points to references/, the agent opens
// every references/*.md and takes the identifier format only from there
// (a rule of that kind elsewhere is not where SKILL.md says it lives);
// its reply names the references it opened and says when the format was
// not there. Seeing that, the reflector puts the arXiv rule in
// references/arxiv.md (create_file, or append once it exists) instead of
// the learned block.
type SleepAware struct{ base llm.Model }

var _ llm.Model = (*SleepAware)(nil)

// NewSleepAware wraps base.
func NewSleepAware(base llm.Model) *SleepAware { return &SleepAware{base: base} }

// Chat answers sleep prompts and passes every other request to the
// wrapped model.
func (s *SleepAware) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if req == nil {
		return s.base.Chat(ctx, req)
	}
	if !isSleepPrompt(req) {
		return s.base.Chat(ctx, req)
	}
	sys := systemText(req.Messages)
	if err := ctx.Err(); err != nil {
		return nil, &llm.Error{Kind: llm.KindOf(err), Msg: "sim", Err: err}
	}
	user := lastUserText(req.Messages)
	var content string
	if strings.HasPrefix(strings.TrimSpace(sys), nightly.PromptMarker+" attempt") {
		if calls := sleepToolCalls(sys, req); len(calls) > 0 {
			return &llm.Response{ToolCalls: calls, FinishReason: "tool_calls", Model: req.Model, Attempts: 1,
				Usage: llm.Usage{InputTokens: InputTokens(req.Messages), OutputTokens: int64(8 * len(calls))}}, nil
		}
		content = sleepAttempt(sys, user)
	} else {
		kind, payload, err := prompts.ExtractPayload(user)
		if err == nil {
			content, err = sleepOptimize(kind, payload)
		}
		if err != nil {
			return nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: "sim: sleep request: " + err.Error()}
		}
	}
	return &llm.Response{Content: content, FinishReason: "stop", Model: req.Model, Attempts: 1,
		Usage: llm.Usage{InputTokens: InputTokens(req.Messages), OutputTokens: llm.EstimateTokens(content)}}, nil
}

// isSleepPrompt reports whether req is one of skillfleet sleep's
// prompts: its system text opens with the sleep prompts' marker.
func isSleepPrompt(req *llm.Request) bool {
	return strings.HasPrefix(strings.TrimSpace(systemText(req.Messages)), nightly.PromptMarker)
}

// sleepToolCalls are the calls an attempt offered tools makes before it
// answers: each offered tool whose name the attempt's documents say to
// call or use ("call the git tool", "use git"), once, in the order
// offered; none once a tool's result is in the conversation.
func sleepToolCalls(sys string, req *llm.Request) []llm.ToolCall {
	if len(req.Tools) == 0 {
		return nil
	}
	for _, m := range req.Messages {
		if m.Role == llm.RoleTool {
			return nil
		}
	}
	low := strings.ToLower(sys)
	var calls []llm.ToolCall
	for _, t := range req.Tools {
		name := strings.ToLower(t.Name)
		for _, verb := range []string{"call ", "use ", "run "} {
			if strings.Contains(low, verb+name) || strings.Contains(low, verb+"the "+name+" tool") {
				calls = append(calls, llm.ToolCall{ID: fmt.Sprintf("call_%d", len(calls)+1), Name: t.Name, Arguments: `{"args":""}`})
				break
			}
		}
	}
	return calls
}

// sleepView is what the skill and memory of an attempt make the sim do:
// wrap the answer in <answer> tags, write arXiv ids as arXiv:ID, write
// all in lower case, write commit messages as Conventional Commits, end
// the answer with a full stop.
type sleepView struct{ wrap, idForm, lower, conventional, fullStop bool }

func viewSleepDocs(sys string) sleepView {
	low := strings.ToLower(sys)
	has := func(words ...string) bool {
		for _, w := range words {
			if strings.Contains(low, w) {
				return true
			}
		}
		return false
	}
	return sleepView{
		wrap:         strings.Contains(low, "<answer>") && has("wrap", "inside", "enclose"),
		idForm:       strings.Contains(low, "arxiv:") && has("no version", "without a version", "yymm", "no url"),
		lower:        has("lower case", "lowercase"),
		conventional: strings.Contains(low, "conventional commit") && has("type(scope)"),
		fullStop:     has("full stop"),
	}
}

// commitAttempt answers the programmer persona's request for a commit
// message: prose unless the documents ask for Conventional Commits.
func commitAttempt(sys string, c nightly.Change) string {
	v := viewSleepDocs(sys)
	msg := "Updated the " + c.Scope + " code: " + c.What
	if v.conventional {
		msg = c.Message()
	}
	if v.fullStop && !strings.HasSuffix(msg, ".") {
		msg += "."
	}
	if v.wrap {
		msg = "<answer>" + msg + "</answer>"
	}
	if v.lower {
		msg = strings.ToLower(msg)
	}
	return "Here is the commit message.\n" + msg
}

func sleepAttempt(sys, user string) string {
	if c, ok := nightly.ChangeByText(user); ok {
		return commitAttempt(sys, c)
	}
	p, ok := nightly.PaperByTitle(user)
	if !ok {
		req, _, _ := strings.Cut(strings.TrimPrefix(user, nightly.PromptMarker+" Request: "), "\n")
		return "Here is how I would handle it: " + req
	}
	lead := "I looked the paper up.\n"
	v := viewSleepDocs(sys)
	if pkg, rest, ok := attemptPackage(sys); ok {
		v, lead = viewSleepPackage(pkg, rest)
	}
	id := "https://arxiv.org/abs/" + p.ID + "v1"
	if v.idForm {
		id = "arXiv:" + p.ID
	}
	ans := "The paper is " + id + "."
	if v.wrap {
		ans = "<answer>" + id + "</answer>"
	}
	reply := lead + ans
	if v.lower {
		reply = strings.ToLower(reply)
	}
	return reply
}

// hintNoArxivReference is the package agent's line when SKILL.md points
// to references/ and no reference there gives the arXiv format.
const hintNoArxivReference = "I looked in references/ for the arXiv identifier format and found none."

// arxivReference is the reference file the reflector writes the arXiv
// rule to.
const arxivReference = "references/arxiv.md"

// attemptPackage finds a skill package in an attempt's system message:
// the bundle between a "<skill>" line and the last "</skill>" line. It
// returns the package and the rest of the message (instructions, memory).
func attemptPackage(sys string) (*skillpkg.Package, string, bool) {
	open, closing := nightly.SkillOpen+"\n", "\n"+nightly.SkillClose
	i := strings.Index(sys, open)
	j := strings.LastIndex(sys, closing)
	if i < 0 || j < i+len(open) {
		return nil, "", false
	}
	bundle := sys[i+len(open) : j]
	if !skillpkg.IsBundle(bundle) {
		return nil, "", false
	}
	p, err := skillpkg.Decode(bundle)
	if err != nil {
		return nil, "", false
	}
	return p, sys[:i] + sys[j+len(closing):], true
}

// viewSleepPackage is what a package makes the attempt's agent do, and
// the lead of its reply: the references it opened and, when it found no
// arXiv format there, that it looked.
func viewSleepPackage(p *skillpkg.Package, rest string) (sleepView, string) {
	entry := p.Entry()
	pointed := strings.Contains(entry, "references/")
	var refs, opened []string
	for _, name := range p.Paths() {
		if !strings.HasPrefix(name, "references/") || !(pointed || strings.Contains(entry, name)) {
			continue
		}
		text, _ := p.File(name)
		refs = append(refs, text)
		opened = append(opened, name)
	}
	refText := strings.Join(refs, "\n")
	v := viewSleepDocs(entry + "\n" + refText + "\n" + rest)
	lead := "I looked the paper up."
	if len(opened) > 0 {
		lead += " I read SKILL.md and opened " + strings.Join(opened, ", ") + "."
	}
	lead += "\n"
	if pointed {
		// SKILL.md says identifier formats live in references/: the
		// agent takes the format from there only.
		v.idForm = viewSleepDocs(refText).idForm
		if !v.idForm {
			lead += hintNoArxivReference + "\n"
		}
	}
	return v, lead
}

var arxivRef = regexp.MustCompile(`arXiv:\d{4}\.\d{4,5}`)

// commitRef finds the commit message the programmer persona asks for, in
// backquotes.
var commitRef = regexp.MustCompile("`(" + nightly.ConventionalCommit + "[^`]*)`")

func sleepOptimize(kind string, payload json.RawMessage) (string, error) {
	switch kind {
	case nightly.KindMine:
		var in nightly.MineInput
		if err := decodeStrict(payload, &in); err != nil {
			return "", err
		}
		return reply("These are the recurring tasks I found.", sleepMine(in))
	case nightly.KindJudge:
		var in nightly.JudgeInput
		if err := decodeStrict(payload, &in); err != nil {
			return "", err
		}
		score, reason := sleepJudge(in)
		return reply("My grade:", map[string]any{"score": score, "reason": reason})
	case nightly.KindReflect:
		var in nightly.ReflectInput
		if err := decodeStrict(payload, &in); err != nil {
			return "", err
		}
		return reply("Here are the edits I propose.", nightly.ReflectReply{Edits: sleepReflect(in)})
	}
	return "", fmt.Errorf("unknown kind %q", kind)
}

func sleepMine(in nightly.MineInput) nightly.MineReply {
	if len(in.Prompts) == 0 || len(strings.TrimSpace(in.Prompts[0])) < 8 {
		return nightly.MineReply{Tasks: []nightly.MinedTask{}}
	}
	t := nightly.MinedTask{Intent: in.Prompts[0]}
	wrapAsked := false
	for _, p := range in.Prompts[1:] {
		if m := arxivRef.FindString(p); m != "" && t.Reference == "" {
			t.Reference = m
		}
		wrapAsked = wrapAsked || strings.Contains(p, "<answer>")
	}
	if wrapAsked {
		t.Checks = append(t.Checks, nightly.Check{Op: nightly.OpContains, Arg: "<answer>"}, nightly.Check{Op: nightly.OpContains, Arg: "</answer>"})
	}
	if t.Reference != "" {
		t.Checks = append(t.Checks, nightly.Check{Op: nightly.OpRegex, Arg: `arXiv:\d{4}\.\d{4,5}`})
	}
	for _, p := range in.Prompts[1:] {
		if m := commitRef.FindStringSubmatch(p); m != nil && t.Reference == "" {
			t.Reference = m[1]
			t.Checks = append(t.Checks, nightly.Check{Op: nightly.OpRegex, Arg: nightly.ConventionalCommit})
			if strings.Contains(p, "no trailing period") {
				t.Checks = append(t.Checks, nightly.Check{Op: nightly.OpNotContains, Arg: ".</answer>"})
			}
		}
	}
	if t.Reference == "" && len(t.Checks) == 0 {
		t.Rubric = "The reply does what was asked: " + in.Prompts[0]
	}
	return nightly.MineReply{Tasks: []nightly.MinedTask{t}}
}

func sleepJudge(in nightly.JudgeInput) (float64, string) {
	reply := strings.ToLower(in.Reply)
	n, got := 0, 0
	for _, w := range strings.FieldsFunc(strings.ToLower(in.Rubric), func(r rune) bool { return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9') }) {
		if len(w) <= 3 {
			continue
		}
		n++
		if strings.Contains(reply, w) {
			got++
		}
	}
	if n == 0 {
		return 0, "the rubric names nothing to look for"
	}
	score := float64(int(100*float64(got)/float64(n))) / 100
	return score, fmt.Sprintf("the reply covers %d of the rubric's %d key words", got, n)
}

func sleepReflect(in nightly.ReflectInput) []nightly.Edit {
	present := func(text string) bool {
		t := strings.ToLower(text)
		for _, l := range in.Current {
			if strings.ToLower(l) == t {
				return true
			}
		}
		return false
	}
	var out []nightly.Edit
	add := func(e nightly.Edit) {
		for _, o := range out {
			if o == e {
				return
			}
		}
		if e.Op == "add" && (present(e.Content) || rejectedBefore(in.Lessons, e.Content)) {
			return
		}
		out = append(out, e)
	}
	slips, commits := 0, false
	for _, f := range in.Failures {
		if strings.Contains(f.Wanted, "<answer>") && !strings.Contains(f.Got, "<answer>") {
			add(nightly.Edit{Op: "add", Content: nightly.HabitWrap, Rationale: "the user wants the answer in <answer> tags"})
			slips |= 1
		}
		if in.Package != nil && strings.Contains(strings.ToLower(f.Got), strings.ToLower(hintNoArxivReference)) {
			// The agent looked for the format in references/, where
			// SKILL.md says it lives: put it there.
			e := nightly.Edit{File: arxivReference, Op: nightly.FileOpCreate, Content: "# arXiv identifiers\n\n- " + nightly.HabitArxivID + "\n",
				Rationale: "SKILL.md keeps citation formats in references/, and the agent found no arXiv format there"}
			for _, pf := range in.Package.Files {
				if pf.Path == arxivReference {
					e.Op, e.Content = nightly.FileOpAppend, "- "+nightly.HabitArxivID
				}
			}
			add(e)
			slips |= 2
			continue
		}
		if strings.Contains(f.Wanted, "regex "+nightly.ConventionalCommit) && !regexp.MustCompile(nightly.ConventionalCommit).MatchString(f.Got) {
			add(nightly.Edit{Op: "add", Content: nightly.HabitConventional, Rationale: "the user wants Conventional Commits"})
			slips |= 2
			commits = true
			continue
		}
		if strings.Contains(f.Wanted, "arXiv:") && !strings.Contains(f.Got, "arXiv:") {
			if strings.Contains(f.Got, "arxiv:") && present(nightly.HabitHarmful) {
				add(nightly.Edit{Op: "delete", Anchor: "lower case", Rationale: "lower-casing breaks the arXiv: prefix"})
			} else {
				add(nightly.Edit{Op: "add", Content: nightly.HabitArxivID, Rationale: "the user wants arXiv:ID, not a URL"})
				slips |= 2
			}
		}
	}
	switch {
	case slips == 3 && commits && !present(nightly.HabitFullStop):
		// The programmer's catch-all: it breaks "no trailing period".
		add(nightly.Edit{Op: "add", Content: nightly.HabitFullStop, Rationale: "answers should read as finished sentences"})
	case slips == 3 && !commits && !present(nightly.HabitHarmful):
		// Two kinds of format slip at once: the tempting catch-all.
		add(nightly.Edit{Op: "add", Content: nightly.HabitHarmful, Rationale: "one consistent format for every answer"})
	}
	if len(out) > in.Budget {
		out = out[:in.Budget]
	}
	if out == nil {
		out = []nightly.Edit{}
	}
	return out
}

// rejectedBefore reports whether the slow memory's lessons say an earlier
// night's gate rejected adding content (not a rollback of a kept edit):
// the sim's reflector then does not propose it again.
func rejectedBefore(lessons []string, content string) bool {
	for _, l := range lessons {
		if strings.Contains(l, fmt.Sprintf("%q: rejected (", content)) && !strings.Contains(l, "rolled back") {
			return true
		}
	}
	return false
}

// sleepAgentTask finds a sleep attempt in an agent CLI's conversation:
// the user text holding the attempt's request (the exec backend's task,
// its instructions and then the request).
func sleepAgentTask(c *Conversation) (string, bool) {
	for _, t := range c.Turns {
		if t.Role == "user" && strings.Contains(t.Text, nightly.PromptMarker+" Request:") {
			return t.Text, true
		}
	}
	return "", false
}

// isSleepSkill reports whether, in a sleep attempt, a listed skill's
// description (lower case) asks to be read first, as the managed skill's
// and the personas' do ("Read it before ...").
func isSleepSkill(c *Conversation, description string) bool {
	_, ok := sleepAgentTask(c)
	return ok && strings.Contains(description, "read it before")
}

// sleepAgentAnswer answers a sleep attempt run by an agent CLI as
// [SleepAware] answers it over the API, under what the agent read: the
// skill it opened (SKILL.md, and the package files it opened) and the
// task's instructions and memory. A skill it did not open counts for
// nothing.
func sleepAgentAnswer(c *Conversation, st *agentState, task string) *AgentReply {
	marker := nightly.PromptMarker + " Request:"
	i := strings.Index(task, marker)
	instructions, request := task[:i], task[i:]
	sys := instructions
	if b, ok := st.packageBundle(); ok {
		sys = nightly.SkillOpen + "\n" + b + "\n" + nightly.SkillClose + "\n" + instructions
	} else if st.skill != "" {
		sys = st.skill + "\n\n" + instructions
	}
	text := sleepAttempt(sys, request)
	if c.MaxTokens > 0 && llm.EstimateTokens(text) > int64(c.MaxTokens) {
		text = text[:min(len(text), c.MaxTokens*4)]
	}
	return &AgentReply{Text: text, Action: "answer", Finish: "stop",
		Usage: llm.Usage{InputTokens: c.InputTokens(), OutputTokens: llm.EstimateTokens(text)}}
}
