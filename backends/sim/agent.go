package sim

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/bench/simbench"
	"github.com/skillfleet/skillfleet/pkg/llm"
	"github.com/skillfleet/skillfleet/pkg/nightly"
	"github.com/skillfleet/skillfleet/pkg/skillpkg"
)

// Conversation is a request of an agent API (the Responses API, the
// Messages API) read into one form: the system text, the turns in order
// and the tools offered.
type Conversation struct {
	Model string
	// System holds the instructions and the system and developer messages.
	System []string
	Turns  []Turn
	Tools  []ToolDef
	// MaxTokens caps the reply (0 = none).
	MaxTokens int
	// Seed is the sample seed, when the API carries one.
	Seed *int64
	// Size is the request's size in bytes, counted by the APIs' decoders
	// as the text of the conversation plus the tool definitions.
	Size int
}

// Turn is one entry of a conversation: a text of a role, an assistant's
// tool call, or a tool's output.
type Turn struct {
	// Role is user, assistant or tool.
	Role string
	Text string
	// Call is an assistant's tool call.
	Call *ToolCall
	// CallID and Output are a tool's result (Role tool).
	CallID string
	Output string
}

// ToolDef is a tool the client offers.
type ToolDef struct {
	Name        string
	Description string
	// Params is the JSON schema of the arguments.
	Params json.RawMessage
}

// ToolCall is a call the model asks the client to run.
type ToolCall struct {
	ID   string
	Name string
	// Args is the JSON object of the arguments.
	Args string
}

// AgentReply is the model's turn: a text, tool calls, or both.
type AgentReply struct {
	Text  string
	Calls []ToolCall
	// Action says what the turn does: "answer", "read_skill", "read_file",
	// "list_skill" (list the skill directory's files), "read_skill_file"
	// (open a file of the skill package) or "chat" (a request without
	// tools).
	Action string
	// Finish is "stop", "tool_calls" or "length".
	Finish string
	Usage  llm.Usage
}

// InputTokens is the sim's prompt token count of a conversation: its
// size, one token per four bytes, rounded up.
func (c *Conversation) InputTokens() int64 { return int64((c.Size + 3) / 4) }

// maxAgentCalls bounds the tool calls of one task: past it the agent
// answers with what it has.
const maxAgentCalls = 6

// Agent answers one turn of an agent CLI's conversation. A conversation
// without tools is an ordinary request (a sim benchmark prompt or an
// optimizer prompt) and gets [Model.Chat]'s reply. With tools, the sim
// acts as a model driving the CLI's tool loop on a sim benchmark task:
//
//   - the task is the sim benchmark's question (the text that ends with
//     the answer instruction) in a user message or in the output of a
//     file read; when no question is visible and a user message names a
//     file (task.md), the agent reads that file with a shell command;
//   - a skill the CLI lists by name and description is opened when its
//     description asks to be read before starting ("... before you
//     start", as skillfleet's default description does): with the CLI's skill tool (Skill) when it has
//     one, else with a shell read of its SKILL.md (Codex lists a path);
//   - when the SKILL.md it read points into its directory (mentions
//     "references/" or "scripts/") and it knows where the skill lives, it
//     lists the skill directory with a shell command (find DIR -type f),
//     then opens, one shell read each, the references/ files (all of
//     them when SKILL.md mentions "references/", else those it names)
//     and the scripts/ files, as the package world's agent does
//     (world_package.go);
//   - then it answers as the sim target does ([Model.Chat] on the sim
//     benchmark prompt) under the skill text it read, so the answer is
//     right only when the loaded skill carries the rules the question
//     needs. No skill read means no skill. When it opened package files,
//     the skill is the package of the files it read (a skillpkg bundle),
//     answered by the package world: a rule counts only in the file the
//     agent opened for it.
//
// One tool call per turn, at most maxAgentCalls per task plus one per
// listed package file (at most maxPackageReads). A request with
// tools but no readable task fails with KindInvalidRequest naming what it
// saw, as the sim does for any request it cannot read.
func (m *Model) Agent(ctx context.Context, c *Conversation) (*AgentReply, error) {
	if len(c.Tools) == 0 {
		return m.plain(ctx, c)
	}
	st := readAgentState(c)
	seed := int64(0)
	if c.Seed != nil {
		seed = *c.Seed
	}
	calls := len(st.calls)
	sleepTask, isSleep := sleepAgentTask(c)
	if !isSleep {
		// A prompt of skillfleet sleep's (miner, reflector, judge) from an
		// agent CLI in chat mode that keeps tools it cannot use (Codex)
		// is answered as a chat.
		if _, ok := sleepChatRequest(c); ok {
			return m.plain(ctx, c)
		}
	}
	if calls < maxAgentCalls+min(len(st.listing), maxPackageReads) {
		if !st.skillRead {
			if sk, ok := st.pickSkill(c); ok {
				if call, ok := openSkillCall(c, sk, calls); ok {
					return m.toolTurn(c, call, "read_skill", "I'll open the "+sk.name+" skill first."), nil
				}
			}
		}
		if st.pointsIntoPackage() {
			if !st.listed {
				if call, ok := listCall(c, st.skillDir, calls); ok {
					return m.toolTurn(c, call, "list_skill", "SKILL.md points to files beside it; listing the skill directory."), nil
				}
			} else if f := st.nextPackageFile(); f != "" {
				if call, ok := shellCall(c, path.Join(st.skillDir, f), calls); ok {
					return m.toolTurn(c, call, "read_skill_file", "Opening "+f+" of the skill."), nil
				}
			}
		}
		if st.question == "" && !isSleep {
			if f := st.unreadTaskFile(); f != "" {
				if call, ok := shellCall(c, f, calls); ok {
					return m.toolTurn(c, call, "read_file", "The task is in "+f+"; reading it."), nil
				}
			}
		}
	}
	if isSleep {
		return sleepAgentAnswer(c, &st, sleepTask), nil
	}
	if st.question == "" {
		last := ""
		for _, t := range c.Turns {
			if t.Role == "tool" {
				last = t.Output
			}
		}
		return nil, &llm.Error{Kind: llm.KindInvalidRequest, Msg: fmt.Sprintf(
			"sim: agent request (%d turns, %d tools): no sim benchmark question (a text ending %q) in a user message or tool output, and no unread task file named (last tool output: %q)",
			len(c.Turns), len(c.Tools), simbench.AnswerInstruction, truncateRunes(last, 200))}
	}
	skill := st.skill
	if b, ok := st.packageBundle(); ok {
		skill = b
	}
	req := &llm.Request{Model: c.Model, Seed: &seed, Messages: []llm.Message{
		{Role: llm.RoleSystem, Content: simbench.SystemPrompt(skill)},
		{Role: llm.RoleUser, Content: simbench.UserPrompt(st.question)},
	}}
	resp, err := m.Chat(ctx, req)
	if err != nil {
		return nil, err
	}
	r := &AgentReply{Text: resp.Content, Action: "answer", Finish: resp.FinishReason}
	if c.MaxTokens > 0 && llm.EstimateTokens(r.Text) > int64(c.MaxTokens) {
		r.Text = strings.ToValidUTF8(r.Text[:min(len(r.Text), c.MaxTokens*4)], "")
		r.Finish = "length"
	}
	r.Usage = llm.Usage{InputTokens: c.InputTokens(), OutputTokens: llm.EstimateTokens(r.Text)}
	return r, nil
}

// plain answers a conversation without tools through Model.Chat; a
// prompt of skillfleet sleep's sent by an agent CLI in chat mode is
// answered as [SleepAware] answers it over the API.
func (m *Model) plain(ctx context.Context, c *Conversation) (*AgentReply, error) {
	if req, ok := sleepChatRequest(c); ok {
		resp, err := NewSleepAware(m).Chat(ctx, req)
		if err != nil {
			return nil, err
		}
		return &AgentReply{Text: resp.Content, Action: "chat", Finish: resp.FinishReason,
			Usage: llm.Usage{InputTokens: c.InputTokens(), OutputTokens: llm.EstimateTokens(resp.Content)}}, nil
	}
	req := &llm.Request{Model: c.Model, Seed: c.Seed, MaxTokens: c.MaxTokens}
	if s := strings.Join(c.System, "\n\n"); s != "" {
		req.Messages = append(req.Messages, llm.Message{Role: llm.RoleSystem, Content: s})
	}
	for _, t := range c.Turns {
		switch {
		case t.Role == "tool":
			req.Messages = append(req.Messages, llm.Message{Role: llm.RoleUser, Content: t.Output})
		case t.Call != nil:
		default:
			req.Messages = append(req.Messages, llm.Message{Role: t.Role, Content: t.Text})
		}
	}
	resp, err := m.Chat(ctx, req)
	if err != nil {
		return nil, err
	}
	return &AgentReply{Text: resp.Content, Action: "chat", Finish: resp.FinishReason,
		Usage: llm.Usage{InputTokens: c.InputTokens(), OutputTokens: llm.EstimateTokens(resp.Content)}}, nil
}

func (m *Model) toolTurn(c *Conversation, call ToolCall, action, text string) *AgentReply {
	return &AgentReply{Text: text, Calls: []ToolCall{call}, Action: action, Finish: "tool_calls",
		Usage: llm.Usage{InputTokens: c.InputTokens(), OutputTokens: llm.EstimateTokens(text + call.Name + call.Args)}}
}

// agentState is what the conversation so far tells the agent.
type agentState struct {
	calls     []ToolCall
	skillRead bool
	skill     string
	question  string
	filesRead []string
	// taskFiles are files the user messages point to.
	taskFiles []string

	// skillDir is the directory of the SKILL.md read ("" = unknown), and
	// skillEntry that SKILL.md's text as read, front matter included.
	skillDir, skillEntry string
	// listed: the skill directory was listed; listing holds its files,
	// package-relative, in the order listed.
	listed  bool
	listing []string
	// pkgFiles are the package files opened, by package-relative path.
	pkgFiles map[string]string
}

// maxPackageReads bounds the package files one task opens (skillpkg's
// default file bound).
const maxPackageReads = 32

var (
	// taskFileRe finds a file the task points to, such as task.md.
	taskFileRe = regexp.MustCompile(`\b([A-Za-z0-9_.-]+\.(?:md|txt))\b`)
	// skillFileRe finds a SKILL.md path in a shell command or a path argument.
	skillFileRe = regexp.MustCompile(`SKILL\.md\b`)
)

func readAgentState(c *Conversation) agentState {
	var st agentState
	byID := map[string]*ToolCall{}
	purpose := map[string]string{} // call id -> "skill", "list", "pkg:<path>" or "file:<name>"
	lastSkillCall := ""
	for i := range c.Turns {
		t := &c.Turns[i]
		switch {
		case t.Call != nil:
			call := *t.Call
			st.calls = append(st.calls, call)
			byID[call.ID] = &call
			switch {
			case isSkillCall(call):
				purpose[call.ID] = "skill"
				lastSkillCall = call.ID
				if f := readTarget(call); f != "" && st.skillDir == "" {
					st.skillDir = path.Dir(f)
				}
			case st.skillDir != "" && listTarget(call) == st.skillDir:
				purpose[call.ID] = "list"
			case st.skillDir != "" && strings.HasPrefix(readTarget(call), st.skillDir+"/"):
				purpose[call.ID] = "pkg:" + strings.TrimPrefix(readTarget(call), st.skillDir+"/")
			default:
				if f := readTarget(call); f != "" {
					purpose[call.ID] = "file:" + path.Base(f)
				}
			}
		case t.Role == "tool":
			p := purpose[t.CallID]
			switch {
			case p == "skill":
				st.skillRead = true
				// Claude Code's Skill tool answers "Launching skill: X"
				// and sends the skill's text in the next user message.
				if !strings.HasPrefix(t.Output, "Launching skill:") {
					st.skill = joinSkill(st.skill, t.Output)
					st.skillEntry = shellOutput(t.Output)
				}
			case p == "list":
				st.listed = true
				st.listing = listedFiles(t.Output, st.skillDir)
			case strings.HasPrefix(p, "pkg:"):
				if st.pkgFiles == nil {
					st.pkgFiles = map[string]string{}
				}
				st.pkgFiles[strings.TrimPrefix(p, "pkg:")] = shellOutput(t.Output)
			case strings.HasPrefix(p, "file:"):
				st.filesRead = append(st.filesRead, strings.TrimPrefix(p, "file:"))
			}
			if q, ok := findQuestion(t.Output); ok {
				st.question = q
			}
		case t.Role == "user":
			// Claude Code sends a loaded skill's text as a user message
			// right after the Skill tool's result.
			if lastSkillCall != "" && i > 0 && c.Turns[i-1].Role == "tool" && c.Turns[i-1].CallID == lastSkillCall && !strings.Contains(t.Text, simbench.AnswerInstruction) {
				text := t.Text
				if rest, ok := strings.CutPrefix(text, "Base directory for this skill:"); ok {
					var dir string
					dir, text, _ = strings.Cut(rest, "\n")
					if dir = strings.TrimSpace(dir); path.IsAbs(dir) {
						st.skillDir = path.Clean(dir)
					}
				}
				st.skill = joinSkill(st.skill, text)
				st.skillEntry = strings.TrimSpace(text) + "\n"
				continue
			}
			if q, ok := findQuestion(t.Text); ok {
				st.question = q
			}
			for _, m := range taskFileRe.FindAllStringSubmatch(t.Text, -1) {
				if name := m[1]; !strings.EqualFold(name, "SKILL.md") && !strings.EqualFold(name, "AGENTS.md") && !strings.EqualFold(name, "CLAUDE.md") && !slices.Contains(st.taskFiles, name) {
					st.taskFiles = append(st.taskFiles, name)
				}
			}
		}
	}
	return st
}

// joinSkill adds a skill text read by a tool to what was read before. A
// shell's header before the skill's front matter (Codex prints "Chunk
// ID: ... Output:") is dropped, and so is the front matter.
func joinSkill(have, more string) string {
	if i := strings.Index(more, "---\nname:"); i > 0 {
		more = more[i:]
	}
	more = stripFrontMatter(strings.TrimSpace(more))
	if have == "" {
		return more
	}
	return have + "\n\n" + more
}

// stripFrontMatter drops a leading "---" ... "---" block.
func stripFrontMatter(s string) string {
	rest, ok := strings.CutPrefix(s, "---\n")
	if !ok {
		return s
	}
	if _, after, ok := strings.Cut(rest, "\n---"); ok {
		return strings.TrimSpace(after)
	}
	return s
}

// findQuestion returns the sim benchmark question in a text: the
// paragraph before the answer instruction.
func findQuestion(text string) (string, bool) {
	at := strings.LastIndex(text, simbench.AnswerInstruction)
	if at < 0 {
		return "", false
	}
	before := strings.TrimSpace(text[:at])
	if i := strings.LastIndex(before, "\n\n"); i >= 0 {
		before = strings.TrimSpace(before[i+2:])
	}
	if _, ok := simbench.BaseValue(before); !ok {
		return "", false
	}
	return before, true
}

// shellOutput is the text a shell read printed: Codex puts a header
// ("Chunk ID: ...", "Output:") before it, which is dropped.
func shellOutput(out string) string {
	if strings.HasPrefix(out, "Chunk ID:") {
		if _, body, ok := strings.Cut(out, "\nOutput:\n"); ok {
			return body
		}
	}
	return out
}

// listedFiles reads a listing of dir (one path a line, as find prints it)
// into package-relative paths: SKILL.md and hidden names are left out.
func listedFiles(out, dir string) []string {
	var files []string
	for _, line := range strings.Split(shellOutput(out), "\n") {
		rel, ok := strings.CutPrefix(strings.TrimSpace(line), dir+"/")
		if !ok || rel == skillpkg.EntryFile || skillpkg.CheckPath(rel) != nil || slices.Contains(files, rel) {
			continue
		}
		files = append(files, rel)
	}
	return files
}

// pointsIntoPackage reports whether the SKILL.md read points to files
// beside it, in a directory the agent knows.
func (st *agentState) pointsIntoPackage() bool {
	if !st.skillRead || st.skillDir == "" {
		return false
	}
	return strings.Contains(st.skillEntry, "references/") || strings.Contains(st.skillEntry, "scripts/")
}

// nextPackageFile returns the listed package file the agent opens next:
// a references/ file when SKILL.md mentions references/ or names it, a
// scripts/ file always; "" when it has opened them all.
func (st *agentState) nextPackageFile() string {
	pointed := strings.Contains(st.skillEntry, "references/")
	for _, f := range st.listing {
		if _, ok := st.pkgFiles[f]; ok {
			continue
		}
		switch {
		case strings.HasPrefix(f, "references/") && (pointed || strings.Contains(st.skillEntry, f)):
			return f
		case strings.HasPrefix(f, "scripts/"):
			return f
		}
	}
	return ""
}

// packageBundle is the package of the files the agent read (SKILL.md and
// the files it opened) as a bundle; false when it opened none.
func (st *agentState) packageBundle() (string, bool) {
	if len(st.pkgFiles) == 0 || st.skillEntry == "" {
		return "", false
	}
	files := map[string]string{skillpkg.EntryFile: st.skillEntry}
	for name, text := range st.pkgFiles {
		files[name] = text
	}
	p, err := skillpkg.New(files, skillpkg.Limits{})
	if err != nil || p.SingleFile() {
		return "", false
	}
	return skillpkg.Encode(p), true
}

func (st *agentState) unreadTaskFile() string {
	for _, f := range st.taskFiles {
		if !slices.Contains(st.filesRead, f) {
			return f
		}
	}
	return ""
}

// listedSkill is a skill the CLI lists.
type listedSkill struct {
	name, description string
	// file is the SKILL.md path when the listing gives one.
	file string
}

var (
	// Codex: "- name: description (file: r1/name/SKILL.md)" with a roots
	// table "- `r1` = `/abs/path`".
	codexSkillRe = regexp.MustCompile(`(?m)^- ([A-Za-z0-9_.:-]+): (.*) \(file: ([^)]+)\)$`)
	codexRootRe  = regexp.MustCompile("(?m)^- `([A-Za-z0-9_]+)` = `([^`]+)`$")
	// Claude Code: "The following skills are available for use with the
	// Skill tool:" then "- name: description" lines.
	claudeListRe  = regexp.MustCompile(`(?s)skills are available for use with the Skill tool:\s*\n(.*)`)
	claudeSkillRe = regexp.MustCompile(`(?m)^- ([A-Za-z0-9_.:/-]+): (.*)$`)
	// pi, the Copilot CLI and opencode: an <available_skills> block of
	// <skill> entries with a name, a description and a location (a
	// SKILL.md path, or a word such as "project").
	xmlSkillRe = regexp.MustCompile(`<skill>\s*<name>([^<]+)</name>\s*<description>([^<]*)</description>\s*(?:<location>([^<]*)</location>\s*)?</skill>`)
)

// listedSkills reads the skill listings of the system text and messages.
func listedSkills(c *Conversation) []listedSkill {
	var out []listedSkill
	texts := slices.Clone(c.System)
	for _, t := range c.Turns {
		if t.Role != "tool" && t.Call == nil {
			texts = append(texts, t.Text)
		}
	}
	for _, tool := range c.Tools {
		texts = append(texts, tool.Description)
	}
	seen := map[string]bool{}
	for _, text := range texts {
		roots := map[string]string{}
		for _, m := range codexRootRe.FindAllStringSubmatch(text, -1) {
			roots[m[1]] = m[2]
		}
		for _, m := range codexSkillRe.FindAllStringSubmatch(text, -1) {
			file := m[3]
			if root, rest, ok := strings.Cut(file, "/"); ok && roots[root] != "" {
				file = path.Join(roots[root], rest)
			}
			if !seen[m[1]] {
				seen[m[1]] = true
				out = append(out, listedSkill{name: m[1], description: m[2], file: file})
			}
		}
		for _, m := range xmlSkillRe.FindAllStringSubmatch(text, -1) {
			file := strings.TrimSpace(m[3])
			if !path.IsAbs(file) {
				file = ""
			}
			if name := strings.TrimSpace(m[1]); !seen[name] {
				seen[name] = true
				out = append(out, listedSkill{name: name, description: strings.TrimSpace(m[2]), file: file})
			}
		}
		if lm := claudeListRe.FindStringSubmatch(text); lm != nil {
			block := lm[1]
			if end := strings.Index(block, "\n\n"); end >= 0 {
				block = block[:end]
			}
			for _, m := range claudeSkillRe.FindAllStringSubmatch(block, -1) {
				if !seen[m[1]] {
					seen[m[1]] = true
					out = append(out, listedSkill{name: m[1], description: m[2]})
				}
			}
		}
	}
	return out
}

// pickSkill returns the listed skill the task calls for, if any.
func (st *agentState) pickSkill(c *Conversation) (listedSkill, bool) {
	for _, sk := range listedSkills(c) {
		d := strings.ToLower(sk.description)
		if strings.Contains(d, "before you start") || isSleepSkill(c, d) {
			return sk, true
		}
	}
	return listedSkill{}, false
}

// isSkillCall reports whether a call loads a skill: the skill tool, or a
// read of a SKILL.md.
func isSkillCall(call ToolCall) bool {
	if call.Name == "Skill" || call.Name == "skill" {
		return true
	}
	return skillFileRe.MatchString(readTarget(call))
}

// readTarget returns the file a shell or read call reads ("" if none).
func readTarget(call ToolCall) string {
	var args map[string]any
	if json.Unmarshal([]byte(call.Args), &args) != nil {
		return ""
	}
	for _, k := range []string{"file_path", "filePath", "path"} {
		if s, ok := args[k].(string); ok {
			return s
		}
	}
	cmd := shellCommand(args)
	if f, ok := strings.CutPrefix(strings.TrimSpace(cmd), "cat "); ok {
		return strings.Trim(strings.TrimSpace(f), `'"`)
	}
	return ""
}

// listTarget returns the directory a listing call lists ("" if none): the
// find command listCall sends.
func listTarget(call ToolCall) string {
	var args map[string]any
	if json.Unmarshal([]byte(call.Args), &args) != nil {
		return ""
	}
	cmd := shellCommand(args)
	dir, ok := strings.CutPrefix(strings.TrimSpace(cmd), "find ")
	if !ok {
		return ""
	}
	dir, ok = strings.CutSuffix(dir, " -type f")
	if !ok {
		return ""
	}
	return strings.Trim(strings.TrimSpace(dir), `'"`)
}

// listCall is a shell command that lists the files under dir.
func listCall(c *Conversation, dir string, n int) (ToolCall, bool) {
	return shellCommandCall(c, "find "+shellQuote(dir)+" -type f", "List the skill's files", n)
}

// shellCommand is the command line a shell call's arguments carry: "cmd"
// or "command", a string or an argv whose last element is the script (as
// in ["bash", "-lc", "cat f"]); "" when there is none.
func shellCommand(args map[string]any) string {
	switch v := firstOf(args, "cmd", "command").(type) {
	case string:
		return v
	case []any:
		if len(v) > 0 {
			cmd, _ := v[len(v)-1].(string)
			return cmd
		}
	}
	return ""
}

func firstOf(m map[string]any, keys ...string) any {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return v
		}
	}
	return nil
}

// openSkillCall is the call that loads sk: the Skill tool when the CLI has
// one, else a shell read of its file.
func openSkillCall(c *Conversation, sk listedSkill, n int) (ToolCall, bool) {
	// A listing that gives the file's path (Codex, pi, opencode) is read
	// with the shell; one that names the skill alone (Claude Code, the
	// Copilot CLI) is loaded with the skill tool.
	if sk.file != "" {
		if call, ok := shellCall(c, sk.file, n); ok {
			return call, true
		}
	}
	for _, name := range []string{"Skill", "skill"} {
		td, ok := findTool(c, name)
		if !ok {
			continue
		}
		// Claude Code and the Copilot CLI name the skill "skill",
		// opencode "name".
		for _, param := range []string{"skill", "name"} {
			if schemaHas(td, param) {
				return ToolCall{ID: callID(c, n), Name: name, Args: mustJSON(map[string]string{param: sk.name})}, true
			}
		}
	}
	if sk.file == "" {
		return ToolCall{}, false
	}
	return shellCall(c, sk.file, n)
}

// shellCall is a shell command (or a file read tool) that prints file.
func shellCall(c *Conversation, file string, n int) (ToolCall, bool) {
	return shellCommandCall(c, "cat "+shellQuote(file), "Print "+path.Base(file), n)
}

// shellCommandCall runs cmd with the CLI's shell tool.
func shellCommandCall(c *Conversation, cmd, description string, n int) (ToolCall, bool) {
	for _, td := range c.Tools {
		switch {
		case td.Name == "exec_command" && schemaHas(td, "cmd"):
			return ToolCall{ID: callID(c, n), Name: td.Name, Args: mustJSON(map[string]any{"cmd": cmd})}, true
		case (td.Name == "shell" || td.Name == "local_shell") && schemaHas(td, "command"):
			return ToolCall{ID: callID(c, n), Name: td.Name, Args: mustJSON(map[string]any{"command": []string{"bash", "-lc", cmd}})}, true
		case (td.Name == "Bash" || td.Name == "shell_command" || td.Name == "bash") && schemaHas(td, "command"):
			args := map[string]any{"command": cmd, "description": description}
			// The Copilot CLI's bash tool wants the wait of a sync command.
			if schemaHas(td, "initial_wait") {
				args["initial_wait"] = 30
			}
			return ToolCall{ID: callID(c, n), Name: td.Name, Args: mustJSON(args)}, true
		}
	}
	return ToolCall{}, false
}

func findTool(c *Conversation, name string) (ToolDef, bool) {
	for _, td := range c.Tools {
		if td.Name == name {
			return td, true
		}
	}
	return ToolDef{}, false
}

// schemaHas reports whether a tool's parameter schema has a property.
func schemaHas(td ToolDef, prop string) bool {
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(td.Params, &s) != nil {
		return false
	}
	_, ok := s.Properties[prop]
	return ok
}

// callID is a reproducible call id: the conversation's turn count and the
// call's number.
func callID(c *Conversation, n int) string {
	return fmt.Sprintf("call_sim_%d_%d", len(c.Turns), n+1)
}

func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("/._-", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

func mustJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// sleepChatRequest recovers the request a chat role of skillfleet sleep
// (its miner, reflector or judge) made, when an agent CLI in chat mode
// carries it: the CLI's own instructions as the system, and the whole
// request as one user prompt — the request's system text, then each
// message after a "---" line, one of a role other than user headed by its
// role in brackets (backends/exec's chat prompt). It reports false for
// any other conversation.
func sleepChatRequest(c *Conversation) (*llm.Request, bool) {
	// The first user text holding the marker: an agent CLI may send its
	// own context (Codex's environment) as a user message before it.
	var prompt string
	for _, t := range c.Turns {
		if t.Role == llm.RoleUser && strings.Contains(t.Text, nightly.PromptMarker) {
			prompt = t.Text
			break
		}
	}
	i := strings.Index(prompt, nightly.PromptMarker)
	if i < 0 {
		return nil, false
	}
	parts := strings.Split(strings.TrimSpace(prompt[i:]), "\n\n---\n\n")
	req := &llm.Request{Model: c.Model, Seed: c.Seed, MaxTokens: c.MaxTokens,
		Messages: []llm.Message{{Role: llm.RoleSystem, Content: parts[0]}}}
	for _, p := range parts[1:] {
		role := llm.RoleUser
		if r, rest, ok := strings.Cut(p, "\n"); ok && strings.HasPrefix(r, "[") && strings.HasSuffix(r, "]") {
			role, p = strings.Trim(r, "[]"), rest
		}
		req.Messages = append(req.Messages, llm.Message{Role: role, Content: p})
	}
	return req, true
}
