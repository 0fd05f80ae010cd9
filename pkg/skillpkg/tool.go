package skillpkg

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/skillfleet/skillfleet/pkg/llm"
)

// A target reached over an API (not an agent CLI) is given a skill as text
// in its prompt. A package is inlined whole by default, as its bundle.
// [WithReadTool] instead gives the target SKILL.md, the list of the other
// files, and a read_skill_file tool that returns a file's text: the target
// opens the files it needs, as an agent opens a skill directory's files,
// and the reply records which it opened.

// ReadFileTool is the name of the tool that reads a package file.
const ReadFileTool = "read_skill_file"

// ToolListHeader introduces the list of a package's other files after
// SKILL.md in a prompt given the read tool; each file follows on a line
// "- <path> (<n> lines)".
const ToolListHeader = "This skill is a package: besides SKILL.md above, it holds the files listed here. Open one with the " +
	ReadFileTool + " tool (argument path, relative to the skill) when SKILL.md points to it or the task needs it:"

// OpenedNote opens a reply of a target that opened package files: the
// files, in the order opened, follow on the same line and a blank line
// separates the note from the reply (the exec backend's note for agent
// CLIs has the same form).
const OpenedNote = "[skill files the agent opened:"

// maxToolRounds bounds the tool round trips of one call; past it the last
// reply is returned as it is.
const maxToolRounds = 8

var readFileParams = json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"the file's path relative to the skill, such as references/units.md"}},"required":["path"],"additionalProperties":false}`)

// WithReadTool returns a model that gives next a request's skill package
// through the read_skill_file tool instead of inline. It applies to a
// request that offers no tools of its own and whose system text holds a
// multi-file bundle, between a "<skill>" line and a "</skill>" line or
// from the bundle's header to the end of the message: the bundle is
// replaced by SKILL.md and the list of the other files, the tool is
// offered, and the model's read_skill_file calls are answered with the
// files' text until it replies without one (at most maxToolRounds
// rounds). The reply is led by [OpenedNote] naming SKILL.md and the files
// opened; usage and failed attempts add up over the rounds. Any other
// request goes to next unchanged.
func WithReadTool(next llm.Model) llm.Model { return &readTool{next: next} }

type readTool struct{ next llm.Model }

func (t *readTool) Chat(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	if len(req.Tools) > 0 {
		return t.next.Chat(ctx, req)
	}
	p, msgs, ok := withFileList(req.Messages)
	if !ok {
		return t.next.Chat(ctx, req)
	}
	r := *req
	r.Messages = msgs
	r.Tools = []llm.Tool{{Name: ReadFileTool, Description: "Return the text of a file of the skill package.", Parameters: readFileParams}}
	var (
		total  llm.Response
		opened []string
	)
	for round := 0; ; round++ {
		resp, err := t.next.Chat(ctx, &r)
		if err != nil {
			if round > 0 {
				return nil, &llm.BilledError{Usage: total.Usage, Err: err}
			}
			return nil, err
		}
		total.Usage.Add(resp.Usage)
		total.FailedUsage.Add(resp.FailedUsage)
		total.RateLimited += resp.RateLimited
		total.Attempts += max(resp.Attempts, 1) - 1
		for cause, n := range resp.FailedCauses {
			if total.FailedCauses == nil {
				total.FailedCauses = map[string]int{}
			}
			total.FailedCauses[cause] += n
		}
		var reads []llm.ToolCall
		for _, c := range resp.ToolCalls {
			if c.Name == ReadFileTool {
				reads = append(reads, c)
			}
		}
		if len(reads) == 0 || len(reads) != len(resp.ToolCalls) || round+1 >= maxToolRounds {
			out := *resp
			out.Usage, out.FailedUsage, out.RateLimited, out.FailedCauses = total.Usage, total.FailedUsage, total.RateLimited, total.FailedCauses
			out.Attempts = total.Attempts + max(resp.Attempts, 1)
			out.Content = OpenedNote + " " + strings.Join(append([]string{EntryFile}, opened...), ", ") + "]\n\n" + resp.Content
			return &out, nil
		}
		r.Messages = append(r.Messages, llm.Message{Role: llm.RoleAssistant, Content: resp.Content, ToolCalls: resp.ToolCalls})
		for _, c := range reads {
			text, name := readCall(p, c.Arguments)
			if name != "" && name != EntryFile && !contains(opened, name) {
				opened = append(opened, name)
			}
			r.Messages = append(r.Messages, llm.Message{Role: llm.RoleTool, ToolCallID: c.ID, Name: ReadFileTool, Content: text})
		}
	}
}

// readCall answers one read_skill_file call: the file's text and its path,
// or an error text (and "") for a path the package lacks.
func readCall(p *Package, args string) (string, string) {
	var a struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal([]byte(args), &a); err != nil || a.Path == "" {
		return fmt.Sprintf("error: %s takes {\"path\": \"<file>\"}; got %q", ReadFileTool, args), ""
	}
	name := strings.TrimPrefix(strings.TrimSpace(a.Path), "./")
	text, ok := p.File(name)
	if !ok {
		return fmt.Sprintf("error: the skill package has no file %q; its files: %s", name, strings.Join(p.Paths(), ", ")), ""
	}
	return text, name
}

// withFileList finds a multi-file bundle in the system messages and
// returns the package and the messages with the bundle replaced by
// SKILL.md and the file list.
func withFileList(msgs []llm.Message) (*Package, []llm.Message, bool) {
	for i, m := range msgs {
		if m.Role != llm.RoleSystem || len(m.Parts) > 0 {
			continue
		}
		text := m.Content
		start := strings.Index(text, bundleHeader)
		if start < 0 {
			continue
		}
		end := len(text)
		if j := strings.LastIndex(text, "\n</skill>"); j > start {
			end = j
		}
		bundle := text[start:end]
		p, err := Decode(bundle)
		if err != nil {
			if p, err = Decode(strings.TrimRight(bundle, "\n")); err != nil {
				continue
			}
		}
		if p.SingleFile() {
			continue
		}
		out := append([]llm.Message(nil), msgs...)
		out[i].Content = text[:start] + FileListText(p) + text[end:]
		return p, out, true
	}
	return nil, nil, false
}

// FileListText is what a target given the read tool sees of p: SKILL.md,
// then [ToolListHeader] and one line per other file.
func FileListText(p *Package) string {
	var b strings.Builder
	b.WriteString(strings.TrimRight(p.Entry(), "\n"))
	b.WriteString("\n\n" + ToolListHeader + "\n")
	for _, name := range p.Paths() {
		if name == EntryFile {
			continue
		}
		fmt.Fprintf(&b, "- %s (%d lines)\n", name, len(lines(p.files[name])))
	}
	return strings.TrimRight(b.String(), "\n")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// String names the wrapped model.
func (t *readTool) String() string {
	if s, ok := t.next.(fmt.Stringer); ok {
		return s.String() + "+" + ReadFileTool
	}
	return ReadFileTool
}
